package integration_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/servetest"
)

// Bounds of waiting for a process; generous, as a race-instrumented server
// on a busy 2-core machine starts slowly. They bound a hang, they do not
// time anything.
const (
	startTimeout = 60 * time.Second
	exitTimeout  = 30 * time.Second
)

// proc is one `vesta serve` process (a servetest.Run). It logs JSON on
// stderr; every line is kept, and its "serving" record gives the addresses
// and the machine ID.
type proc struct {
	t    testing.TB
	name string
	env  map[string]string // VESTA_* variables it was started with
	run  *servetest.Run

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced when a line arrives

	// From the "serving" record; "off" when a server is not listening.
	Central, REST string
	Machine       int
}

// launch starts `vesta serve` with env (VESTA_* variables) and returns at
// once. The process is killed, if still running, and its output checked for
// data races and panics when the test ends.
func launch(t testing.TB, name string, env map[string]string) *proc {
	t.Helper()
	return launchWrapped(t, name, env, nil)
}

// launchWrapped is launch with a command line prefix that must exec vesta
// (`ip netns exec NS`, to run it on a test host).
func launchWrapped(t testing.TB, name string, env map[string]string, wrap []string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, env: maps.Clone(env), changed: make(chan struct{})}
	run, err := servetest.Start(servetest.Config{
		Bin: vestaBinary(t), Env: env, Wrap: wrap, Dir: t.TempDir(),
		Line: p.add,
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	p.run = run
	track(run, true)
	go func() {
		<-run.Exited()
		track(run, false)
	}()
	t.Cleanup(func() {
		p.kill()
		p.check()
		if t.Failed() {
			t.Logf("%s: log (last lines):\n%s", p.name, p.tail(40))
		}
	})
	return p
}

// serve launches a server and waits until it serves.
func serve(t testing.TB, name string, env map[string]string) *proc {
	t.Helper()
	p := launch(t, name, env)
	if err := p.waitServing(); err != nil {
		t.Fatal(err)
	}
	return p
}

// add keeps a line of the output and wakes the waiters.
func (p *proc) add(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, line)
	close(p.changed)
	p.changed = make(chan struct{})
}

// record is one JSON log record; a line that is not JSON (a race report, a
// panic) has only "raw".
type record map[string]any

func (r record) str(key string) string {
	s, _ := r[key].(string)
	return s
}

func (p *proc) records() []record {
	p.mu.Lock()
	lines := slices.Clone(p.lines)
	p.mu.Unlock()
	out := make([]record, 0, len(lines))
	for _, l := range lines {
		var r record
		if json.Unmarshal([]byte(l), &r) != nil || r == nil {
			r = record{"raw": l}
		}
		out = append(out, r)
	}
	return out
}

// waitRecord waits until a record satisfies match, the process exits, or
// timeout passes.
func (p *proc) waitRecord(timeout time.Duration, match func(record) bool) (record, error) {
	deadline := time.After(timeout)
	seen := 0
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		recs := p.records()
		for _, r := range recs[seen:] {
			if match(r) {
				return r, nil
			}
		}
		seen = len(recs)
		select {
		case <-changed:
		case <-p.run.Exited():
			// The last lines may have arrived with the exit.
			for _, r := range p.records()[seen:] {
				if match(r) {
					return r, nil
				}
			}
			return nil, fmt.Errorf("%s exited (%v) before the awaited log record:\n%s", p.name, p.exitState(), p.tail(20))
		case <-deadline:
			return nil, fmt.Errorf("%s: no awaited log record within %v:\n%s", p.name, timeout, p.tail(20))
		}
	}
}

func msgIs(msg string) func(record) bool {
	return func(r record) bool { return r.str("msg") == msg }
}

// waitServing waits for the "serving" record and reads the addresses and
// machine ID from it.
func (p *proc) waitServing() error {
	r, err := p.waitRecord(startTimeout, msgIs("serving"))
	if err != nil {
		return err
	}
	p.Central, p.REST = r.str("central"), r.str("rest")
	m, ok := r["machine"].(float64)
	if !ok {
		return fmt.Errorf("%s: serving record without a machine: %v", p.name, r)
	}
	p.Machine = int(m)
	return nil
}

// waitAll waits until every server serves and returns their central
// addresses.
func waitAll(t testing.TB, ps ...*proc) []string {
	t.Helper()
	var addrs []string
	for _, p := range ps {
		if err := p.waitServing(); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, p.Central)
	}
	return addrs
}

// restEndpoint is the base URL of the REST server.
func (p *proc) restEndpoint() string { return "http://" + p.REST }

// running reports whether the process has not exited.
func (p *proc) running() bool { return p.run.Running() }

func (p *proc) exitState() *os.ProcessState { return p.run.State() }

// waitExit waits for the process to exit and returns its exit code (-1
// when a signal ended it).
func (p *proc) waitExit() int {
	p.t.Helper()
	select {
	case <-p.run.Exited():
	case <-time.After(exitTimeout):
		p.run.Kill()
		p.t.Fatalf("%s did not exit within %v; killed:\n%s", p.name, exitTimeout, p.tail(20))
	}
	return p.exitState().ExitCode()
}

// kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *proc) kill() { p.run.Kill() }

// signal sends sig to the process, failing the test if it cannot be sent
// (a process that has exited gets nothing).
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.run.Signal(sig); err != nil {
		p.t.Fatalf("%s: %v: %v", p.name, sig, err)
	}
}

// stopAll stops servers gracefully, all at once, and fails the test
// unless each exits 0 with its "stopped" record (a race report makes the
// exit code 66).
func stopAll(t testing.TB, ps ...*proc) {
	t.Helper()
	for _, p := range ps {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range ps {
		if code := p.waitExit(); code != 0 {
			t.Errorf("%s: exit code %d after SIGTERM; want 0:\n%s", p.name, code, p.tail(20))
		}
		if _, err := p.waitRecord(time.Second, msgIs("stopped")); err != nil {
			t.Error(err)
		}
	}
}

// again starts a new process with the same configuration on the same
// addresses, as an operator restarting the server would (the clients keep
// their server list). The caller ends this one first.
func (p *proc) again(t testing.TB, name string) *proc {
	t.Helper()
	env := maps.Clone(p.env)
	if p.Central != "" && p.Central != "off" {
		env["VESTA_CENTRAL_LISTEN"] = p.Central
	}
	if p.REST != "" && p.REST != "off" {
		env["VESTA_REST_LISTEN"] = p.REST
	}
	return serve(t, name, env)
}

// output returns every line of the process's stderr.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

func (p *proc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := p.lines[max(0, len(p.lines)-n):]
	return strings.Join(lines, "\n")
}

// check fails the test if the server reported a data race, panicked or hit
// a fatal runtime error.
func (p *proc) check() {
	out := p.output()
	for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
		if i := strings.Index(out, bad); i >= 0 {
			end := min(len(out), i+4000)
			p.t.Errorf("%s: %q in its output:\n%s", p.name, bad, out[i:end])
		}
	}
}

// Every process started, so that TestMain can kill what a test that
// failed hard left running.
var (
	liveMu sync.Mutex
	live   = map[*servetest.Run]struct{}{}
)

func track(run *servetest.Run, alive bool) {
	liveMu.Lock()
	defer liveMu.Unlock()
	if alive {
		live[run] = struct{}{}
	} else {
		delete(live, run)
	}
}

func killStragglers() {
	liveMu.Lock()
	defer liveMu.Unlock()
	for run := range live {
		fmt.Fprintf(os.Stderr, "integration: killing straggler pid %d\n", run.Pid())
		_ = run.Signal(syscall.SIGKILL)
	}
}
