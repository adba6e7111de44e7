package redistest_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/proctest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
)

// do sends one inline command and returns the first reply line.
func do(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintf(c, "%s\r\n", cmd); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// A server killed and restarted is back on the same address and, without
// persistence, empty. (Stop, Kill and Restart are proctest's, tested
// there; every test's cleanup stops its server.)
func TestRestartComesBackEmpty(t *testing.T) {
	s := redistest.Start(t)
	addr := s.Addr()
	if got, err := do(addr, "SET k v"); err != nil || got != "+OK" {
		t.Fatalf("SET: %q, %v", got, err)
	}
	s.Kill()
	if _, err := do(addr, "PING"); err == nil {
		t.Fatal("PING answered after Kill")
	}
	s.Restart()
	if s.Addr() != addr || !s.Running() {
		t.Fatalf("after restart: on %s (was %s), running %v", s.Addr(), addr, s.Running())
	}
	if got, err := do(addr, "EXISTS k"); err != nil || got != ":0" {
		t.Fatalf("EXISTS after restart: %q, %v", got, err)
	}
}

func TestTwoServersHaveTheirOwnPorts(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	if a.Addr() == b.Addr() {
		t.Fatalf("both servers on %s", a.Addr())
	}
	if a.Dir() == b.Dir() {
		t.Fatalf("both servers in %s", a.Dir())
	}
}

func TestMissingBinaryFailsPointingAtDeps(t *testing.T) {
	proctest.MissingBinary(t, "redis-server", func(tb testing.TB) { redistest.Start(tb) })
}

func TestClusterOfOneNode(t *testing.T) {
	s := redistest.StartCluster(t)
	if got, err := do(s.Addr(), "SET {a}:x 1"); err != nil || got != "+OK" {
		t.Fatalf("SET: %q, %v", got, err)
	}
	s.Restart() // the node keeps its slots
	if got, err := do(s.Addr(), "SET {a}:x 1"); err != nil || got != "+OK" {
		t.Fatalf("SET after restart: %q, %v", got, err)
	}
}

func TestFlushSnapshotRollbackReplica(t *testing.T) {
	s := redistest.Start(t)
	runID := func() string {
		info, err := s.Command("INFO", "server")
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(info, "run_id:")
		id, _, _ := strings.Cut(rest, "\r\n")
		return id
	}
	if _, err := s.Command("SET", "a", "1"); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if _, err := s.Command("SET", "b", "2"); err != nil {
		t.Fatal(err)
	}
	id0 := runID()
	s.KillAndRestart(snap)
	if v, _ := s.Command("GET", "a"); v != "1" {
		t.Fatalf("after the rollback a = %q; want the snapshot's 1", v)
	}
	if v, err := s.Command("EXISTS", "b"); err != nil || v != "0" {
		t.Fatalf("after the rollback EXISTS b = %q, %v; want 0", v, err)
	}
	id1 := runID()
	if id1 == id0 {
		t.Fatal("run_id unchanged by a restart")
	}
	s.KillAndRestart(nil)
	if v, _ := s.Command("DBSIZE"); v != "0" {
		t.Fatalf("after an empty restart DBSIZE = %q", v)
	}
	if _, err := s.Command("SET", "c", "3"); err != nil {
		t.Fatal(err)
	}
	s.FlushAll()
	if v, _ := s.Command("DBSIZE"); v != "0" {
		t.Fatalf("after FLUSHALL DBSIZE = %q", v)
	}
	r := redistest.StartReplica(t, s)
	if _, err := s.Command("SET", "d", "4"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Command("WAIT", "1", "5000"); err != nil || v != "1" {
		t.Fatalf("WAIT 1 with a replica: %q, %v", v, err)
	}
	if v, _ := r.Command("GET", "d"); v != "4" {
		t.Fatalf("the replica has d = %q", v)
	}
}
