package integration_test

import (
	"context"
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

// TestMixedTimingAfterDataLoss replays the case that made the takeover
// quarantine count machineid.MaxRedisReach rather than the claimant's own
// settings (docs/design/redis-data-loss.md#takeover-quarantine). Redis, A and B each run on a test host of
// their own. A leases the range's one ID with a 15s lease TTL and a 10s
// time-guard window and issues under load; right after one of its
// renewals it is cut off from Redis silently (its callers still reach it),
// and Redis is restarted empty, losing the lease, the mark and the fleet
// record. B, with a 1s lease TTL, then claims the same ID on the empty
// Redis while A still issues until its own deadline. Reckoned from B's own
// timing the quarantine lasted 1.2 s and B re-issued tens of thousands of
// A's IDs; now B waits the bound, and the ledger of every ID finds no
// repeat.
func TestMixedTimingAfterDataLoss(t *testing.T) {
	n := netnstest.New(t)
	hr, ha, hb := n.Host("redis"), n.Host("a"), n.Host("b")
	rds := redistest.StartWith(t, redisOn(hr, 6379))
	rc := redisClientVia(t, rds.Addr(), hr.Dial)
	prefix := t.Name()
	rds.Established(prefix) // A starts at once; B, after the loss, does not
	common := []string{"VESTA_ID_TYPE", "min-granularity", "VESTA_MACHINE_SERVER_RANGE", "1023-1023",
		"VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW", takeoverSkew.String()}
	envA := serverEnv(t, rds, prefix, 15*time.Second, append(common, "VESTA_TIME_GUARD_WINDOW", "10s")...)
	envB := serverEnv(t, rds, prefix, time.Second, common...)

	a := launchWrapped(t, "a", envA, ha.Wrap())
	waitAll(t, a)
	led := newLedger(core.MinGranularity)
	ld := newLoad(90 * time.Second)
	phase := func() int { return int(ld.phase.Load()) }
	loadHost(t, ld, led, ha, a, phase, func(p int) bool { return p != partJoined })
	time.Sleep(time.Second)

	// Cut A off right after a renewal, when its lease has the longest
	// to run: it issues on until its deadline, ten seconds on.
	leaseKey, _ := redislease.Keys(prefix, core.MachineID(a.Machine))
	waittest.Until(t, "a renewal of A's lease", func() bool {
		ms, err := rc.PTTL(context.Background(), leaseKey).Result()
		return err == nil && ms > 14800*time.Millisecond
	})
	ld.setPhase(partCut)
	ha.Drop(hr)
	cutAt := time.Now()
	rds.KillAndRestart(nil)
	t.Logf("A (machine %d) cut off right after a renewal; Redis restarted empty %v later", a.Machine, time.Since(cutAt).Round(time.Millisecond))

	b := launchWrapped(t, "b", envB, hb.Wrap())
	if err := b.waitServing(); err != nil {
		t.Fatal(err)
	}
	if b.Machine != a.Machine {
		t.Fatalf("B leased machine %d; want A's %d, the only one", b.Machine, a.Machine)
	}
	waited := time.Since(cutAt)
	q, err := b.waitRecord(time.Second, func(r record) bool { return quarantineLine.MatchString(r.str("msg")) })
	if err != nil {
		t.Fatalf("B served without a quarantine: %v", err)
	}
	t.Logf("B: %s (wait %s); serving %v after the cut", q.str("msg"), q.str("wait"), waited.Round(time.Millisecond))
	late := newLoad(60 * time.Second)
	loadHost(t, late, led, hb, b, func() int { return partCut }, nil)
	// Until well past A's deadline, so that every ID A could issue is in
	// the ledger beside B's.
	time.Sleep(max(0, 16*time.Second-time.Since(cutAt)) + 2*time.Second)
	ld.stop()
	late.stop()
	late.requireNoErrors(t)
	ld.requireNoErrors(t)
	if waited < machineid.MaxRedisReach-time.Second {
		t.Errorf("B served %v after A was cut off; want at least MaxRedisReach %v less its max_borrow", waited, machineid.MaxRedisReach)
	}
	led.check(t)
	stopAll(t, b)
	// A lost its lease, so its final mark cannot be saved: its exit code
	// says so, which is not what this test is about.
	a.signal(syscall.SIGTERM)
	t.Logf("A exited with %d after SIGTERM", a.waitExit())
}
