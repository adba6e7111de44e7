package peers_test

import (
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgramSizes measures what each generator costs the program that
// embeds it, as a new user sees it: the first program of each (print one
// ID), in a module of its own that requires the library (vesta through a
// replace of this checkout), after go mod tidy, built with a plain go
// build and stripped. It prints the table of BENCHMARKS.md ("What a
// program links"):
//
//	cd tools/peerbench && go test -run TestProgramSizes -v
//
// go mod tidy may fetch a module that only a dependency's tests import
// (through GOPROXY; checksums are not looked up: GOSUMDB=off). The goals
// themselves are the main module's libdeps_test.go; this puts them beside
// the peers.
func TestProgramSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds seven programs: a measurement, not a check")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	version := func(mod string) string {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", mod).Output()
		if err != nil {
			t.Fatalf("go list -m %s: %v", mod, err)
		}
		return strings.TrimSpace(string(out))
	}
	vesta := "require github.com/vesta-go/vesta v0.0.0\n\nreplace github.com/vesta-go/vesta => " + root + "\n"
	// A program is the Go files of dir that its build tag picks:
	// testdata/libdeps's main.go and the files of one way of making an
	// issuer, or a peer's main.go.
	libdeps := filepath.Join(root, "testdata/libdeps")
	programs := []struct{ name, dir, tag, requires string }{
		{"vesta embed, static machine ID", libdeps, "", vesta},
		{"vesta client, static fallback", libdeps, "client", vesta},
		{"vesta embed, Redis lease", libdeps, "redis", vesta},
		{"vesta embed, etcd lease", libdeps, "etcd", vesta},
		{"vesta embed, static ID, Prometheus metrics", libdeps, "prom", vesta},
		{"bwmarrin/snowflake", "testdata/bwmarrin", "", "require github.com/bwmarrin/snowflake " + version("github.com/bwmarrin/snowflake") + "\n"},
		{"sony/sonyflake v2", "testdata/sonyflake", "", "require github.com/sony/sonyflake/v2 " + version("github.com/sony/sonyflake/v2") + "\n"},
	}
	var table strings.Builder
	table.WriteString("| program | go build | stripped (-ldflags=\"-s -w\") | non-standard packages | go.sum lines |\n|---|--:|--:|--:|--:|\n")
	for _, p := range programs {
		dir := t.TempDir()
		copyProgram(t, p.dir, p.tag, dir)
		write(t, filepath.Join(dir, "go.mod"), "module example\n\ngo 1.26.0\n\n"+p.requires)
		run := func(args ...string) string {
			if args[0] != "mod" {
				args = append([]string{args[0], "-tags", p.tag}, args[1:]...)
			}
			cmd := exec.Command("go", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOSUMDB=off", "GOWORK=off")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: go %s: %v\n%s", p.name, strings.Join(args, " "), err, stderrOf(err))
			}
			return string(out)
		}
		run("mod", "tidy")
		sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		deps := strings.Fields(run("list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "."))
		run("build", "-o", "plain", ".")
		run("build", "-ldflags=-s -w", "-o", "stripped", ".")
		fmt.Fprintf(&table, "| %s | %s | %s | %d | %d |\n", p.name, mb(t, filepath.Join(dir, "plain")), mb(t, filepath.Join(dir, "stripped")),
			len(deps)-1, strings.Count(string(sum), "\n"))
	}
	t.Log("\n" + table.String())
}

// copyProgram copies the Go files of src that tag's build picks into dst,
// so that the module there sees only what the program is made of.
func copyProgram(t *testing.T, src, tag, dst string) {
	t.Helper()
	bctx := build.Default
	bctx.BuildTags = []string{tag}
	files, err := filepath.Glob(filepath.Join(src, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", src, err)
	}
	for _, f := range files {
		if ok, err := bctx.MatchFile(src, filepath.Base(f)); err != nil {
			t.Fatal(err)
		} else if !ok {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dst, filepath.Base(f)), string(b))
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mb(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6)
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
