package proctest

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit"
)

// Defaults of Spec's timeouts, and how a start is retried. They bound
// hangs; they time nothing.
const (
	defaultStartTimeout = 20 * time.Second
	defaultStopTimeout  = 10 * time.Second
	pollEvery           = 20 * time.Millisecond
	// A restarted server's old socket may linger briefly.
	restartTries = 20
	restartPause = 200 * time.Millisecond
	// tailLines of the log go into a failure message.
	tailLines = 20
)

// FreePortTries is how many times a start on free ports is tried: a port
// found free may be taken before the server binds it.
const FreePortTries = 5

// Spec says how to run one server program.
type Spec struct {
	// Name names the program in failure messages ("redis-server");
	// required.
	Name string
	// Argv returns the command line of a start on port; argv[0] is run. It
	// is called for every start, restarts included, so it may (re)write a
	// config file naming the port. Required.
	Argv func(port int) ([]string, error)
	// Ready returns nil once the server on port serves clients; it is
	// polled until StartTimeout. Required.
	Ready func(port int) error
	// Log is the file the server logs to, whose last lines go into failure
	// messages; "" is none.
	Log string
	// StartTimeout bounds each start's wait for Ready; zero is 20s.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before it sends
	// SIGKILL; zero is 10s.
	StopTimeout time.Duration
}

// validate names the first field of s that is missing.
func (s Spec) validate() error {
	switch {
	case s.Name == "":
		return errors.New("Spec.Name is empty")
	case s.Argv == nil:
		return fmt.Errorf("Spec.Argv of %s is nil", s.Name)
	case s.Ready == nil:
		return fmt.Errorf("Spec.Ready of %s is nil", s.Name)
	case s.StartTimeout < 0 || s.StopTimeout < 0:
		return fmt.Errorf("Spec.StartTimeout %v or Spec.StopTimeout %v of %s is negative", s.StartTimeout, s.StopTimeout, s.Name)
	}
	return nil
}

// Proc is one server process of a test, on the same port across restarts.
// Its methods are safe for concurrent use; they fail the test when the
// process cannot be controlled.
type Proc struct {
	t    testing.TB
	spec Spec
	port int // set before Start returns, then fixed

	mu   sync.Mutex
	cmd  *exec.Cmd     // nil when stopped
	done chan struct{} // closed when cmd has exited
}

// Binary returns the path of the first of names that is installed (a name
// on PATH, or a path), failing the test with names[0] and scripts/deps.sh
// when none is: a missing server fails a test rather than skipping it, so
// that a CI run lacking it cannot pass unnoticed. In the inner loop (go
// test -short, testkit.Short) it skips the test instead, installed or not:
// every harness finds its binary here, so every test on a real server
// skips there.
func Binary(t testing.TB, names ...string) string {
	t.Helper()
	if len(names) == 0 {
		t.Fatalf("proctest: Binary without a name")
	}
	testkit.SkipShort(t, names[0]+" (a real server, internal/testkit/proctest)")
	var first error
	for _, n := range names {
		path, err := exec.LookPath(n)
		if err == nil {
			return path
		}
		if first == nil {
			first = err
		}
	}
	t.Fatalf("proctest: %s is not installed (%v); install it with scripts/deps.sh", names[0], first)
	return ""
}

// Start runs spec on a free port of 127.0.0.1, trying another port when
// the server fails to start on one, and waits until it is ready. It is
// stopped in t.Cleanup.
func Start(t testing.TB, spec Spec) *Proc {
	t.Helper()
	p := newProc(t, spec)
	var last error
	for range FreePortTries {
		ports, err := FreePorts(1)
		if err != nil {
			t.Fatalf("proctest: finding a free port for %s: %v", spec.Name, err)
		}
		p.port = ports[0]
		if last = p.start(); last == nil {
			return p
		}
	}
	t.Fatalf("proctest: %v", last)
	return nil
}

// StartOn is Start on port, without retrying another (in a network
// namespace of its own every port is free).
func StartOn(t testing.TB, spec Spec, port int) *Proc {
	t.Helper()
	p, err := TryStartOn(t, spec, port)
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	return p
}

