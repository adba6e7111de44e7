package redistest_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/netnstest"
	"github.com/vesta-go/vesta/internal/redistest"
)

// TestFailoverLosesWrites: a write the master acknowledged after
// replication was paused is missing on the replica Sentinel promotes; one
// written before is there.
func TestFailoverLosesWrites(t *testing.T) {
	g := redistest.StartReplicated(t)
	if addr, err := g.MasterAddr(); err != nil || addr != g.Master.Addr() {
		t.Fatalf("Sentinel names master %q, %v; want %s", addr, err, g.Master.Addr())
	}
	if len(g.SentinelAddrs()) != 3 {
		t.Fatalf("Sentinels %v; want 3", g.SentinelAddrs())
	}
	mustDo(t, g.Master, "OK", "SET", "before", "1")
	// WAIT 1: the replica has it.
	mustDo(t, g.Master, "1", "WAIT", "1", "5000")
	g.PauseReplication()
	mustDo(t, g.Master, "OK", "SET", "after", "1")
	mustDo(t, g.Master, "0", "WAIT", "1", "200")
	took := g.Failover()
	t.Logf("failover took %v", took)
	if took > 10*time.Second {
		t.Logf("Sentinel logs:\n%s", g.Logs())
	}
	if addr, err := g.MasterAddr(); err != nil || addr != g.Replica.Addr() {
		t.Fatalf("after the failover Sentinel names master %q, %v; want the replica %s", addr, err, g.Replica.Addr())
	}
	mustDo(t, g.Replica, "1", "EXISTS", "before")
	mustDo(t, g.Replica, "0", "EXISTS", "after")
	mustDo(t, g.Replica, "OK", "SET", "writable", "1")
}

// TestInNamespace runs a server on a test host's address, reached from
// inside its namespace, and restarts it empty after a kill.
func TestInNamespace(t *testing.T) {
	h := netnstest.New(t).Host("redis")
	s := redistest.StartWith(t, redistest.Options{Bind: h.Addr.String(), Port: 6379, Wrap: h.Wrap(), Dial: h.Dial})
	if want := net.JoinHostPort(h.Addr.String(), strconv.Itoa(6379)); s.Addr() != want {
		t.Errorf("Addr %s; want %s", s.Addr(), want)
	}
	mustDo(t, s, "OK", "SET", "k", "v")
	s.Kill()
	s.Restart()
	mustDo(t, s, "0", "EXISTS", "k")
}

func mustDo(t *testing.T, s *redistest.Server, want string, args ...string) {
	t.Helper()
	got, err := s.Do(args...)
	if err != nil || got != want {
		t.Fatalf("%v: %q, %v; want %q", args, got, err, want)
	}
}
