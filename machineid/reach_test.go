package machineid_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/internal/redisstore"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// The tests of a quarantine that rests on no host's own settings: the
// bound every Redis-leasing host is held to (MaxRedisReach), the releases
// that spare the next claimant a quarantine, the fleet record checked again
// when a lost lease is claimed again, and the clocks of the Sentinels.

// TestQuarantineCountsTheBound: on a new Redis the first claim's floor is
// MaxRedisReach past the moment claims first saw it, whatever the
// claimant's own lease TTL, skew and borrow (reckoned from those, as it
// once was, the floor would lie 0.64s past it here, and a holder with a
// longer lease cut off before the loss could still issue above it).
func TestQuarantineCountsTheBound(t *testing.T) {
	srv, c := startRedis(t, 600*time.Millisecond)
	machineid.SetMaxRedisReach(t, machineid.MaxRedisReach)
	l := mustAcquire(t, c, core.Central)
	since, q := storeSince(t, srv), l.Status().QuarantineUntil
	if want := since.Add(machineid.MaxRedisReach + time.Millisecond); !q.Equal(want) {
		t.Fatalf("quarantined until %s; want since_ms %s + MaxRedisReach %s + 1ms = %s",
			q.Format(time.RFC3339Nano), since.Format(time.RFC3339Nano), machineid.MaxRedisReach, want.Format(time.RFC3339Nano))
	}
	// A borrow that takes this host past the bound is refused.
	if err := l.Prepare(context.Background(), core.Config{MaxBorrow: machineid.MaxRedisReach}); !errtest.Wraps(err, machineid.ErrConfig, "MaxRedisReach") {
		t.Fatalf("Prepare with a borrow past the bound: %v; want ErrConfig naming MaxRedisReach", err)
	}
}

// TestEstablishedRedisStartsAtOnce: the test kit's Established makes a
// Redis look like one claims have known for long; a never-used ID then
// starts at once (what the other packages' tests count on).
func TestEstablishedRedisStartsAtOnce(t *testing.T) {
	srv, c := startRedis(t, 2*time.Second)
	srv.Established("vesta")
	l := mustAcquire(t, c, core.Central)
	if q := l.Status().QuarantineUntil; !q.Before(time.Now().Add(-time.Minute)) {
		t.Fatalf("a claim on an established Redis is quarantined until %s", q.Format(time.RFC3339Nano))
	}
}

// TestUnusedHoldReleasesExactly: a hold released before any generator
// loaded its mark issued nothing, so its release record carries the floor
// it would itself have started at, and the next claim starts there instead
// of waiting out a quarantine of its own.
func TestUnusedHoldReleasesExactly(t *testing.T) {
	srv, c, gc := startLoss(t)
	first := mustAcquire(t, c, core.Central)
	floor := first.Status().QuarantineUntil
	if floor.IsZero() {
		t.Fatal("the first claim on a new Redis has no quarantine")
	}
	if err := first.Close(context.Background()); err != nil { // a start refused or failed: nothing issued
		t.Fatal(err)
	}
	rec := client(t, srv).HGetAll(context.Background(), redislease.ReleasedKey("vesta", oneID.First)).Val()
	if rec["final_ms"] != strconv.FormatInt(floor.UnixMilli(), 10) {
		t.Fatalf("release record %v; want final_ms %d, the unused hold's floor", rec, floor.UnixMilli())
	}
	second := mustAcquire(t, c, core.Central)
	if q := second.Status().QuarantineUntil; !q.IsZero() {
		t.Fatalf("the next claim is quarantined again, until %s", q.Format(time.RFC3339Nano))
	}
	gen := generator(t, second, gc) // waits for the floor in Prepare, not in core.New
	id, err := gen.NextID(context.Background(), core.Central)
	if err != nil {
		t.Fatal(err)
	}
	if at := gen.Codec().Explain(id).Instant; at.Before(floor) {
		t.Fatalf("the next holder's first ID is of %s, below the unused hold's floor %s", at.Format(time.RFC3339Nano), floor.Format(time.RFC3339Nano))
	}
}

