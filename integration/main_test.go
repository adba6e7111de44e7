package integration_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// binDir holds the vesta binary of this test run; it is removed at the end.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vesta-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	killStragglers()
	os.RemoveAll(dir)
	if code == 0 {
		// Every client, issuer, Redis connection and HTTP transport of the
		// tests is closed by then; nothing may be left running.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// binEnv names a prebuilt vesta binary to test instead of building one
// (a release build, say). Unset, the tests build the module's own.
const binEnv = "INTEGRATION_VESTA_BIN"

// vestaBinary returns the path of the vesta binary, building it on the
// first call of the run: `go build [-race] ./cmd/vesta`. With -race, a data
// race in a server prints a report on its stderr, which fails the test
// (see proc.check), and makes the process exit 66.
func vestaBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if bin := os.Getenv(binEnv); bin != "" {
			buildPath = bin
			return
		}
		goTool, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
		if err != nil {
			buildErr = fmt.Errorf("the go command is not on PATH: %w", err)
			return
		}
		out := filepath.Join(binDir, "vesta")
		args := []string{"build", "-o", out}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/vesta-go/vesta/cmd/vesta")
		cmd := exec.Command(goTool, args...)
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go %v: %w\n%s", args, err, b)
			return
		}
		buildPath = out
	})
	if buildErr != nil {
		t.Fatalf("building vesta: %v", buildErr)
	}
	return buildPath
}
