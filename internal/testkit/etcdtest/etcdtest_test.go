package etcdtest_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vesta-go/vesta/internal/testkit/etcdtest"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/proctest"
)

// timeout bounds one request of a test; a cluster with a quorum answers in
// milliseconds.
const timeout = 5 * time.Second

func put(t *testing.T, cli *clientv3.Client, k, v string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := cli.Put(ctx, k, v); err != nil {
		t.Fatalf("put %s on %v: %v", k, cli.Endpoints(), err)
	}
}

// get fails the test unless k is v (a linearizable read, or a serializable
// one from the member's own store with clientv3.WithSerializable()).
func get(t *testing.T, cli *clientv3.Client, k, v string, opts ...clientv3.OpOption) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r, err := cli.Get(ctx, k, opts...)
	if err != nil {
		t.Fatalf("get %s on %v: %v", k, cli.Endpoints(), err)
	}
	if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != v {
		t.Fatalf("get %s on %v: %v; want %q", k, cli.Endpoints(), r.Kvs, v)
	}
}

// status is m's Status, which must answer.
func status(t *testing.T, m *etcdtest.Member) *clientv3.StatusResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestClusterServes: three members on ports of their own, none etcd's
// defaults, in data dirs of their own, serve a put and a get, and still
// hold the key once all have been stopped and restarted.
func TestClusterServes(t *testing.T) {
	c := etcdtest.StartCluster(t, 3, etcdtest.Options{})
	seen := map[string]bool{}
	for _, m := range c.Members() {
		for _, u := range []string{m.ClientURL(), m.PeerURL(), m.DataDir()} {
			if seen[u] {
				t.Fatalf("%s shared by two members", u)
			}
			seen[u] = true
			if strings.HasSuffix(u, ":2379") || strings.HasSuffix(u, ":2380") {
				t.Fatalf("member %s on etcd's default port: %s", m.Name(), u)
			}
		}
		if m.ClientURL() != "http://"+m.Endpoint() || !m.Running() {
			t.Fatalf("member %s: client URL %s, endpoint %s, running %v", m.Name(), m.ClientURL(), m.Endpoint(), m.Running())
		}
	}
	if eps := c.Endpoints(); len(eps) != 3 || eps[1] != c.Member(1).Endpoint() {
		t.Fatalf("Endpoints %v", eps)
	}
	cli := c.Client(t)
	put(t, cli, "k", "v")
	get(t, cli, "k", "v")

	// Every member stopped, then restarted one after another: each
	// restart returns before a quorum runs again.
	for _, m := range c.Members() {
		m.Stop()
	}
	for _, m := range c.Members() {
		m.Restart()
	}
	c.WaitLeader()
	get(t, cli, "k", "v")
}

// TestKillLeader: a leader killed with SIGKILL is replaced by one of the
// others, which go on serving writes; restarted from its data dir, the
// killed member rejoins and holds what was written meanwhile.
func TestKillLeader(t *testing.T) {
	c := etcdtest.StartCluster(t, 3, etcdtest.Options{})
	old := c.WaitLeader()
	put(t, c.Client(t), "before", "1")
	dead := c.Member(old)
	dead.Kill()
	if dead.Running() {
		t.Fatal("running after Kill")
	}
	leader := c.WaitLeader(old)
	t.Logf("leader %s killed, %s elected", dead.Name(), c.Member(leader).Name())
	put(t, c.ClientOf(t, c.Others(old)...), "during", "2")

	dead.Restart()
	dead.WaitServing()
	// Serving implies the member applied everything committed before it
	// rejoined: a read from its own store has the write it missed.
	alone := c.ClientOf(t, dead)
	get(t, alone, "during", "2", clientv3.WithSerializable())
	get(t, alone, "before", "1", clientv3.WithSerializable())
	put(t, alone, "after", "3")
	if i := c.WaitLeader(); i == old {
		t.Logf("the restarted member %s leads again", dead.Name())
	}
}

// TestPauseResume: a leader stalled with SIGSTOP is deposed while the
// others serve writes; continued, it follows the new leader and catches
// up.
func TestPauseResume(t *testing.T) {
	c := etcdtest.StartCluster(t, 3, etcdtest.Options{})
	old := c.WaitLeader()
	p := c.Member(old)
	p.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := p.Status(ctx)
	cancel()
	if err == nil {
		t.Fatal("a paused member answered Status")
	}
	leader := c.WaitLeader(old)
	put(t, c.ClientOf(t, c.Others(old)...), "k", "paused")
	p.Resume()
	get(t, c.ClientOf(t, p), "k", "paused")
	if i := c.WaitLeader(); i != leader {
		t.Logf("leadership moved on from %s to %s after the resume", c.Member(leader).Name(), c.Member(i).Name())
	}
}