// TryStartOn is StartOn returning the failure of the start instead of
// failing the test, for a harness that retries on other ports itself:
// servers that must all know each other's ports before the first starts
// (an etcd cluster's members) are retried together. The Proc of a failed
// start is nil; a bad Spec still fails the test.
func TryStartOn(t testing.TB, spec Spec, port int) (*Proc, error) {
	t.Helper()
	p := newProc(t, spec)
	p.port = port
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

func newProc(t testing.TB, spec Spec) *Proc {
	t.Helper()
	if err := spec.validate(); err != nil {
		t.Fatalf("proctest: %v", err)
	}
	spec.StartTimeout = cmp.Or(spec.StartTimeout, defaultStartTimeout)
	spec.StopTimeout = cmp.Or(spec.StopTimeout, defaultStopTimeout)
	p := &Proc{t: t, spec: spec}
	t.Cleanup(p.Stop)
	return p
}

// Port is the port the server listens on, the same across restarts.
func (p *Proc) Port() int { return p.port }

// Running reports whether the process is alive.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop shuts the server down (SIGTERM, then SIGKILL after
// Spec.StopTimeout) and waits for it to exit. Stopping a stopped server
// does nothing.
func (p *Proc) Stop() { p.end(syscall.SIGTERM) }

// Kill ends the server with SIGKILL, as a crash would, and waits for it to
// exit. Killing a stopped server does nothing.
func (p *Proc) Kill() { p.end(syscall.SIGKILL) }

// Restart starts the server again on the same port, stopping it first if
// it runs, and waits until it is ready.
func (p *Proc) Restart() {
	p.t.Helper()
	p.Stop()
	var err error
	for range restartTries {
		if err = p.start(); err == nil {
			return
		}
		time.Sleep(restartPause)
	}
	p.t.Fatalf("proctest: restart of %s on port %d: %v", p.spec.Name, p.port, err)
}

// Signal sends sig to the running server without waiting (SIGSTOP and
// SIGCONT to stall and continue it); the server must be running.
func (p *Proc) Signal(sig syscall.Signal) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		p.t.Fatalf("proctest: %v to %s on port %d, which is not running", sig, p.spec.Name, p.port)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("proctest: %v to %s on port %d: %v", sig, p.spec.Name, p.port, err)
	}
}

// LogTail is the last lines of the server's log, for a failure report.
func (p *Proc) LogTail() string {
	if p.spec.Log == "" {
		return "(no log)"
	}
	b, err := os.ReadFile(p.spec.Log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return strings.Join(lines, "\n")
}

// start runs the server on p.port and waits until it is ready; a server
// that exits or is not ready in time is killed and reaped before the error
// returns.
func (p *Proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	argv, err := p.spec.Argv(p.port)
	if err != nil {
		return fmt.Errorf("%s on port %d: %w", p.spec.Name, p.port, err)
	}
	if len(argv) == 0 {
		return fmt.Errorf("%s on port %d: Spec.Argv returned no command", p.spec.Name, p.port)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.spec.Name, err)
	}
	// The waiter ends when the process does; every path below either
	// reaps it or hands it to p, whose Stop (at the latest in t.Cleanup)
	// ends it.
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(p.spec.StartTimeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("%s on port %d exited at start (%s); log:\n%s", p.spec.Name, p.port, cmd.ProcessState, p.LogTail())
		default:
		}
		err := p.spec.Ready(p.port)
		if err == nil {
			p.cmd, p.done = cmd, done
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("%s on port %d was not ready within %s: %v; log:\n%s", p.spec.Name, p.port, p.spec.StartTimeout, err, p.LogTail())
		}
		time.Sleep(pollEvery)
	}
}

// end sends sig and waits for the exit, sending SIGKILL after
// Spec.StopTimeout.
func (p *Proc) end(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	select {
	case <-done:
		return
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Errorf("proctest: %v to %s on port %d: %v", sig, p.spec.Name, p.port, err)
	}
	// A server a test stalled with SIGSTOP acts on SIGTERM only once it
	// runs again; without this its Stop would wait out StopTimeout.
	_ = cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-done:
	case <-time.After(p.spec.StopTimeout):
		_ = cmd.Process.Kill()
		<-done
	}
}

// FreePorts returns n different ports of 127.0.0.1 that are free now. One
// may be taken before the server binds it: a start on them must be
// retried on others, up to FreePortTries times, as Start does.
func FreePorts(n int) ([]int, error) {
	// Every listener stays open until all n are found, so that the kernel
	// cannot hand out one port twice.
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
