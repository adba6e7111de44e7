package redistest_test

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
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

// TestReplicatedOnHosts runs a group on test hosts, a master with two
// replicas and three Sentinels, then cuts the master and one replica off
// from the rest: the Sentinels promote the other replica at a higher
// config epoch, while the old master, which hears of no failover, still
// acts as one.
func TestReplicatedOnHosts(t *testing.T) {
	n := netnstest.New(t)
	on := func(name string, port int) (*netnstest.Host, redistest.Options) {
		h := n.Host(name)
		return h, redistest.Options{Bind: h.Addr.String(), Port: port, Wrap: h.Wrap(), Dial: h.Dial}
	}
	m1, o1 := on("m1", 6379)
	m2, o2 := on("m2", 6379)
	m3, o3 := on("m3", 6379)
	grp := redistest.Group{Master: o1, Replicas: []redistest.Options{o2, o3}}
	var sentinels []*netnstest.Host
	for _, name := range []string{"s1", "s2", "s3"} {
		h, o := on(name, 26379)
		sentinels = append(sentinels, h)
		grp.Sentinels = append(grp.Sentinels, o)
	}
	g := redistest.StartReplicatedWith(t, grp)
	if len(g.Replicas) != 2 || g.Replica != g.Replicas[0] {
		t.Fatalf("%d replicas, Replica %v; want 2, the first", len(g.Replicas), g.Replica)
	}
	if want := net.JoinHostPort(sentinels[0].Addr.String(), "26379"); g.SentinelAddrs()[0] != want {
		t.Errorf("SentinelAddrs %v; want %s first", g.SentinelAddrs(), want)
	}
	epoch, err := g.ConfigEpoch()
	if addr, err2 := g.MasterAddr(); err != nil || err2 != nil || addr != g.Master.Addr() {
		t.Fatalf("Sentinel names master %q at epoch %d (%v, %v); want %s", addr, epoch, err, err2, g.Master.Addr())
	}

	netnstest.Split([]*netnstest.Host{m1, m3}, append([]*netnstest.Host{m2}, sentinels...))
	t.Logf("promoted in %v", g.WaitPromoted(g.Replicas[0]))
	views := g.Views()
	t.Logf("after the cut: %v", views)
	if after, err := g.ConfigEpoch(); err != nil || after <= epoch {
		t.Errorf("config epoch %d after the failover (%v); want above %d", after, err, epoch)
	}
	mustDo(t, g.Replicas[0], "OK", "SET", "promoted", "1")
	// The old master, cut off, still acts as one and takes writes.
	if info, err := g.Master.Do("INFO", "replication"); err != nil || !strings.Contains(info, "role:master") {
		t.Errorf("the old master cut off: %v\n%s", err, info)
	}
	mustDo(t, g.Master, "OK", "SET", "isolated", "1")
}
