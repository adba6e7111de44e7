package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/etcdtest"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/etcdlease"
)

// The servers' etcd lease: renewed every second, fenced 2s after the last
// renewal sent (the margin is 1s), so that a takeover takes seconds.
const (
	etcdTTL    = 3 * time.Second
	etcdPrefix = "integration" // each subtest has a cluster of its own
	etcdOneID  = "1023-1023"   // takeoverMachine alone: the range of a holder and its taker
)

// Phases of TestEtcdPartition's leader-killed (its takeovers use
// TestPartition's).
const (
	leaderServes = iota // the first leader serves
	leaderKilled        // it was killed; the others elect one
)

// TestEtcdPartition runs `vesta serve` on etcd leases through real faults
// of a three-member etcd cluster, every process on a test host (a network
// namespace), the servers under load and every ID they answer in the
// ledger: no duplicate.
//
// In the takeovers, server A holds machine 1023, the one ID of the range,
// and is cut off from the cluster's quorum: with one member, {A, m},
// silently (Drop) or loudly (link down) — A and m share one host — or by
// a kill -9 of the one member A talks to. m is a follower, so that the
// others keep their leader and A's etcd lease expires a TTL after the
// last keepalive the leader got from A, with no election to extend it: the
// margin of A's deadline is all there is. Server B, launched again and
// again (each launch finds the range full and exits), takes the ID once
// A's lease key has left etcd. A must answer lease_lost, and issue its
// last ID, before that: before any claim of its ID could succeed; B's IDs
// all lie above A's. Healed (the member restarted from its data dir), A
// reaches etcd and finds its ID taken; it issues nothing while B holds it,
// and once B stops it leases the ID again and continues above B.
//
// In leader-killed two servers lease the two IDs of their range and the
// leader is killed: the others elect a leader, which keeps every etcd
// lease, so the servers keep their machine IDs (no re-acquisition) and
// issue on; the test logs how long issuing stalled.
func TestEtcdPartition(t *testing.T) {
	t.Run("minority silent", func(t *testing.T) {
		etcdMinority(t, func(h *netnstest.Host) { h.Drop() })
	})
	t.Run("minority loud", func(t *testing.T) {
		etcdMinority(t, func(h *netnstest.Host) { h.LinkDown() })
	})
	t.Run("leader killed", etcdLeaderKilled)
	t.Run("holder's member killed", etcdMemberKilled)
}

// etcdMinority: A runs beside a follower's member and cut cuts that host
// off from all others.
func etcdMinority(t *testing.T, cut func(*netnstest.Host)) {
	n := netnstest.New(t)
	hosts, c := etcdOnHosts(t, n)
	f := etcdFollower(t, c)
	env := partitionEnv(t, etcdOneID, c.Members())
	a := launchWrapped(t, "A", env, hosts[f].Wrap())
	waitAll(t, a)
	etcdTakeover(t, takeoverFault{
		a: a, ha: hosts[f], hb: n.Host("b"), envB: env,
		quorum: c.ClientOf(t, c.Others(f)...),
		what:   fmt.Sprintf("{A, %s} cut off", c.Member(f).Name()),
		cut:    func() { logLeader(t, c); cut(hosts[f]) },
		heal:   func() { hosts[f].Heal() },
	})
}

