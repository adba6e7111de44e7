package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/servetest"
)

// role is what a server is in the fleet.
type role uint8

const (
	rolePrimary  role = iota // leases a machine ID; its callers' recovery is measured
	roleStandby              // leases too, keeps asking while the range is full, retires after a while
	roleFixed                // a fixed machine ID (D: the full disk)
	roleGuard                // a fixed machine ID whose time guard is restored from an older copy (G)
	roleMix                  // the Redis pair of different timings, under a key prefix of its own
	roleSabotage             // the unsafe fleet's
)

// leases: the role takes its machine ID from the lease store.
func (r role) leases() bool { return r == rolePrimary || r == roleStandby || r == roleMix }

// server is one `vesta serve` process on a host, restartable. It logs JSON
// on stderr; its records tell which machine IDs it held, when it was
// fenced, and so on (holds.go).
type server struct {
	name string
	role role
	bin  string
	env  map[string]string
	wrap []string
	dir  string
	logf *os.File
	// central and rest are the addresses it listens on, the same in
	// every run; guardDir its time guard's directory; borrow its
	// id.max_borrow.
	central, rest string
	guardDir      string
	borrow        time.Duration

	mu      sync.Mutex
	proc    *servetest.Run  // the current run's process; nil before the first
	exited  <-chan struct{} // the current run's Exited
	serving chan struct{}   // closed at the "serving" record of the current run
	servAt  time.Time       // when the current run began serving
	runs    []*runLog
	// down: a fault holds the server down; the supervisor leaves it.
	down bool
}

func newServer(t *tb, name string, r role, bin string, env map[string]string, wrap []string) *server {
	dir := t.TempDir()
	f, err := os.Create(dir + "/serve.log")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s := &server{name: name, role: r, bin: bin, env: maps.Clone(env), wrap: wrap, dir: dir, logf: f, borrow: time.Second}
	if b, err := time.ParseDuration(env["VESTA_ID_MAX_BORROW"]); err == nil {
		s.borrow = b
	}
	t.Cleanup(func() {
		s.stop()
		f.Close()
	})
	return s
}

// start launches a run and returns at once.
func (s *server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if notClosed(s.exited) {
		return nil // running already (a supervisor came first)
	}
	run := &runLog{server: s.name, n: len(s.runs) + 1, borrow: s.borrow}
	serving := make(chan struct{})
	proc, err := servetest.Start(servetest.Config{
		Bin: s.bin, Env: s.env, Wrap: s.wrap, Dir: s.dir,
		Line: func(line string) { s.line(run, serving, line) },
		Exit: func(st *os.ProcessState) {
			s.mu.Lock()
			defer s.mu.Unlock()
			run.exit, run.code = time.Now(), st.ExitCode()
			run.exitDrift = run.drift(run.exit)
		},
	})
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	// The reader waits for s.mu to see run.start.
	run.start = time.Now()
	s.runs = append(s.runs, run)
	fmt.Fprintf(s.logf, "=== run %d, pid %d, %s\n", run.n, proc.Pid(), run.start.UTC().Format(time.RFC3339Nano))
	s.proc, s.exited, s.serving, s.servAt = proc, proc.Exited(), serving, time.Time{}
	return nil
}

// line logs a line of run's stderr and keeps its event.
func (s *server) line(run *runLog, serving chan struct{}, line string) {
	now := time.Now()
	ev, ok := parseEvent([]byte(line))
	s.mu.Lock()
	defer s.mu.Unlock()
	ev.drift = run.drift(now)
	s.logf.WriteString(line + "\n")
	if !ok {
		return
	}
	run.events = append(run.events, ev)
	if ev.kind == evServing {
		s.servAt = time.Now()
		select {
		case <-serving:
		default:
			close(serving)
		}
	}
}

// waitServing waits for the current run's "serving" record.
func (s *server) waitServing(timeout time.Duration) error {
	s.mu.Lock()
	serving, exited := s.serving, s.exited
	s.mu.Unlock()
	select {
	case <-serving:
		return nil
	case <-exited:
		return fmt.Errorf("%s exited before serving (log %s):\n%s", s.name, s.logf.Name(), s.tail(8))
	case <-time.After(timeout):
		return fmt.Errorf("%s: not serving within %v (log %s)", s.name, timeout, s.logf.Name())
	}
}