// TestReclaimRechecksTheFleet: Redis loses a holder's lease together with
// the fleet record, and a host of another layout records its own; the
// holder claims its ID again, but the record refuses it now, so it releases
// the claim and stays fenced instead of issuing IDs that can equal the new
// fleet's.
func TestReclaimRechecksTheFleet(t *testing.T) {
	srv, c, gc := startLoss(t)
	srv.Established("vesta")
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, gc)
	if _, err := gen.NextID(context.Background(), core.Central); err != nil {
		t.Fatal(err)
	}
	// In one step: every key gone, and another layout's record in place
	// before the holder can notice.
	rec := `{"layout":"vesta","type":0,"epoch_ms":1420041600000,"version":0}`
	mustCommand(t, srv, "EVAL", `redis.call('FLUSHALL'); redis.call('SET', KEYS[1], ARGV[1]); return 1`, "1", redislease.FleetKey("vesta"), rec)
	eventually(t, "the holder refused by the fleet record", func() bool {
		return errors.Is(l.Status().Err, machineid.ErrFleet)
	})
	time.Sleep(c.Redis.LeaseTTL) // it stays refused: no re-key, no issuing
	if s := l.Status(); s.State != machineid.StateFenced || !errors.Is(s.Err, machineid.ErrFleet) {
		t.Fatalf("status %v (%v); want fenced by the fleet record", s.State, s.Err)
	}
	if _, err := gen.NextID(context.Background(), core.Central); !errors.Is(err, core.ErrFenced) {
		t.Fatalf("NextID: %v; want ErrFenced", err)
	}
	leaseKey := leaseKeyOf(oneID.First)
	if v := client(t, srv).Get(context.Background(), leaseKey).Val(); v != "" {
		t.Fatalf("the refused holder kept its claim: %s = %q", leaseKey, v)
	}
}

// TestSentinelClocks: a Sentinel whose clock is beyond max_clock_skew of
// this host's does not count towards a majority (the quarantine reads the
// old and the new holder's clocks through the Sentinel their majorities
// share, never through the masters'). With this host's clock 3s ahead of
// every Sentinel's, none counts: the claim is refused before it reaches a
// master, naming the Sentinels' clocks; back in step, it is held.
// (Debian's libfaketime cannot run its jemalloc-linked Redis, so the
// Sentinels keep the host's clock and this host's moves.)
func TestSentinelClocks(t *testing.T) {
	_, c := startSentinels(t, 2*time.Second)
	clock := core.NewOffsetClock(core.NewSystemClock())
	clock.SetShift(3 * time.Second)
	c.Clock = clock
	_, err := acquire(t, c, core.Central)
	if !errtest.Wraps(err, machineid.ErrUnavailable, "the Sentinel's clock", "no majority") {
		t.Fatalf("Acquire with the clock 3s ahead of every Sentinel's: %v; want unavailable: no majority, naming the Sentinels' clocks", err)
	}
	clock.SetShift(0)
	l := mustAcquire(t, c, core.Central)
	l.Close(context.Background())
}

// TestClockCheckCountsTheRoundTrip: the other clock was read somewhere in
// the round trip, so the offset from its middle plus half the round trip
// must be within the bound.
func TestClockCheckCountsTheRoundTrip(t *testing.T) {
	t0 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		rtt, other time.Duration // the other clock's reading, from t0
		ok         bool
	}{
		{"in step", 10 * time.Millisecond, 5 * time.Millisecond, true},
		{"at the bound", 100 * time.Millisecond, 50*time.Millisecond - 150*time.Millisecond, true},
		{"past it by the round trip", 100 * time.Millisecond, 50*time.Millisecond - 151*time.Millisecond, false},
		{"ahead past it", 20 * time.Millisecond, 10*time.Millisecond + 191*time.Millisecond, false},
		{"a slow round trip proves nothing", 500 * time.Millisecond, 250 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redisstore.JudgeClock(t0, t0.Add(tc.rtt), t0.Add(tc.other), 200*time.Millisecond, "the other clock")
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, machineid.ErrClockSkew)) {
				t.Fatalf("judged %v; want ok=%v", err, tc.ok)
			}
		})
	}
}