// etcdMemberKilled: A talks to one follower only, B to the others; the
// follower is killed, and restarted from its data dir once B serves.
func etcdMemberKilled(t *testing.T) {
	n := netnstest.New(t)
	_, c := etcdOnHosts(t, n)
	f := etcdFollower(t, c)
	m := c.Member(f)
	ha, hb := n.Host("a"), n.Host("b")
	a := launchWrapped(t, "A", partitionEnv(t, etcdOneID, []*etcdtest.Member{m}), ha.Wrap())
	waitAll(t, a)
	quorum := c.ClientOf(t, c.Others(f)...)
	key, _, _ := etcdlease.Keys(etcdPrefix, takeoverMachine)
	etcdTakeover(t, takeoverFault{
		a: a, ha: ha, hb: hb, envB: partitionEnv(t, etcdOneID, c.Others(f)),
		quorum: quorum,
		what:   fmt.Sprintf("A's only member %s killed (-9)", m.Name()),
		cut:    func() { logLeader(t, c); m.Kill() },
		heal: func() {
			restart := time.Now()
			m.Restart()
			m.WaitServing()
			// Rejoined, it has applied what the quorum committed while it
			// was down: B's claim among it.
			own, _ := keyRevision(t, c.ClientOf(t, m), key, clientv3.WithSerializable())
			now, _ := keyRevision(t, quorum, key)
			if own != now {
				t.Errorf("%s, restarted, has %s at create revision %d; the quorum at %d", m.Name(), key, own, now)
			}
			t.Logf("%s restarted from its data dir: serving %v later, with B's lease key (create revision %d)",
				m.Name(), time.Since(restart).Round(time.Millisecond), own)
		},
	})
}

// takeoverFault is how etcdTakeover cuts the holder off.
type takeoverFault struct {
	a      *proc           // the holder, serving machine 1023
	ha, hb *netnstest.Host // A's host (to dial A); the host B runs on
	envB   map[string]string
	quorum *clientv3.Client // the test's, of members that keep a quorum
	what   string
	cut    func() // cuts A off from the quorum
	heal   func() // undoes cut
}

