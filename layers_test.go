package vesta_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// module is this module's import path.
const module = "github.com/vesta-go/vesta"

// internalMay is what the small libraries under internal/ may import of
// this module: core, latency and one another. The wiring of `vesta serve`
// (cmd/vesta/assemble) sits above the packages it wires; a library of
// internal/ that imported conf, a server or the client would be wiring
// again, below the packages that use it.
var internalMay = []string{module + "/core", module + "/latency", module + "/internal/"}

// Layers that show: internal/ holds small libraries (and the test kit),
// never the wiring.
func TestInternalHoldsLibraries(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}`, "./internal/...")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./internal/...: %v\n%s", err, stderr(err))
	}
	n := 0
	for line := range strings.Lines(string(out)) {
		path, imports, _ := strings.Cut(strings.TrimSpace(line), "|")
		if path == "" || strings.HasPrefix(path, module+"/internal/testkit") {
			continue
		}
		n++
	imports:
		for imp := range strings.FieldsSeq(imports) {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			for _, ok := range internalMay {
				if imp == ok || strings.HasSuffix(ok, "/") && strings.HasPrefix(imp, ok) {
					continue imports
				}
			}
			t.Errorf("%s imports %s; a library of internal/ imports only %v (wiring lives in cmd/vesta/assemble)", path, imp, internalMay)
		}
	}
	if n == 0 {
		t.Fatal("go list ./internal/... listed no library")
	}
}

// Test hooks live behind the build tag only: every file of the module
// (tests aside) that names the nemesis build's variable is built with the
// nemesis tag, so the default build neither reads nor knows it.
func TestHooksBehindTag(t *testing.T) {
	var found int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Other modules (nemesis/, tools/) and test data are not the product.
			if path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || exists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		if !strings.Contains(src, "VESTA_NEMESIS") && !strings.Contains(src, "EnvNemesis") {
			return nil
		}
		found++
		if first, _, _ := strings.Cut(src, "\n"); first != "//go:build nemesis" {
			t.Errorf("%s names the nemesis hook but is built without the tag (first line %q; want //go:build nemesis)", path, first)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("no file names the nemesis hook: the walk looks in the wrong place")
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