// TestWipe: a wiped cluster is a new one on the same endpoint, without the
// old keys.
// TestReplace: a member whose data is gone joins again under a new
// member ID and gets the cluster's data back, which it then serves from
// its own store; the cluster keeps serving throughout.
func TestReplace(t *testing.T) {
	c := etcdtest.StartCluster(t, 3, etcdtest.Options{})
	cli := c.Client(t)
	put(t, cli, "k", "v")
	before := status(t, c.Member(1))
	c.Replace(1)
	after := status(t, c.Member(1))
	if after.Header.MemberId == before.Header.MemberId {
		t.Errorf("member ID %x unchanged by Replace", after.Header.MemberId)
	}
	if after.Header.ClusterId != before.Header.ClusterId {
		t.Errorf("cluster ID %x after Replace; was %x", after.Header.ClusterId, before.Header.ClusterId)
	}
	get(t, c.ClientOf(t, c.Member(1)), "k", "v", clientv3.WithSerializable())
	put(t, cli, "k2", "v2")
	c.Member(1).Restart() // from its new data directory, as a member of the cluster
	c.Member(1).WaitServing()
	get(t, c.ClientOf(t, c.Member(1)), "k2", "v2", clientv3.WithSerializable())
}

func TestWipe(t *testing.T) {
	c := etcdtest.Start(t)
	cli := c.Client(t)
	put(t, cli, "k", "v")
	before := status(t, c.Member(0))
	c.Wipe()
	after := status(t, c.Member(0))
	if after.Header.ClusterId == before.Header.ClusterId {
		t.Errorf("cluster ID %x unchanged by Wipe", after.Header.ClusterId)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r, err := cli.Get(ctx, "k")
	if err != nil || len(r.Kvs) != 0 {
		t.Fatalf("get k after Wipe: %v, %v; want nothing", r, err)
	}
	if r.Header.Revision >= before.Header.Revision {
		t.Errorf("revision %d after Wipe; was %d", r.Header.Revision, before.Header.Revision)
	}
}

func TestMissingBinaryFailsPointingAtDeps(t *testing.T) {
	proctest.MissingBinary(t, "etcd", func(tb testing.TB) { etcdtest.Start(tb) })
}

// A member that cannot start fails the test naming it, with its log.
func TestFailedStartNamesMember(t *testing.T) {
	ports, err := proctest.FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	// m1's client port: its peer port binds first, so m0, started
	// before, is not kept waiting on a peer that accepts and never answers.
	taken, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2])))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	opt := etcdtest.Options{Members: []etcdtest.MemberOptions{
		{ClientPort: ports[0], PeerPort: ports[1]},
		{ClientPort: ports[2], PeerPort: ports[3]},
	}}
	msg := proctest.Failure(t, func(tb testing.TB) { etcdtest.StartCluster(tb, 2, opt) })
	for _, want := range []string{"etcd member m1", "exited at start", "address already in use"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message %q lacks %q", msg, want)
		}
	}
}

// TestInNamespaces: members on hosts of a test network, one each, reached
// through the hosts' Dial. A leader cut off from the others by Host.Drop
// loses the leadership and its quorum, the others elect a new leader and
// serve writes; healed, it rejoins and catches up.
func TestInNamespaces(t *testing.T) {
	n := netnstest.New(t)
	var hosts []*netnstest.Host
	var opt etcdtest.Options
	for i := range 3 {
		h := n.Host("etcd" + strconv.Itoa(i))
		hosts = append(hosts, h)
		// Fixed ports, each host has all of its own; not etcd's defaults,
		// so that a flag etcd ignored would show.
		opt.Members = append(opt.Members, etcdtest.MemberOptions{
			Bind: h.Addr.String(), ClientPort: 12379, PeerPort: 12380, Wrap: h.Wrap(), Dial: h.Dial})
	}
	c := etcdtest.StartCluster(t, 3, opt)
	for i, m := range c.Members() {
		if want := net.JoinHostPort(hosts[i].Addr.String(), "12379"); m.Endpoint() != want {
			t.Fatalf("member %s on %s; want %s", m.Name(), m.Endpoint(), want)
		}
	}
	put(t, c.Client(t), "before", "1")

	old := c.WaitLeader()
	cut := c.Member(old)
	hosts[old].Drop()
	leader := c.WaitLeader(old)
	t.Logf("leader %s cut off, %s elected", cut.Name(), c.Member(leader).Name())
	put(t, c.ClientOf(t, c.Others(old)...), "during", "2")
	// Cut off, it steps down once an election timeout passes without a
	// quorum, and refuses writes.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cut.Status(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Status of the member cut off, through its host: %v", err)
		}
		if st.Leader != st.Header.MemberId {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member %s cut off still leads after 10s", cut.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
	alone := c.ClientOf(t, cut)
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), 2*time.Second)
	_, err := alone.Put(ctx, "cut", "x")
	cancel()
	if err == nil {
		t.Fatal("a member cut off from its quorum accepted a write")
	}

	hosts[old].Heal()
	get(t, alone, "during", "2")
	put(t, alone, "after", "3")
}