// etcdTakeover cuts tf.a off under load and has B take its ID; see
// TestEtcdPartition.
func etcdTakeover(t *testing.T, tf takeoverFault) {
	a := tf.a
	if a.Machine != takeoverMachine {
		t.Fatalf("A leased machine %d; want %d", a.Machine, takeoverMachine)
	}
	key, _, _ := etcdlease.Keys(etcdPrefix, takeoverMachine)
	rev, seen := keyRevision(t, tf.quorum, key)

	led := newLedger(core.MinGranularity)
	main, late := newLoad(20*time.Second), newLoad(20*time.Second)
	phase := func() int { return int(main.phase.Load()) }
	la := loadHost(t, main, led, tf.ha, a, phase, func(p int) bool { return p != partJoined })
	waittest.Until(t, "A's first 20,000 IDs", func() bool { return la.ids[partJoined].Load() >= 20_000 })

	main.setPhase(partCut)
	tf.cut()
	cutAt := time.Now()
	at := func(tm time.Time) string { return sinceEvent("cut", cutAt, tm.UnixNano()) }
	// B is launched until it serves while the test watches A's key leave
	// etcd, so that B claims as soon as it can.
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	leftCh := make(chan keyLeft, 1)
	go func() { leftCh <- awaitKeyLeft(ctx, tf.quorum, key, rev, seen) }()
	b := serveWhenFree(t, "B", tf.envB, tf.hb)
	left := <-leftCh
	if left.err != nil {
		t.Fatal(left.err)
	}
	if b.Machine != takeoverMachine {
		t.Fatalf("B leased machine %d; want %d, A's", b.Machine, takeoverMachine)
	}
	claimed := leasedAt(t, b)
	// B may answer lease_lost or unavailable only once the cut is healed:
	// a member rejoining may stall the cluster past one renewal's timeout
	// on a loaded machine (B then fences until a renewal succeeds: safe,
	// and not what this test is about); before that, B serves every call.
	lb := loadHost(t, late, led, tf.hb, b, phase, func(p int) bool { return p == partHealed })
	waittest.Until(t, "B's first 10,000 IDs, A still cut off", func() bool { return lb.ids[partCut].Load() >= 10_000 })

	main.setPhase(partHealed)
	healAt := time.Now()
	tf.heal()
	// A reaches etcd again and finds its ID taken: it may not issue.
	refused, err := a.waitRecord(startTimeout, func(r record) bool {
		return r.str("msg") == "machineid: re-acquiring a lease failed; retrying" && strings.Contains(r.str("err"), machineid.ErrRangeFull.Error())
	})
	if err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "A's answers after it found its ID taken", func() bool { return la.fenced(partHealed) > 0 })
	late.stop()
	late.requireNoErrors(t)
	main.setPhase(partRejoined)
	stopAt := time.Now()
	stopAll(t, b)
	waittest.Until(t, "A issuing after B stopped", func() bool { return la.ids[partRejoined].Load() > 0 })
	main.stop()
	main.requireNoErrors(t)
	led.check(t)

	const m = takeoverMachine
	_, hi0 := led.keyRange(fmt.Sprintf("p%d/A/", partJoined))
	_, hi1 := led.keyRange(fmt.Sprintf("p%d/A/", partCut))
	loB1, hiB1 := led.keyRange(fmt.Sprintf("p%d/B/", partCut))
	loB2, hiB2 := led.keyRange(fmt.Sprintf("p%d/B/", partHealed))
	loAfter, _ := led.keyRange(fmt.Sprintf("p%d/A/", partRejoined))
	lastA := max(hi0[m], hi1[m])
	firstB, lastB := loB1[m], max(hiB1[m], hiB2[m])
	if v, ok := loB2[m]; ok && v < firstB {
		firstB = v
	}
	instant := func(key uint64) time.Time { return fields{typ: 1, time: key >> 10}.instant() }
	lastEnd := instant(lastA).Add(time.Millisecond) // A issued its last ID by then
	firstLost := time.Unix(0, la.firstLost.Load())

	t.Logf("%s at %s; A's lease key left etcd between %s and %s; B's claim logged at %s",
		tf.what, cutAt.UTC().Format(time.RFC3339Nano), at(left.seen), at(left.missed), at(claimed))
	t.Logf("A: last ID by %s, lease_lost from %s (%d lease_lost, %d unavailable answers while cut off); B's first ID at %s",
		at(lastEnd), sinceEvent("cut", cutAt, la.firstLost.Load()), la.leaseLost[partCut].Load(), la.unavailable[partCut].Load(), at(instant(firstB)))
	t.Logf("healed at %s; A found its ID taken at %s; B stopped (SIGTERM) at %s; A's first ID after it at %s",
		at(healAt), at(recordTime(t, refused)), at(stopAt), at(instant(loAfter[m])))
	t.Logf("A's IDs joined, cut, healed, rejoined: %d, %d, %d, %d; B's: %d", la.ids[partJoined].Load(), la.ids[partCut].Load(),
		la.ids[partHealed].Load(), la.ids[partRejoined].Load(), lb.ids[partCut].Load()+lb.ids[partHealed].Load())

	// Fenced in time: A's lease fenced it, and its last ID was issued,
	// while its key was still in etcd, so before any claim of its ID.
	if la.firstLost.Load() == 0 || !firstLost.Before(left.seen) {
		t.Errorf("A answered lease_lost first at %s; its lease key was still in etcd at %s", sinceEvent("cut", cutAt, la.firstLost.Load()), at(left.seen))
	}
	if lastEnd.After(left.seen) {
		t.Errorf("A issued an ID in the millisecond ending %s, after the last read that found its lease key in etcd (%s)", at(lastEnd), at(left.seen))
	}
	if !lastEnd.Before(claimed) {
		t.Errorf("A issued an ID in the millisecond ending %s, not before B logged its claim (%s)", at(lastEnd), at(claimed))
	}
	if n := la.ids[partHealed].Load(); n > 0 {
		t.Errorf("A issued %d IDs while B held its machine ID", n)
	}
	switch {
	case firstB == 0:
		t.Errorf("B issued no ID")
	case firstB <= lastA:
		t.Errorf("B's first ID (time %d, seq %d) is not above A's last (time %d, seq %d)", firstB>>10, firstB&1023, lastA>>10, lastA&1023)
	case loAfter[m] <= lastB:
		t.Errorf("A's first ID after B stopped (key %d) is not above B's last (key %d)", loAfter[m], lastB)
	}
	stopAll(t, a)
}

