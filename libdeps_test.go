package vesta_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A program pays for what it uses: the programs of testdata/libdeps (one
// main.go, a file per way of making the issuer, picked by build tag), as a
// user would write them, link only what their configuration needs. Each
// goal is checked on what `go list -deps` lists, so that a new import that
// drags a client library into the library's packages fails here, naming
// the chain.

// heavy are the modules only the leasing providers and the Prometheus
// adapter may bring: a program on a fixed machine ID links none.
var heavy = []string{
	"google.golang.org/grpc",
	"go.etcd.io/etcd",
	"github.com/redis/go-redis",
	"go.uber.org/zap",
	"google.golang.org/protobuf",
	"github.com/golang/protobuf",
	"github.com/prometheus",
}

// maxFixedDeps bounds the non-standard packages of a program on a fixed
// machine ID, the program's own main package left out.
const maxFixedDeps = 15

// maxEmbedBytes bounds the size of testdata/libdeps built with no tag (the
// embed program) with a plain go build (not stripped), as a new user
// builds it.
const maxEmbedBytes = 5_000_000

type pkg struct {
	ImportPath string
	Standard   bool
	Module     *struct{ Path string }
	Imports    []string
}

// deps lists what program (a build tag of testdata/libdeps; "embed" is the
// program with no tag) links that is not of the standard library, the
// program's own package left out.
func deps(t *testing.T, program string) map[string]pkg {
	t.Helper()
	tag := program
	if program == "embed" {
		tag = ""
	}
	cmd := exec.Command("go", "list", "-deps", "-tags", tag, "-f",
		`{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}|{{join .Imports " "}}{{end}}`,
		"./testdata/libdeps")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", program, err, stderr(err))
	}
	got := map[string]pkg{}
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		head, imports, _ := strings.Cut(line, "|")
		path, module, _ := strings.Cut(head, " ")
		if strings.HasPrefix(path, "github.com/vesta-go/vesta/testdata/") {
			continue
		}
		p := pkg{ImportPath: path, Imports: strings.Fields(imports)}
		if module != "" {
			p.Module = &struct{ Path string }{module}
		}
		got[path] = p
	}
	return got
}

func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// isHeavy names the heavy module path belongs to, if any.
func isHeavy(path string) string {
	for _, h := range heavy {
		if path == h || strings.HasPrefix(path, h+"/") {
			return h
		}
	}
	return ""
}

// heavyOf maps each heavy module ps links, those allowed left out, to the
// first of its packages.
func heavyOf(ps map[string]pkg, allowed []string) map[string]string {
	out := map[string]string{}
	for _, path := range slices.Sorted(mapKeys(ps)) {
		if h := isHeavy(path); h != "" && !slices.Contains(allowed, h) {
			if _, ok := out[h]; !ok {
				out[h] = path
			}
		}
	}
	return out
}

// chain is one way the program's packages reach path, for a failure's
// message: "github.com/vesta-go/vesta/embed -> ... -> path".
func chain(ps map[string]pkg, path string) string {
	by := map[string]string{} // imported -> an importer
	for _, p := range slices.Sorted(mapKeys(ps)) {
		for _, imp := range ps[p].Imports {
			if _, ok := by[imp]; !ok {
				by[imp] = p
			}
		}
	}
	out := []string{path}
	for at, n := path, 0; n < 20; n++ {
		from, ok := by[at]
		if !ok {
			break
		}
		out = append(out, from)
		at = from
	}
	slices.Reverse(out)
	return strings.Join(out, " -> ")
}

func modules(ps map[string]pkg) []string {
	var out []string
	for _, p := range ps {
		if p.Module != nil && !slices.Contains(out, p.Module.Path) {
			out = append(out, p.Module.Path)
		}
	}
	slices.Sort(out)
	return out
}

// TestLibraryDeps: embed and client on a fixed machine ID link no client
// library of a store, no Prometheus client and few packages; a lease adds
// its store's client alone.
func TestLibraryDeps(t *testing.T) {
	fixed := map[string]map[string]pkg{}
	for _, program := range []string{"embed", "client"} {
		ps := deps(t, program)
		fixed[program] = ps
		for h, path := range heavyOf(ps, nil) {
			t.Errorf("%s on a fixed machine ID links %s: %s", program, h, chain(ps, path))
		}
		if len(ps) > maxFixedDeps {
			t.Errorf("%s on a fixed machine ID links %d non-standard packages; want at most %d: %s",
				program, len(ps), maxFixedDeps, strings.Join(slices.Sorted(mapKeys(ps)), " "))
		}
		t.Logf("%s: %d non-standard packages, modules %v", program, len(ps), modules(ps))
	}

	for _, tc := range []struct {
		program string
		wants   string   // the module the program must add
		allowed []string // heavy modules it may add
	}{
		{"redis", "github.com/redis/go-redis/v9", []string{"github.com/redis/go-redis"}},
		{"etcd", "go.etcd.io/etcd/client/v3", []string{"go.etcd.io/etcd", "google.golang.org/grpc", "google.golang.org/protobuf", "github.com/golang/protobuf", "go.uber.org/zap"}},
		{"prom", "github.com/prometheus/client_golang", []string{"github.com/prometheus", "google.golang.org/protobuf"}},
	} {
		ps := deps(t, tc.program)
		var added []string
		for path := range ps {
			if _, ok := fixed["embed"][path]; !ok {
				added = append(added, path)
			}
		}
		for h, path := range heavyOf(ps, tc.allowed) {
			t.Errorf("%s links %s: %s", tc.program, h, chain(ps, path))
		}
		if !slices.Contains(modules(ps), tc.wants) {
			t.Errorf("%s does not link %s", tc.program, tc.wants)
		}
		t.Logf("%s: %d non-standard packages, %d beside embed's; modules %v", tc.program, len(ps), len(added), modules(ps))
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestEmbedProgramSize: the first program a user writes builds, with a
// plain go build (symbols and DWARF kept, as go build leaves them), to at
// most maxEmbedBytes.
func TestEmbedProgramSize(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "embed")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/libdeps")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxEmbedBytes {
		t.Errorf("testdata/libdeps (no tag) is %d bytes built; want at most %d", fi.Size(), maxEmbedBytes)
	}
	t.Logf("testdata/libdeps (no tag): %d bytes (go build, not stripped)", fi.Size())
}
