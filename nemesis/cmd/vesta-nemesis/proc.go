package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one `vesta serve` process on a host, restartable. It logs
// JSON on stderr; its records give the machine IDs it held.
type server struct {
	name string
	bin  string
	env  map[string]string
	wrap []string
	dir  string
	logf *os.File

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	serving  chan struct{}  // closed at the "serving" record of the current run
	machines map[int]bool   // every machine ID any run held
	holds    map[int][]hold // when, by its log, it held each machine ID
	central  string
	rest     string
	runs     int
	paused   bool
}

func newServer(t *tb, name, bin string, env map[string]string, wrap []string) *server {
	dir := t.TempDir()
	f, err := os.Create(dir + "/serve.log")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s := &server{name: name, bin: bin, env: maps.Clone(env), wrap: wrap, dir: dir, logf: f, machines: map[int]bool{}, holds: map[int][]hold{}}
	t.Cleanup(func() {
		s.stop()
		f.Close()
	})
	return s
}

func (s *server) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VESTA_") {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.env)) {
		out = append(out, k+"="+s.env[k])
	}
	return append(out, "VESTA_LOG_FORMAT=json")
}

// start launches a run and returns at once.
func (s *server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	argv := append(slices.Clone(s.wrap), s.bin, "serve")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = s.environ()
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: starting vesta serve: %w", s.name, err)
	}
	s.runs++
	fmt.Fprintf(s.logf, "=== run %d, pid %d, %s\n", s.runs, cmd.Process.Pid, time.Now().UTC().Format(time.RFC3339Nano))
	s.cmd, s.exited, s.serving, s.paused = cmd, make(chan struct{}), make(chan struct{}), false
	go s.read(cmd, stderr, s.exited, s.serving)
	return nil
}

func (s *server) read(cmd *exec.Cmd, r interface{ Read([]byte) (int, error) }, exited, serving chan struct{}) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			s.mu.Lock()
			s.logf.WriteString(line)
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil {
				now := time.Now()
				if from, ok := rec["from"].(float64); ok && rec["msg"] == "machineid: re-keyed" {
					if _, same := rec["to"].(float64); !same || rec["to"] != rec["from"] {
						s.closeHold(int(from), now)
					}
				}
				for _, k := range []string{"machine", "to"} {
					if m, ok := rec[k].(float64); ok {
						s.machines[int(m)] = true
						s.openHold(int(m), now)
					}
				}
				if rec["msg"] == "serving" {
					s.central, _ = rec["central"].(string)
					s.rest, _ = rec["rest"].(string)
					select {
					case <-serving:
					default:
						close(serving)
					}
				}
			}
			s.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	cmd.Wait()
	s.mu.Lock()
	now := time.Now()
	for m := range s.holds {
		s.closeHold(m, now)
	}
	s.mu.Unlock()
	close(exited)
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

func (s *server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		// ip netns exec execs vesta: the pid is vesta's.
		s.cmd.Process.Signal(sig)
		switch sig {
		case syscall.SIGSTOP:
			s.paused = true
		case syscall.SIGCONT:
			s.paused = false
		}
	}
}

// kill ends the current run with SIGKILL (after SIGCONT, should it be
// paused) and waits for it.
func (s *server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
}

// stop ends the current run with SIGTERM (a clean release of its
// lease), then SIGKILL after 5s.
func (s *server) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		s.kill()
	}
}

func (s *server) heldMachines() map[int]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.machines)
}

func (s *server) addrs() (central, rest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.central, s.rest
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

// hold is a span of time a server held a machine ID, as its log tells:
// from its first mention (the lease, before any ID of it) to the re-key
// away from it or the process's exit; a zero to is still open.
type hold struct{ from, to time.Time }

// openHold and closeHold keep s.holds; s.mu is held.
func (s *server) openHold(m int, at time.Time) {
	hs := s.holds[m]
	if len(hs) > 0 && hs[len(hs)-1].to.IsZero() {
		return
	}
	s.holds[m] = append(hs, hold{from: at})
}

func (s *server) closeHold(m int, at time.Time) {
	hs := s.holds[m]
	if len(hs) > 0 && hs[len(hs)-1].to.IsZero() {
		hs[len(hs)-1].to = at
	}
}

// held reports whether s held m at at, give or take the slack of a log
// line's way through the pipe and an answer's way back.
func (s *server) held(m int, at time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.holds[m] {
		if at.After(h.from.Add(-time.Second)) && (h.to.IsZero() || at.Before(h.to.Add(3*time.Second))) {
			return true
		}
	}
	return false
}

// notClosed: a run's exited channel, nil before the first run.
func notClosed(exited chan struct{}) bool {
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