// etcdLeaderKilled: see TestEtcdPartition.
func etcdLeaderKilled(t *testing.T) {
	n := netnstest.New(t)
	_, c := etcdOnHosts(t, n)
	env := partitionEnv(t, "1022-1023", c.Members())
	hosts := []*netnstest.Host{n.Host("s1"), n.Host("s2")}
	servers := []*proc{launchWrapped(t, "s1", env, hosts[0].Wrap()), launchWrapped(t, "s2", env, hosts[1].Wrap())}
	waitAll(t, servers...)

	led := newLedger(core.MinGranularity)
	ld := newLoad(20 * time.Second)
	phase := func() int { return int(ld.phase.Load()) }
	var loads []*hostLoad
	for i, s := range servers {
		loads = append(loads, loadHost(t, ld, led, hosts[i], s, phase, func(p int) bool { return p == leaderKilled }))
	}
	waittest.Until(t, "10,000 IDs of each server", func() bool {
		return loads[0].ids[leaderServes].Load() >= 10_000 && loads[1].ids[leaderServes].Load() >= 10_000
	})

	old := c.WaitLeader()
	ld.setPhase(leaderKilled)
	c.Member(old).Kill()
	killAt := time.Now()
	next := c.WaitLeader(old)
	elected := time.Now()
	t.Logf("leader %s killed (-9); %s leads %v later", c.Member(old).Name(), c.Member(next).Name(), elected.Sub(killAt).Round(time.Millisecond))
	// Watched for a few lease TTLs past the election: a lease that etcd
	// dropped, or a server that could not renew through another member,
	// shows within one.
	waittest.Until(t, "each server issuing for 3 lease TTLs after the election", func() bool {
		return time.Since(elected) >= 3*etcdTTL &&
			loads[0].lastIDs.Load() > elected.UnixNano() && loads[1].lastIDs.Load() > elected.UnixNano()
	})
	ld.stop()
	ld.requireNoErrors(t)
	led.check(t)

	for i, s := range servers {
		l := loads[i]
		fenced := "never fenced"
		if l.firstFenced.Load() != 0 {
			fenced = fmt.Sprintf("fenced from %s (%d lease_lost, %d unavailable answers)",
				sinceEvent("kill", killAt, l.firstFenced.Load()), l.leaseLost[leaderKilled].Load(), l.unavailable[leaderKilled].Load())
		}
		t.Logf("%s (machine %d): longest stall between IDs %v after the kill, %v before; %s; %d IDs before, %d after",
			s.name, s.Machine, time.Duration(l.gap[leaderKilled].Load()).Round(time.Millisecond),
			time.Duration(l.gap[leaderServes].Load()).Round(time.Millisecond), fenced,
			l.ids[leaderServes].Load(), l.ids[leaderKilled].Load())
		for _, r := range s.records() {
			when := func() string { return sinceEvent("kill", killAt, recordTime(t, r).UnixNano()) }
			switch msg := r.str("msg"); {
			case strings.HasPrefix(msg, "machineid: re-acquir"):
				t.Errorf("%s lost its lease over a leader change: %q at %s: %s", s.name, msg, when(), r.str("err"))
			case msg == "machineid: lease renewed after its deadline; it was never lost", msg == "machineid: issuing resumed":
				t.Logf("%s at %s: %s", s.name, when(), msg)
			}
		}
	}
	stopAll(t, servers...)
}

