package integration_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// Phases of TestSentinelSplitBrain.
const (
	splitJoined = iota // A holds the ID, every host reaches every other
	splitCut           // A and the old master cut off; B not serving yet
	splitBoth          // B serves the ID; A still cut off
)

// splitOverlap is how long B serves while A is cut off: several of A's
// lease TTLs, so that a holder that is never fenced cannot go unseen.
const splitOverlap = 10 * time.Second

// TestSentinelSplitBrain splits a Sentinel-managed Redis under a server
// that holds a machine ID: every process on a test host of its own,
// servers A and B sharing one configuration (the Sentinels' addresses, a
// range of the one machine ID 1023, a 3s lease, min_replicas 0). A leases
// the ID from master M1 and issues under load; then {A, M1} are cut off
// silently from {the three Sentinels, replica M2, B}. The Sentinels promote
// M2, where A's lease expires; B claims the ID there, waits out the
// quarantine and serves while A, cut off, is still loaded. A keeps
// reaching M1, which still acts as a master and takes its renewals and
// marks, but no Sentinel names M1 any more: A may not count them. Every ID
// of both goes into the ledger: no duplicate, A issues nothing once B
// serves, and B issues above everything A issued.
//
// two-replicas-split has a replica on each side (M3 with A and M1), so
// that M1's writes still reach a replica.
func TestSentinelSplitBrain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int
	}{
		{"one-replica", 1},
		{"two-replicas-split", 2},
	} {
		t.Run(tc.name, func(t *testing.T) { splitBrain(t, tc.replicas) })
	}
}

