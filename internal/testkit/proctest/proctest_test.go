package proctest_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/proctest"
)

// The test binary is its own server program: `BINARY proctest-child MODE
// PORT LOG` runs child instead of the tests.
const childArg = "proctest-child"

func TestMain(m *testing.M) {
	if len(os.Args) == 5 && os.Args[1] == childArg {
		child(os.Args[2], os.Args[3], os.Args[4])
		return
	}
	os.Exit(m.Run())
}

// child is a server that greets every connection with "ready" (mode
// serve), does so but ignores SIGTERM (stubborn), accepts and stays silent
// (mute), or logs a failure and exits (exit).
func child(mode, port, log string) {
	logf := func(format string, args ...any) {
		f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, format+"\n", args...)
			f.Close()
		}
	}
	if mode == "exit" {
		logf("child: cannot serve on port %s", port)
		os.Exit(3)
	}
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		logf("child: %v", err)
		os.Exit(1)
	}
	logf("child: %s on port %s", mode, port)
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		if mode != "mute" {
			fmt.Fprintln(c, "ready")
		}
		c.Close()
	}
}

// spec runs the child in mode, its log in a temporary directory.
func spec(t testing.TB, mode string) proctest.Spec {
	log := filepath.Join(t.TempDir(), "child.log")
	return proctest.Spec{
		Name: "child-" + mode,
		Argv: func(port int) ([]string, error) {
			return []string{os.Args[0], childArg, mode, strconv.Itoa(port), log}, nil
		},
		Ready: greeted,
		Log:   log,
	}
}

// greeted reports whether the server on port says "ready".
func greeted(port int) error {
	c, err := net.DialTimeout("tcp", addr(port), time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ready\n" {
		return fmt.Errorf("greeted with %q", line)
	}
	return nil
}

func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// down fails the test unless nothing listens on port.
func down(t *testing.T, port int, when string) {
	t.Helper()
	if c, err := net.DialTimeout("tcp", addr(port), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s: port %d still accepts connections", when, port)
	}
}

func TestStopKillRestart(t *testing.T) {
	p := proctest.Start(t, spec(t, "serve"))
	port := p.Port()
	if !p.Running() {
		t.Fatal("not running after Start")
	}
	for _, tc := range []struct {
		name string
		end  func()
	}{{"stop", p.Stop}, {"kill", p.Kill}} {
		tc.end()
		if p.Running() {
			t.Fatalf("%s: still running", tc.name)
		}
		down(t, port, tc.name)
		tc.end() // a second stop or kill does nothing
		p.Stop()
		p.Kill()
		p.Restart()
		if p.Port() != port {
			t.Fatalf("%s: restart moved the server from port %d to %d", tc.name, port, p.Port())
		}
		if err := greeted(port); err != nil || !p.Running() {
			t.Fatalf("%s: after restart: running %v, %v", tc.name, p.Running(), err)
		}
	}
	p.Restart() // restarting a running server stops it first
	if err := greeted(port); err != nil {
		t.Fatal(err)
	}
	if got := p.LogTail(); strings.Count(got, "child: serve on port "+strconv.Itoa(port)) != 4 {
		t.Fatalf("log tail %q; want four starts on port %d", got, port)
	}
}

func TestStartOnPort(t *testing.T) {
	first := proctest.Start(t, spec(t, "serve"))
	port := first.Port()
	first.Stop()
	p := proctest.StartOn(t, spec(t, "serve"), port)
	if p.Port() != port {
		t.Fatalf("StartOn(%d) listens on %d", port, p.Port())
	}
	if err := greeted(port); err != nil {
		t.Fatal(err)
	}
}

// Each Proc is stopped in the Cleanup of the test that started it.
func TestCleanupStops(t *testing.T) {
	var port int
	t.Run("owner", func(t *testing.T) {
		port = proctest.Start(t, spec(t, "serve")).Port()
	})
	down(t, port, "after the owning test")
}

