package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/proctest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
)

// TestREADMEQuickStarts runs the README from top to bottom as a reader
// would, every code block in turn, and compares each output with the one
// shown:
//
//   - sh blocks: each command runs in bash, in one working directory, with
//     `vesta` on PATH (this test binary running main, as `make build`
//     would put it there); `make run` and every plain `vesta serve` line
//     start that server as a process (the one before is stopped);
//     transcripts (`$ cmd` and its output) are compared by matchOutput.
//     A `vesta serve` line may start with VAR=value words (a key file's
//     variable), which the server is started with.
//   - go blocks are programs: each is saved as main.go of a module of its
//     own, in a workspace with this checkout (instead of the README's `go
//     get`, as the module is this checkout), and `go run .` runs the last
//     one shown. They must be gofmt'ed.
//   - the python block is saved as the file `python3 FILE` names and run
//     with Debian's /usr/bin/python3 (python3-msgpack); the js block as the
//     file `node FILE` names, beside the README's `npm install`.
//   - a yaml block is saved as the file the line above it names ("Save
//     as `FILE`:").
//
// The README names the addresses `make run` serves, 127.0.0.1:7070 (RPC)
// and 127.0.0.1:7080 (REST), and a Redis on 127.0.0.1:6379; the test
// binds free ports only, so it puts the addresses of its own servers and
// of its own Redis in their place, in commands, programs and outputs
// alike. `<!-- readme_test: stop the server -->` above a block stops the
// server (the README says to stop `make run`), `start make run` starts it
// again. Skipped lines, each said below: `make test` (CI itself), `make
// build` and `export PATH` (the test's PATH has vesta), `go get` and `go
// install` (the module is this checkout).
func TestREADMEQuickStarts(t *testing.T) {
	testkit.SkipShort(t, "go, curl, redis-server, Debian's python3-msgpack, node and npm (the README's programs)")
	files := repoFiles(t, "README.md", "Makefile")
	readme, makefile := files[0], files[1]
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range os.Environ() {
		if k, _, _ := strings.Cut(k, "="); strings.HasPrefix(k, "VESTA_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("TZ", "UTC") // Leaf's decodeSnowflakeId prints the server's local time
	r := &readmeRun{t: t, root: root, dir: t.TempDir(), redis: redistest.Start(t).Addr()}
	r.setPath()
	r.makeRun = makeRunArgs(t, makefile)
	blocks := readmeBlocks(readme)
	r.workspace(blocks)

	counts := map[string]int{}
	for _, b := range blocks {
		switch b.marker {
		case "":
		case "stop the server":
			r.stopServer()
		case "start make run":
			r.startServer(nil, r.makeRun)
		default:
			t.Fatalf("README:%d: unknown marker %q", b.line, b.marker)
		}
		counts[b.lang]++
		switch b.lang {
		case "sh":
			for _, st := range shSteps(b) {
				r.step(st)
			}
		case "go":
			r.lastGo = r.goDirs[b.line]
		case "python", "js":
			r.last[b.lang] = b.text
		case "yaml":
			if b.saveAs == "" {
				t.Errorf("README:%d: a yaml block with no \"save as `FILE`:\" above it", b.line)
				continue
			}
			r.write(b.saveAs, r.subst(b.text))
		case "text":
			// the key list: conf's TestKeyTable checks it
		default:
			t.Errorf("README:%d: a ```%s block, which this test does not run", b.line, b.lang)
		}
	}
	for _, lang := range []string{"sh", "go", "python", "js", "yaml"} {
		if counts[lang] == 0 {
			t.Errorf("the README has no %s block: the test reads it wrongly", lang)
		}
	}
	if r.ran < 20 {
		t.Errorf("ran %d commands of the README; its blocks were not found", r.ran)
	}
}

// readmeRun is the state of one reading of the README.
type readmeRun struct {
	t         *testing.T
	root, dir string // the checkout; the working directory of every command
	bin       string // PATH's first directory: vesta, python3
	redis     string
	makeRun   []string

	server           *proctest.Proc
	rpcAddr, webAddr string // the last server's, kept after it stops

	goDirs map[int]string    // a go block's line → its module's directory
	goText map[string]string // a module's directory → its go block
	goWork string            // the workspace file
	lastGo string            // the directory of the last go block shown
	last   map[string]string // the last python and js block
	ran    int
}

// setPath makes the bin directory: vesta, this test binary running main;
// python3, Debian's (with python3-msgpack).
func (r *readmeRun) setPath() {
	t := r.t
	r.bin = t.TempDir()
	r.last = map[string]string{}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", reexecEnv, self)
	if err := os.WriteFile(filepath.Join(r.bin, "vesta"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/python3", filepath.Join(r.bin, "python3")); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "curl", "go", "node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (scripts/deps.sh installs it)", tool, err)
		}
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import msgpack").CombinedOutput(); err != nil {
		t.Fatalf("/usr/bin/python3 has no msgpack (Debian's python3-msgpack; scripts/deps.sh installs it): %v %s", err, out)
	}
	t.Setenv("PATH", r.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	// npm: no audit, funding or update notice; the cache first.
	t.Setenv("npm_config_audit", "false")
	t.Setenv("npm_config_fund", "false")
	t.Setenv("npm_config_update_notifier", "false")
	t.Setenv("npm_config_prefer_offline", "true")
}

// makeRunArgs reads `make run`'s serve arguments from the Makefile.
func makeRunArgs(t *testing.T, makefile string) []string {
	m := regexp.MustCompile(`(?m)^run:\n\t.*\./cmd/vesta (serve .*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile's run target does not run ./cmd/vesta serve")
	}
	return strings.Fields(m[1])
}

// workspace writes every go block as a module of its own and the
// workspace that joins them to this checkout. A newcomer's `go get`
// would fetch the module; here it is the checkout under test.
func (r *readmeRun) workspace(blocks []readmeBlock) {
	t := r.t
	goMod, err := os.ReadFile(filepath.Join(r.root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go \S+$`).Find(goMod)
	work := string(goLine) + "\n\nuse " + strconv.Quote(r.root) + "\n"
	r.goDirs, r.goText = map[int]string{}, map[string]string{}
	ws := t.TempDir()
	for _, b := range blocks {
		if b.lang != "go" {
			continue
		}
		if formatted, err := format.Source([]byte(b.text)); err != nil || !bytes.Equal(formatted, []byte(b.text)) {
			t.Errorf("README:%d: the go block is not gofmt'ed (%v)", b.line, err)
		}
		name := fmt.Sprintf("example%d", b.line)
		dir := filepath.Join(ws, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mod := "module " + name + "\n\n" + string(goLine) + "\n"
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
			t.Fatal(err)
		}
		r.goDirs[b.line], r.goText[dir] = dir, b.text
		work += "use " + strconv.Quote(dir) + "\n"
	}
	r.goWork = filepath.Join(ws, "go.work")
	if err := os.WriteFile(r.goWork, []byte(work), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *readmeRun) write(name, text string) {
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// subst puts this run's addresses where the README has the defaults.
func (r *readmeRun) subst(s string) string {
	rpcHost, rpcPort, _ := net.SplitHostPort(r.rpcAddr)
	pairs := []string{"127.0.0.1:6379", r.redis}
	if r.rpcAddr != "" {
		pairs = append(pairs,
			"127.0.0.1:7070", r.rpcAddr, "localhost:7070", r.rpcAddr,
			`("127.0.0.1", 7070)`, fmt.Sprintf("(%q, %s)", rpcHost, rpcPort), // Python
			`7070, "127.0.0.1"`, fmt.Sprintf("%s, %q", rpcPort, rpcHost), // Node
			"127.0.0.1:7080", r.webAddr, "localhost:7080", r.webAddr)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// startServer runs `vesta ARGS` (serve) with the VAR=value entries of env
// on free ports of 127.0.0.1 until the next start, stop or the test's end.
func (r *readmeRun) startServer(env, args []string) {
	t := r.t
	r.stopServer()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "serve.log")
	var rpcPort int
	r.server = proctest.Start(t, proctest.Spec{
		Name: "vesta " + strings.Join(args, " "),
		Argv: func(port int) ([]string, error) {
			ports, err := proctest.FreePorts(2)
			if err != nil {
				return nil, err
			}
			rpcPort = ports[0]
			if rpcPort == port {
				rpcPort = ports[1]
			}
			argv := append([]string{"/bin/sh", "-c", `cd "$1" && shift && exec "$@" 2>>"$0"`, logFile, r.dir, "/usr/bin/env"}, env...)
			argv = append(append(argv, reexecEnv+"=1", self), args...)
			return append(argv, "--central-listen", "127.0.0.1:"+strconv.Itoa(rpcPort),
				"--rest-listen", "127.0.0.1:"+strconv.Itoa(port)), nil
		},
		Ready: func(port int) error {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(rpcPort), time.Second)
			if err != nil {
				return err
			}
			c.Close()
			resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/readyz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return errors.New(resp.Status)
			}
			return nil
		},
		Log: logFile,
	})
	r.rpcAddr = "127.0.0.1:" + strconv.Itoa(rpcPort)
	r.webAddr = "127.0.0.1:" + strconv.Itoa(r.server.Port())
}

func (r *readmeRun) stopServer() {
	if r.server != nil {
		r.server.Stop()
		r.server = nil
	}
}

// step runs one command of an sh block.
func (r *readmeRun) step(st shStep) {
	t := r.t
	where := fmt.Sprintf("README:%d: %q", st.line, st.cmd)
	fields := strings.Fields(st.cmd)
	env, words := splitEnv(fields)
	switch {
	case st.cmd == "":
		t.Errorf("README:%d: output %q under no command", st.line, st.want)
		return
	case st.cmd == "make run":
		r.startServer(nil, r.makeRun)
		return
	case st.cmd == "make test", st.cmd == "make build", strings.HasPrefix(st.cmd, "export PATH="),
		strings.HasPrefix(st.cmd, "go get "), strings.HasPrefix(st.cmd, "go install "):
		return // see the test's comment
	case len(words) > 1 && words[0] == "vesta" && words[1] == "serve" && !st.transcript:
		r.startServer(env, words[1:])
		r.ran++
		return
	case st.cmd == "go run .":
		if r.lastGo == "" {
			t.Errorf("%s: no go block above it", where)
			return
		}
		r.runGo(st, where)
		return
	case len(fields) == 2 && (fields[0] == "python3" && r.last["python"] != "" || fields[0] == "node" && r.last["js"] != ""):
		lang := map[string]string{"python3": "python", "node": "js"}[fields[0]]
		r.write(fields[1], r.subst(r.last[lang]))
	}
	cmd := exec.Command("bash", "-c", r.subst(st.cmd))
	cmd.Dir = r.dir
	r.exec(cmd, st, where)
}

// runGo runs `go run .` in the module of the last go block shown, its
// main.go written with this run's addresses.
func (r *readmeRun) runGo(st shStep, where string) {
	if err := os.WriteFile(filepath.Join(r.lastGo, "main.go"), []byte(r.subst(r.goText[r.lastGo])), 0o644); err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = r.lastGo
	cmd.Env = append(os.Environ(), "GOWORK="+r.goWork, "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local")
	r.exec(cmd, st, where)
}

// exec runs cmd and compares what it printed with the README's.
func (r *readmeRun) exec(cmd *exec.Cmd, st shStep, where string) {
	t := r.t
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	r.ran++
	if !st.transcript {
		if code != 0 {
			t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", where, code, stdout.String(), stderr.String())
		}
		return
	}
	var want []string
	if len(st.want) > 0 {
		want = strings.Split(r.subst(strings.Join(st.want, "\n")), "\n")
	}
	if err := matchOutput(want, code, stdout.String(), stderr.String()); err != nil {
		t.Errorf("%s: %v", where, err)
	} else if err := sameIssuers(r.subst(st.cmd), want, stdout.String()); code == 0 && err != nil {
		t.Errorf("%s: %v", where, err)
	}
}
