package mariadbtest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a start waits for the server's greeting.
const startTimeout = 60 * time.Second

// Server is one mariadbd process. Its methods are safe for concurrent use;
// they fail the test when the server cannot be controlled.
type Server struct {
	t       testing.TB
	bin     string
	dataDir string
	sockDir string // short path: a unix socket path must fit in 108 bytes
	port    int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start initialises a data directory in t.TempDir() with
// mariadb-install-db, starts mariadbd on a free port of 127.0.0.1 and waits
// until it greets clients. It is stopped in t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		bin, err = exec.LookPath("/usr/sbin/mariadbd")
	}
	if err != nil {
		t.Fatalf("mariadbtest: mariadbd is not installed (%v); install it with scripts/deps.sh", err)
	}
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		t.Fatalf("mariadbtest: mariadb-install-db is not installed (%v); install it with scripts/deps.sh", err)
	}
	dir := t.TempDir()
	s := &Server{t: t, bin: bin, dataDir: filepath.Join(dir, "data")}
	if s.sockDir, err = os.MkdirTemp("", "mdb"); err != nil {
		t.Fatalf("mariadbtest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(s.sockDir) })
	t.Cleanup(s.Stop)

	args := []string{"--no-defaults", "--datadir=" + s.dataDir, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	out, err := exec.Command(install, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadbtest: mariadb-install-db: %v\n%s", err, out)
	}
	// A port found free may be taken before mariadbd binds it: retry with
	// another.
	var last error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			t.Fatalf("mariadbtest: finding a free port: %v", err)
		}
		if last = s.start(); last == nil {
			return s
		}
	}
	t.Fatalf("mariadbtest: %v", last)
	return nil
}

// Addr is host:port of the server, the same across restarts.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// DSN is a go-sql-driver/mysql DSN for database db as root (db may be
// empty).
func (s *Server) DSN(db string) string {
	return "root@tcp(" + s.Addr() + ")/" + db
}

// DataDir is the server's data directory (its log is error.log beside it).
func (s *Server) DataDir() string { return s.dataDir }

// Stop shuts the server down (SIGTERM, then SIGKILL after 30 s) and waits
// for it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() { s.signal(syscall.SIGTERM) }

// Kill ends the server with SIGKILL, as a crash would, and waits for it to
// exit. Killing a stopped server does nothing.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

// Restart starts the server again on the same port and data, stopping it
// first if it runs, and waits until it greets clients.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	for range 20 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("mariadbtest: restart on %s: %v", s.Addr(), err)
}

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func (s *Server) logFile() string { return filepath.Join(filepath.Dir(s.dataDir), "error.log") }

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	args := []string{"--no-defaults", "--datadir=" + s.dataDir,
		"--port=" + strconv.Itoa(s.port), "--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(s.sockDir, "s"), "--pid-file=" + filepath.Join(s.sockDir, "pid"),
		"--log-error=" + s.logFile(), "--skip-name-resolve", "--skip-log-bin",
		"--innodb-buffer-pool-size=32M", "--max-connections=500"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(s.bin, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("mariadbd on port %d exited at start (%s); log:\n%s", s.port, cmd.ProcessState, tail(s.logFile()))
		default:
		}
		err := greet(s.Addr())
		if err == nil {
			s.cmd, s.done = cmd, done
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("mariadbd on port %d did not greet within %s: %v; log:\n%s", s.port, startTimeout, err, tail(s.logFile()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	select {
	case <-done:
		return
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.t.Errorf("mariadbtest: signalling mariadbd: %v", err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// greet reads the server's first packet: a handshake (protocol 10) means
// it accepts clients; an error packet means not yet.
func greet(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var hdr [5]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	if hdr[4] != 10 {
		return fmt.Errorf("first packet starts with %#x, not a handshake", hdr[4])
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last lines of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