// etcdOnHosts starts a cluster of three members, each on a test host of
// its own.
func etcdOnHosts(t testing.TB, n *netnstest.Net) ([]*netnstest.Host, *etcdtest.Cluster) {
	t.Helper()
	var hosts []*netnstest.Host
	var opt etcdtest.Options
	for i := range 3 {
		h := n.Host(fmt.Sprintf("e%d", i))
		hosts = append(hosts, h)
		opt.Members = append(opt.Members, etcdtest.MemberOptions{
			Bind: h.Addr.String(), ClientPort: 12379, PeerPort: 12380, Wrap: h.Wrap(), Dial: h.Dial})
	}
	return hosts, etcdtest.StartCluster(t, len(hosts), opt)
}

// etcdFollower is the index of a member that does not lead.
func etcdFollower(t testing.TB, c *etcdtest.Cluster) int {
	t.Helper()
	return (c.WaitLeader() + 1) % len(c.Members())
}

// logLeader logs which member leads just before the cut: A's member was
// chosen a follower, so that no election extends A's lease, and the
// leadership may have moved since.
func logLeader(t testing.TB, c *etcdtest.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	i, err := c.Leader(ctx)
	if err != nil {
		t.Logf("before the cut: %v", err)
		return
	}
	t.Logf("%s leads before the cut", c.Member(i).Name())
}

// partitionEnv is the environment of a server leasing from rng in etcd,
// through the members ms, with min-granularity IDs (their time fields
// compare with instants).
func partitionEnv(t testing.TB, rng string, ms []*etcdtest.Member, kv ...string) map[string]string {
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.Endpoint())
	}
	return etcdEnv(t, eps, append([]string{
		"VESTA_MACHINE_ETCD_LEASE_TTL", etcdTTL.String(),
		"VESTA_MACHINE_ETCD_KEY_PREFIX", etcdPrefix,
		"VESTA_MACHINE_ETCD_SERVER_RANGE", rng,
		"VESTA_ID_TYPE", "min-granularity",
	}, kv...)...)
}

// keyRevision reads key through cli and returns its create revision and
// when the read was sent, failing the test if it is missing.
func keyRevision(t testing.TB, cli *clientv3.Client, key string, opts ...clientv3.OpOption) (int64, time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sent := time.Now()
	resp, err := cli.Get(ctx, key, opts...)
	if err != nil {
		t.Fatalf("reading %s from %v: %v", key, cli.Endpoints(), err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("%s missing from %v", key, cli.Endpoints())
	}
	return resp.Kvs[0].CreateRevision, sent
}

// keyLeft is when a version of a key left etcd: after seen, before missed.
type keyLeft struct {
	seen, missed time.Time
	err          error
}

// awaitKeyLeft reads key through cli (linearizably, every 5 ms) until it
// no longer holds the version created at rev: deleted, or created anew by
// another claim. A read that finds it found it at some instant after it
// was sent, so the version left etcd after seen, the send time of the last
// such read (seen is one, of the caller's); it left before missed, when
// the first read that did not find it returned. Reads that fail (no
// leader, say) are retried until ctx ends.
func awaitKeyLeft(ctx context.Context, cli *clientv3.Client, key string, rev int64, seen time.Time) keyLeft {
	for {
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := cli.Get(rctx, key)
		cancel()
		switch {
		case ctx.Err() != nil:
			return keyLeft{err: fmt.Errorf("%s still at create revision %d in etcd when the wait ended: %w", key, rev, ctx.Err())}
		case err != nil:
		case len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != rev:
			return keyLeft{seen: seen, missed: time.Now()}
		default:
			seen = sent
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// leasedAt is when p logged its claim of a lease.
func leasedAt(t testing.TB, p *proc) time.Time {
	t.Helper()
	r, err := p.waitRecord(time.Second, func(r record) bool { return strings.HasPrefix(r.str("msg"), "machineid: leased") })
	if err != nil {
		t.Fatal(err)
	}
	return recordTime(t, r)
}

// recordTime is the time of a log record.
func recordTime(t testing.TB, r record) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, r.str("time"))
	if err != nil {
		t.Fatalf("a log record's time: %v: %v", err, r)
	}
	return tm
}
