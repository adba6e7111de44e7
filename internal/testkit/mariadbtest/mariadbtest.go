package mariadbtest

import (
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver of Database's pools

	"github.com/vesta-go/vesta/internal/testkit/proctest"
)

// Bounds of a start's wait for the server's greeting and of a stop's
// wait after SIGTERM: InnoDB starts and shuts down slowly on a busy
// machine. They bound hangs; they time nothing.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// Server is one mariadbd process. Its methods are safe for concurrent use;
// they fail the test when the server cannot be controlled. Stop, Kill,
// Restart and Running are proctest's: Restart comes back on the same port
// and data.
type Server struct {
	*proctest.Proc
	dataDir string
}

// Start initialises a data directory in t.TempDir() with
// mariadb-install-db, starts mariadbd on a free port of 127.0.0.1 and waits
// until it greets clients. It is stopped in t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := proctest.Binary(t, "mariadbd", "/usr/sbin/mariadbd")
	install := proctest.Binary(t, "mariadb-install-db")
	dir := t.TempDir()
	s := &Server{dataDir: filepath.Join(dir, "data")}
	// A unix socket path must fit in 108 bytes: t.TempDir's may not.
	sockDir, err := os.MkdirTemp("", "mdb")
	if err != nil {
		t.Fatalf("mariadbtest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })

	args := []string{"--no-defaults", "--datadir=" + s.dataDir, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	out, err := exec.Command(install, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadbtest: mariadb-install-db: %v\n%s", err, out)
	}
	logFile := filepath.Join(dir, "error.log")
	s.Proc = proctest.Start(t, proctest.Spec{
		Name: "mariadbd",
		Argv: func(port int) ([]string, error) {
			argv := []string{bin, "--no-defaults", "--datadir=" + s.dataDir,
				"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
				"--socket=" + filepath.Join(sockDir, "s"), "--pid-file=" + filepath.Join(sockDir, "pid"),
				"--log-error=" + logFile, "--skip-name-resolve", "--skip-log-bin",
				"--innodb-buffer-pool-size=32M", "--max-connections=500"}
			if os.Geteuid() == 0 {
				argv = append(argv, "--user=root")
			}
			return argv, nil
		},
		Ready:        func(port int) error { return greet(addr(port)) },
		Log:          logFile,
		StartTimeout: startTimeout,
		StopTimeout:  stopTimeout,
	})
	return s
}

// Addr is host:port of the server, the same across restarts.
func (s *Server) Addr() string { return addr(s.Port()) }

func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// DSN is a go-sql-driver/mysql DSN for database db as root (db may be
// empty).
func (s *Server) DSN(db string) string {
	return "root@tcp(" + s.Addr() + ")/" + db
}

// Database creates database name and returns a pool on it as root,
// closed at the end of the test.
func (s *Server) Database(t testing.TB, name string) *sql.DB {
	t.Helper()
	root, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		t.Fatalf("mariadbtest: %v", err)
	}
	defer root.Close()
	if _, err := root.Exec("CREATE DATABASE `" + name + "`"); err != nil {
		t.Fatalf("mariadbtest: creating database %s: %v", name, err)
	}
	db, err := sql.Open("mysql", s.DSN(name))
	if err != nil {
		t.Fatalf("mariadbtest: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// DataDir is the server's data directory (its log is error.log beside it).
func (s *Server) DataDir() string { return s.dataDir }

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