func (s *server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return notClosed(s.exited)
}

// servingFor is how long the current run has been serving; zero when it
// is not running or not serving yet.
func (s *server) servingFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !notClosed(s.exited) || s.servAt.IsZero() {
		return 0
	}
	return time.Since(s.servAt)
}

func (s *server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		// ip netns exec execs vesta: the pid is vesta's.
		s.proc.Signal(sig)
	}
}

// kill ends the current run with SIGKILL and waits for it.
func (s *server) kill() {
	s.mu.Lock()
	proc, exited := s.proc, s.exited
	s.endCurrent("killed")
	s.mu.Unlock()
	if proc == nil {
		return
	}
	proc.Signal(syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
}

// stop ends the current run with SIGTERM (a clean release of its
// lease), then SIGKILL after 5s.
func (s *server) stop() {
	s.mu.Lock()
	proc, exited := s.proc, s.exited
	if notClosed(exited) {
		s.endCurrent("stopped")
	}
	s.mu.Unlock()
	if proc == nil || !notClosed(exited) {
		return
	}
	proc.Signal(syscall.SIGCONT)
	proc.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		s.kill()
	}
}

// endCurrent notes how the nemesis ends the current run, if it runs;
// s.mu is held.
func (s *server) endCurrent(how string) {
	if n := len(s.runs); n > 0 && notClosed(s.exited) && s.runs[n-1].ended == "" {
		s.runs[n-1].ended = how
	}
}

// setDown says whether a fault holds the server down (the supervisor
// then leaves it stopped).
func (s *server) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// supervise restarts the server whenever its process ends, as systemd's
// Restart=always would, after a pause of 0.3-1s (1-2s for a standby or
// the Redis pair, which are refused most of the time), unless a fault holds it
// down; a standby is also retired (stopped cleanly, giving its machine ID
// back) 1-4s after it began serving, unless a fault holds it (busy), so
// that the primaries get their IDs back. It returns when ctx ends.
func (s *server) supervise(ctx context.Context, busy func(*server) bool) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var exitedAt time.Time
	pause := time.Duration(0)
	retire := time.Duration(0)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		running, down := notClosed(s.exited), s.down
		s.mu.Unlock()
		switch {
		case running:
			exitedAt = time.Time{}
			if s.role != roleStandby {
				continue
			}
			if retire == 0 {
				retire = between(rng, time.Second, 4*time.Second)
			}
			if sf := s.servingFor(); sf > retire && !busy(s) {
				retire = 0
				s.stop()
			}
		case down:
			exitedAt = time.Time{}
		case exitedAt.IsZero():
			exitedAt, pause = time.Now(), between(rng, 300*time.Millisecond, time.Second)
			if s.role == roleStandby || s.role == roleMix {
				// Refused again and again while the range is full: a
				// slower loop costs the machine less.
				pause = between(rng, time.Second, 2*time.Second)
			}
		case time.Since(exitedAt) > pause:
			// A run refused at once may end before the next tick sees it
			// run: the pause counts from its end, not from the last one.
			retire, exitedAt = 0, time.Time{}
			s.start()
		}
	}
}

// runLogs is a copy of the server's runs so far, each with its events up
// to now.
func (s *server) runLogs() []*runLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*runLog, len(s.runs))
	for i, r := range s.runs {
		c := *r
		c.events = slices.Clone(r.events)
		out[i] = &c
	}
	return out
}

// heldMachines is every machine ID any run claimed (or, for a fixed ID,
// served on).
func (s *server) heldMachines() map[int]bool {
	m := map[int]bool{}
	for _, r := range s.runLogs() {
		for _, e := range r.events {
			if (e.kind == evLeased || e.kind == evReacquired || e.kind == evServing) && e.machine >= 0 {
				m[e.machine] = true
			}
		}
	}
	return m
}

// tail is the last n lines of the server's log.
func (s *server) tail(n int) string {
	b, _ := os.ReadFile(s.logf.Name())
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// notClosed: a run's exited channel, nil before the first run.
func notClosed(exited <-chan struct{}) bool {
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}