func splitBrain(t *testing.T, replicas int) {
	n := netnstest.New(t)
	// A's side of the cut, and the other: the old master and, with two
	// replicas, the second with A; the first replica and the Sentinels
	// with B.
	m1, m2 := n.Host("m1"), n.Host("m2")
	near, far := []*netnstest.Host{m1}, []*netnstest.Host{m2}
	grp := redistest.Group{Master: redisOn(m1, 6379), Replicas: []redistest.Options{redisOn(m2, 6379)}}
	if replicas == 2 {
		m3 := n.Host("m3")
		near = append(near, m3)
		grp.Replicas = append(grp.Replicas, redisOn(m3, 6379))
	}
	for i := range 3 {
		h := n.Host(fmt.Sprintf("s%d", i+1))
		far = append(far, h)
		grp.Sentinels = append(grp.Sentinels, redisOn(h, 26379))
	}
	ha, hb := n.Host("a"), n.Host("b")
	near, far = append(near, ha), append(far, hb)
	g := redistest.StartReplicatedWith(t, grp)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Sentinels: %v\nlogs:\n%s", g.Views(), g.Logs())
		}
	})
	epoch0, err := g.ConfigEpoch()
	if err != nil {
		t.Fatal(err)
	}
	rc1 := redisClientVia(t, g.Master.Addr(), m1.Dial)
	rc2 := redisClientVia(t, g.Replica.Addr(), m2.Dial)

	const ttl = 3 * time.Second
	env := sentinelEnv(t, g, ttl, "VESTA_ID_TYPE", "min-granularity")
	g.Master.Established(env["VESTA_MACHINE_REDIS_KEY_PREFIX"]) // A starts at once; B, after the failover, does not
	leaseKey, _ := redislease.Keys(env["VESTA_MACHINE_REDIS_KEY_PREFIX"], takeoverMachine)
	a := launchWrapped(t, "A", env, ha.Wrap())
	waitAll(t, a)
	if a.Machine != takeoverMachine {
		t.Fatalf("A leased machine %d; want %d", a.Machine, takeoverMachine)
	}

	led := newLedger(core.MinGranularity)
	ld := newLoad(20 * time.Second)
	phase := func() int { return int(ld.phase.Load()) }
	la := loadHost(t, ld, led, ha, a, phase, func(p int) bool { return p != splitJoined })
	waittest.Until(t, "A's first 20,000 IDs", func() bool { return la.ids[splitJoined].Load() >= 20_000 })

	ld.setPhase(splitCut)
	netnstest.Split(near, far)
	cutAt := time.Now()
	since := func(unixNano int64) string { return sinceEvent("cut", cutAt, unixNano) }
	promoted := g.WaitPromoted(g.Replica)
	epoch1, _ := g.ConfigEpoch()
	t.Logf("cut {%s} off from {%s}; a majority of the Sentinels named M2 %v later (config epoch %d, was %d)",
		names(near), names(far), promoted.Round(time.Millisecond), epoch1, epoch0)
	if expiry := awaitExpiry(t, rc2, leaseKey, 4*ttl); !expiry.IsZero() {
		t.Logf("A's lease expired on M2 at cut+%v", expiry.Sub(cutAt).Round(time.Millisecond))
	} else {
		t.Logf("A's lease had expired on M2 by then")
	}

	b := serveWhenFree(t, "B", env, hb)
	bAt := time.Now()
	if b.Machine != takeoverMachine {
		t.Fatalf("B leased machine %d; want %d, A's", b.Machine, takeoverMachine)
	}
	ld.setPhase(splitBoth)
	lb := loadHost(t, ld, led, hb, b, phase, nil)
	waittest.Until(t, fmt.Sprintf("B serving for %v", splitOverlap), func() bool {
		return time.Since(bAt) >= splitOverlap && lb.ids[splitBoth].Load() > 0
	})
	ld.stop()
	// A's lease where each master has it, for the report: the old master
	// is the one A's renewals still reach.
	onM1, _ := rc1.PExpireTime(t.Context(), leaseKey).Result()
	onM2, _ := rc2.PExpireTime(t.Context(), leaseKey).Result()
	ld.requireNoErrors(t)

	t.Logf("B serves from cut+%v; A's IDs joined, cut and beside B: %d, %d, %d; B's: %d",
		bAt.Sub(cutAt).Round(time.Millisecond), la.ids[splitJoined].Load(), la.ids[splitCut].Load(), la.ids[splitBoth].Load(), lb.ids[splitBoth].Load())
	t.Logf("A's lease_lost answers cut and beside B: %d, %d (unavailable: %d, %d); first at %s, last IDs at %s",
		la.leaseLost[splitCut].Load(), la.leaseLost[splitBoth].Load(), la.unavailable[splitCut].Load(), la.unavailable[splitBoth].Load(),
		since(la.firstFenced.Load()), since(la.lastIDs.Load()))
	t.Logf("at the end, machine %d's lease key expires on M1 at %s, on M2 at %s", takeoverMachine, msTime(onM1.Milliseconds()), msTime(onM2.Milliseconds()))
	led.check(t)
	if n := la.ids[splitBoth].Load(); n > 0 {
		t.Errorf("A issued %d IDs of machine %d while B served it", n, takeoverMachine)
	}
	_, hiA := led.keyRange(fmt.Sprintf("p%d/A/", splitJoined))
	_, hiCut := led.keyRange(fmt.Sprintf("p%d/A/", splitCut))
	_, hiBoth := led.keyRange(fmt.Sprintf("p%d/A/", splitBoth))
	loB, _ := led.keyRange(fmt.Sprintf("p%d/B/", splitBoth))
	lastA := max(hiA[takeoverMachine], hiCut[takeoverMachine], hiBoth[takeoverMachine])
	if firstB := loB[takeoverMachine]; firstB <= lastA {
		t.Errorf("B's first ID (time %d, seq %d) is not above A's last (time %d, seq %d)", firstB>>10, firstB&1023, lastA>>10, lastA&1023)
	}

	stopAll(t, b)
	// A, fenced, cannot save its final mark: its exit code says so, which
	// is not what this test is about.
	a.signal(syscall.SIGTERM)
	t.Logf("A exited with %d after SIGTERM", a.waitExit())
}

// serveWhenFree launches a server on host h until one serves, and returns
// it: one that finds every machine ID of its range leased exits, and is
// launched again 50 ms later, within startTimeout in all.
func serveWhenFree(t testing.TB, name string, env map[string]string, h *netnstest.Host) *proc {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for try := 1; ; try++ {
		p := launchWrapped(t, name, env, h.Wrap())
		err := p.waitServing()
		if err == nil {
			if try > 1 {
				t.Logf("%s: launches 1-%d found the range full; launch %d serves", name, try-1, try)
			}
			return p
		}
		if p.running() || !strings.Contains(p.output(), machineid.ErrRangeFull.Error()) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sinceEvent says when unixNano (a hostLoad instant, 0 for none) came,
// relative to an event at at: "cut+1.5s".
func sinceEvent(event string, at time.Time, unixNano int64) string {
	if unixNano == 0 {
		return "never"
	}
	d := time.Unix(0, unixNano).Sub(at).Round(time.Millisecond)
	if d < 0 {
		return event + "-" + (-d).String()
	}
	return event + "+" + d.String()
}

func names(hosts []*netnstest.Host) string {
	var out []string
	for _, h := range hosts {
		out = append(out, h.Name)
	}
	return strings.Join(out, ", ")
}