// Stop kills a server that ignores SIGTERM once StopTimeout passes.
func TestStopKillsAStubbornServer(t *testing.T) {
	sp := spec(t, "stubborn")
	sp.StopTimeout = 100 * time.Millisecond
	p := proctest.Start(t, sp)
	p.Stop()
	if p.Running() {
		t.Fatal("still running after Stop")
	}
	down(t, p.Port(), "after Stop")
}

// failure is proctest.Failure, failing the test when fn does not fail.
func failure(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	msg := proctest.Failure(t, fn)
	if msg == "" {
		t.Fatal("returned without failing")
	}
	return msg
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(tb testing.TB)
		want []string // in the failure message
	}{
		{"Fatal", func(tb testing.TB) { tb.Fatal("a", 1) }, []string{"a1"}},
		{"missing binary", func(tb testing.TB) { proctest.Binary(tb, "no-such-server-x", "/no/such/path") },
			[]string{"no-such-server-x is not installed", "scripts/deps.sh"}},
		{"exits at start", func(tb testing.TB) { proctest.Start(tb, spec(t, "exit")) },
			[]string{"child-exit on port", "exited at start", "exit status 3", "child: cannot serve on port"}},
		{"never ready", func(tb testing.TB) {
			sp := spec(t, "mute")
			sp.StartTimeout = 100 * time.Millisecond
			proctest.Start(tb, sp)
		}, []string{"child-mute on port", "was not ready within 100ms", "child: mute on port"}},
		{"no Argv", func(tb testing.TB) { proctest.Start(tb, proctest.Spec{Name: "x", Ready: greeted}) },
			[]string{"Spec.Argv"}},
		{"no Ready", func(tb testing.TB) {
			sp := spec(t, "serve")
			sp.Ready = nil
			proctest.Start(tb, sp)
		}, []string{"Spec.Ready"}},
		{"signal to a stopped server", func(tb testing.TB) {
			p := proctest.Start(tb, spec(t, "serve"))
			p.Kill()
			p.Signal(syscall.SIGCONT)
		}, []string{"which is not running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := failure(t, tc.fn)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("failure message %q lacks %q", msg, w)
				}
			}
		})
	}
}

// A server that never got ready is killed before StartOn fails: its port
// is free again.
func TestNeverReadyIsKilled(t *testing.T) {
	free := proctest.Start(t, spec(t, "serve"))
	port := free.Port()
	free.Stop()
	sp := spec(t, "mute")
	sp.StartTimeout = 100 * time.Millisecond
	if msg := failure(t, func(tb testing.TB) { proctest.StartOn(tb, sp, port) }); !strings.Contains(msg, "was not ready") {
		t.Fatalf("StartOn a mute server: %q", msg)
	}
	down(t, port, "after the failed start")
}

// FreePorts are different, and each can be bound.
func TestFreePorts(t *testing.T) {
	ports, err := proctest.FreePorts(6)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("FreePorts(6) = %v: %d twice", ports, p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", addr(p))
		if err != nil {
			t.Fatalf("port %d of FreePorts: %v", p, err)
		}
		l.Close()
	}
}

// TryStartOn returns a failed start's error, log tail included, where
// StartOn would fail the test; a good start runs as StartOn's does.
func TestTryStartOn(t *testing.T) {
	ports, err := proctest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proctest.TryStartOn(t, spec(t, "exit"), ports[0])
	if p != nil || err == nil || !strings.Contains(err.Error(), "child: cannot serve on port") {
		t.Fatalf("TryStartOn of a server that exits: %v, %v", p, err)
	}
	p, err = proctest.TryStartOn(t, spec(t, "serve"), ports[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := greeted(p.Port()); err != nil {
		t.Fatal(err)
	}
}

// A server stalled with SIGSTOP stops at once, not after StopTimeout.
func TestStopPausedServer(t *testing.T) {
	sp := spec(t, "serve")
	sp.StopTimeout = 30 * time.Second
	p := proctest.Start(t, sp)
	p.Signal(syscall.SIGSTOP)
	start := time.Now()
	p.Stop()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Stop of a paused server took %v", d)
	}
	down(t, p.Port(), "after Stop")
}
