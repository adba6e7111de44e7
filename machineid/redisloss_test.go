package machineid_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// The tests of Redis losing the lease and the mark: two issuers take turns
// on one machine ID (a one-ID range) while Redis forgets, and a ledger of
// every ID both issued must hold no duplicate.

var oneID = core.MachineRange{First: 1000, Count: 1}

// startLoss starts a real Redis and a config leasing oneID from it with a
// short TTL; the generators issue milliseconds and borrow up to 50ms
// ahead, so the quarantine's max_borrow term matters.
func startLoss(t testing.TB) (*redistest.Server, machineid.Config, core.Config) {
	srv, c := startRedis(t, 2*time.Second)
	c.ServerRange = oneID
	return srv, c, core.Config{Type: core.MinGranularity, MaxBorrow: 50 * time.Millisecond, MaxStartupWait: 10 * time.Second}
}

// noDuplicates fails on an ID in both sets or twice in one, and on a time
// field of b not above every time field of a (the quarantine's promise).
func noDuplicates(t testing.TB, codec core.Codec, a, b []core.ID) {
	t.Helper()
	seen := make(map[core.ID]string, len(a)+len(b))
	var maxA, minB uint64 = 0, ^uint64(0)
	for _, id := range a {
		if seen[id] != "" {
			t.Fatalf("ID %d issued twice by the first holder", id)
		}
		seen[id] = "first"
		maxA = max(maxA, codec.Explain(id).Time)
	}
	for _, id := range b {
		if who := seen[id]; who != "" {
			t.Fatalf("ID %d issued by the %s holder and the second", id, who)
		}
		seen[id] = "second"
		minB = min(minB, codec.Explain(id).Time)
	}
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("ledger: %d and %d IDs; both holders must have issued", len(a), len(b))
	}
	if minB <= maxA {
		t.Fatalf("the second holder's lowest time field %d is not above the first's highest %d", minB, maxA)
	}
	t.Logf("ledger: %d + %d IDs, no duplicate; the second holder starts %dms above the first's last time field",
		len(a), len(b), minB-maxA)
}

func snapshot(o *issued) []core.ID {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]core.ID(nil), o.ids...)
}

func TestFlushAllTakeoverWaitsForTheHolderToFence(t *testing.T) {
	srv, c, gc := startLoss(t)
	a := mustAcquire(t, c, core.Central)
	genA, outA, stopA := issuing(t, a, gc)

	srv.FlushAll()                       // the lease and the mark are gone; the holder still issues
	b := mustAcquire(t, c, core.Central) // free at once
	q := b.Status().QuarantineUntil
	if q.IsZero() {
		t.Fatal("a claim after FLUSHALL has no quarantine")
	}
	// Stats shows the time left while Prepare waits.
	var left atomic.Int64
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			if q := b.Stats().Quarantine; q > 0 {
				left.Store(int64(q))
				return
			}
			select {
			case <-stopPoll:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	genB := generator(t, b, gc)
	waited := time.Since(start)
	close(stopPoll)
	<-polled
	if q := time.Duration(left.Load()); q <= 0 || q > machineid.Reach() {
		t.Fatalf("Stats().Quarantine while waiting: %s; want above 0, at most %s", q, machineid.Reach())
	}
	// By the time the second holder may issue, the first cannot: its
	// deadline has passed, if the lost key did not fence it earlier.
	if err := genA.Ready(); !errors.Is(err, core.ErrFenced) {
		t.Fatalf("the first holder is not fenced when the second starts: %v", err)
	}
	if left := b.Stats().Quarantine; left != 0 {
		t.Fatalf("Stats().Quarantine %s after the wait; want 0", left)
	}
	var outB issued
	stopB := issue(t, genB, &outB)
	eventually(t, "IDs issued by the second holder", func() bool { n, _ := outB.count(); return n > 1000 })
	stopA()
	stopB()
	t.Logf("quarantine: waited %s (lease TTL %s, max_clock_skew %s, max_borrow %s)", waited.Round(time.Millisecond),
		c.Redis.LeaseTTL, c.Redis.MaxClockSkew, gc.MaxBorrow)
	noDuplicates(t, genA.Codec(), snapshot(outA), snapshot(&outB))
	if s := a.Status(); s.Fences == 0 || s.State != machineid.StateFenced {
		t.Fatalf("first holder's status %+v; want fenced", s)
	}
}

func TestRedisKilledAndRestartedEmptyUnderLoad(t *testing.T) {
	srv, c, gc := startLoss(t)
	a := mustAcquire(t, c, core.Central)
	genA, outA, stopA := issuing(t, a, gc)

	srv.KillAndRestart(nil) // kill -9, every RDB and AOF file deleted
	// A second issuer takes the ID as soon as Redis answers; the first one
	// retries its renewal on its own schedule and usually loses the race.
	outB, stopB := secondHolder(t, c, gc, "a lease on the empty Redis", "a claim on a Redis restarted empty has no quarantine",
		func(err error) bool {
			if !errors.Is(err, machineid.ErrUnavailable) && !errors.Is(err, machineid.ErrRangeFull) {
				t.Fatalf("Acquire: %v", err)
			}
			return false
		})
	stopA()
	stopB()
	noDuplicates(t, genA.Codec(), snapshot(outA), snapshot(outB))
}

// secondHolder acquires the machine ID of c again (waiting for what while
// Acquire fails and failed(err) says to go on), fails with noQuarantine
// unless the claim is quarantined, and issues with it until it issued
// more than 1000 IDs into the returned ledger (stop ends the issuing).
func secondHolder(t testing.TB, c machineid.Config, gc core.Config, what, noQuarantine string, failed func(error) bool) (out *issued, stop func()) {
	t.Helper()
	var b *machineid.Lease
	eventually(t, what, func() bool {
		l, err := machineid.Acquire(context.Background(), c, core.Central)
		if err != nil {
			return failed(err)
		}
		b = l
		return true
	})
	t.Cleanup(func() { b.Close(context.Background()) })
	if b.Status().QuarantineUntil.IsZero() {
		t.Fatal(noQuarantine)
	}
	_, out, stop = issuing(t, b, gc)
	return out, stop
}

// issuing starts issuing IDs on l's generator into a ledger and returns
// once more than 1000 were issued; stop ends the issuing.
func issuing(t testing.TB, l *machineid.Lease, gc core.Config) (gen *core.Generator, out *issued, stop func()) {
	t.Helper()
	gen, out = generator(t, l, gc), new(issued)
	stop = issue(t, gen, out)
	eventually(t, "IDs issued", func() bool { n, _ := out.count(); return n > 1000 })
	return gen, out, stop
}

// TestStaleReleaseRecordAfterRollback: a clean release record is used once;
// a Redis rolled back to a snapshot that still holds it (restarted: new
// run_id) must not let the next claim skip the quarantine while the
// holder that consumed the record still issues.
func TestStaleReleaseRecordAfterRollback(t *testing.T) {
	srv, c, gc := startLoss(t)
	first := mustAcquire(t, c, core.Central)
	g0 := generator(t, first, gc)
	nextIDs(t, g0, 100)
	release(t, g0, first)
	rdb := client(t, srv)
	relKey := redislease.ReleasedKey("vesta", oneID.First)
	if n := rdb.Exists(context.Background(), relKey).Val(); n != 1 {
		t.Fatal("no release record after a clean close")
	}
	snap := srv.Snapshot() // holds the record

	a := mustAcquire(t, c, core.Central) // consumes the record
	if q := a.Status().QuarantineUntil; !q.IsZero() {
		t.Fatalf("a claim after a clean release on the same Redis is quarantined until %s", q)
	}
	if n := rdb.Exists(context.Background(), relKey).Val(); n != 0 {
		t.Fatal("the claim left the release record for another")
	}
	genA, outA, stopA := issuing(t, a, gc)

	srv.KillAndRestart(snap) // rolled back: the record is back, the lease gone
	outB, stopB := secondHolder(t, c, gc, "a lease on the rolled-back Redis", "the stale release record was trusted after a rollback",
		func(error) bool { return false })
	stopA()
	stopB()
	noDuplicates(t, genA.Codec(), snapshot(outA), snapshot(outB))
}

// TestCleanReleaseSkipsTheQuarantine measures the start-up cost both ways
// on one Redis: a claim without a release record waits out the quarantine,
// a claim after a clean release starts at once, above everything issued.
func TestCleanReleaseSkipsTheQuarantine(t *testing.T) {
	_, c := startRedis(t, 2*time.Second)
	c.ServerRange = oneID
	gc := core.DefaultConfig() // max_borrow 1s, seconds
	startup := func() (*machineid.Lease, *core.Generator, time.Duration) {
		start := time.Now()
		l, err := machineid.Acquire(context.Background(), c, core.Central)
		if err != nil {
			t.Fatal(err)
		}
		gen, err := l.NewGenerator(context.Background(), gc, "")
		if err != nil {
			t.Fatal(err)
		}
		return l, gen, time.Since(start)
	}
	l1, g1, cold := startup()
	if l1.Status().QuarantineUntil.IsZero() {
		t.Fatal("the first claim has no quarantine")
	}
	// The first IDs after a quarantine are borrowed up to max_borrow ahead
	// of the clock; issue again once the clock has caught up, as a holder
	// that ran for a while would, so that its exact end is the clock's unit.
	nextIDs(t, g1, 5000)
	eventually(t, "the clock to catch up with the borrowed IDs", func() bool { return g1.Stats().Ahead == 0 })
	ids1 := nextIDs(t, g1, 5000)
	release(t, g1, l1)
	l2, g2, warm := startup()
	defer l2.Close(context.Background())
	defer g2.Close()
	if q := l2.Status().QuarantineUntil; !q.IsZero() {
		t.Fatalf("quarantined until %s after a clean release", q)
	}
	ids2 := nextIDs(t, g2, 5000)
	if ids2[0] <= ids1[len(ids1)-1] {
		t.Fatalf("after the clean release the first ID %d is not above the last %d", ids2[0], ids1[len(ids1)-1])
	}
	t.Logf("start-up cost (lease TTL %s, max_clock_skew %s, max_borrow %s): quarantined %s, after a clean release %s",
		c.Redis.LeaseTTL, c.Redis.MaxClockSkew, gc.MaxBorrow, cold.Round(time.Millisecond), warm.Round(time.Millisecond))
}

func TestMarksOnlyGrowAndTheReleaseRecordIsExact(t *testing.T) {
	srv, c := startRedis(t, 2*time.Second)
	srv.Established("vesta") // the quarantine's floor an hour back, below the marks written here
	rdb := client(t, srv)
	c.ServerRange = oneID
	l := mustAcquire(t, c, core.Central)
	_, markKey := redislease.Keys("vesta", oneID.First)
	guard := l.Guard()
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for _, m := range []time.Time{base.Add(10 * time.Second), base.Add(time.Second), base} {
		if err := guard.Save(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if v := rdb.Get(ctx, markKey).Val(); v != strconv.FormatInt(base.Add(10*time.Second).UnixMilli(), 10) {
		t.Fatalf("mark %s after late lower writes; want the highest, %d", v, base.Add(10*time.Second).UnixMilli())
	}
	l.Close(ctx)

	// A generator's exact end goes into the release record, below its
	// last reservation, which stays the mark.
	l = mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{Type: core.MinGranularity})
	ids, err := gen.NextIDs(ctx, core.Central, 10)
	if err != nil {
		t.Fatal(err)
	}
	release(t, gen, l)
	rec := rdb.HGetAll(ctx, redislease.ReleasedKey("vesta", oneID.First)).Val()
	final, _ := strconv.ParseInt(rec["final_ms"], 10, 64)
	last := gen.Codec().Explain(ids[len(ids)-1]).Instant
	if final != last.UnixMilli()+1 {
		t.Fatalf("release record %v; want final_ms %d, just past the last ID issued", rec, last.UnixMilli()+1)
	}
	mark, _ := strconv.ParseInt(rdb.Get(ctx, markKey).Val(), 10, 64)
	if mark < final {
		t.Fatalf("mark %d below the final %d", mark, final)
	}
	if rec["run_id"] == "" || rec["replid"] == "" || rec["token"] == "" {
		t.Fatalf("release record %v; want run_id, replid and token", rec)
	}
	shape := rdb.Get(ctx, redislease.ShapeKey("vesta", oneID.First)).Val()
	if !strings.Contains(shape, `"layout":"sorted"`) || !strings.Contains(shape, `"type":1`) {
		t.Fatalf("shape %q; want the generator's layout and type", shape)
	}
}

func TestMinReplicas(t *testing.T) {
	srv, c := startRedis(t, 2*time.Second)
	c.ServerRange = oneID
	c.Redis.MinReplicas = 1
	_, err := machineid.Acquire(context.Background(), c, core.Central)
	if !errors.Is(err, machineid.ErrReplicas) || !errtest.Wraps(err, machineid.ErrUnavailable, "min_replicas 1") {
		t.Fatalf("Acquire with no replica: %v; want ErrReplicas (unavailable) naming min_replicas", err)
	}
	if n := client(t, srv).Exists(context.Background(), leaseKeyOf(oneID.First)).Val(); n != 0 {
		t.Fatal("a claim that no replica acknowledged was not released")
	}

	replica := redistest.StartReplica(t, srv)
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	nextIDs(t, gen, 100)
	eventually(t, "a renewal", func() bool { return l.Status().Deadline.After(time.Now().Add(300 * time.Millisecond)) })
	release(t, gen, l)
	// WAIT returned after the replica had the record.
	if v, err := replica.Command("HGET", redislease.ReleasedKey("vesta", oneID.First), "final_ms"); err != nil || v == "" {
		t.Fatalf("the replica lacks the release record: %q, %v", v, err)
	}
	if s := l.Status(); s.RenewFailures != 0 {
		t.Fatalf("renewals failed with a replica: %+v", s)
	}
}

func TestClockSkewBoundRequiredWithRedis(t *testing.T) {
	c := machineid.DefaultConfig()
	c.Providers = []string{machineid.ProviderRedis}
	c.Redis.MaxClockSkew = 0
	err := c.Validate()
	if !errtest.Wraps(err, machineid.ErrConfig, "Redis.MaxClockSkew") {
		t.Fatalf("Validate with max_clock_skew 0 and the redis provider: %v; want ErrConfig naming Redis.MaxClockSkew", err)
	}
	c.Providers, c.Static = []string{machineid.ProviderStatic}, new(core.MachineID(1))
	if err := c.Validate(); err != nil {
		t.Fatalf("max_clock_skew 0 without the redis provider: %v", err)
	}
	c.Providers = []string{machineid.ProviderRedis}
	c.Redis.MaxClockSkew, c.Redis.MinReplicas = time.Second, -1
	if err := c.Validate(); !errtest.Wraps(err, machineid.ErrConfig, "Redis.MinReplicas") {
		t.Fatalf("negative MinReplicas: %v", err)
	}
}

// TestRenewalRechecksTheClock: a clock that drifts beyond max_clock_skew
// after the claim counts its renewals as failed (the key stays ours), so
// issuing stops at the deadline and stays stopped while the clock is off.
func TestRenewalRechecksTheClock(t *testing.T) {
	srv := redistest.Start(t)
	releasedCleanly(t, srv, core.Central, oneID)
	clock := core.NewManualClock(time.Now())
	c := redisConfig(t, srv, 3*time.Second) // renew every 1s, retry every 300ms
	c.ServerRange = oneID
	c.Redis.MaxClockSkew = 500 * time.Millisecond
	c.Redis.SafetyMargin = time.Second // deadline 2s after a renewal was sent
	c.Clock = clock
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	clock.Advance(2 * time.Second) // to the deadline, and 2s ahead of Redis
	eventually(t, "the fence", func() bool { return gen.Ready() != nil })
	for range 3 { // retries: each finds the clock still skewed
		n := l.Status().RenewFailures
		clock.Advance(300 * time.Millisecond)
		eventually(t, "a retried renewal", func() bool { return l.Status().RenewFailures > n })
	}
	if err := gen.Ready(); !errors.Is(err, machineid.ErrLeaseLost) {
		t.Fatalf("Ready: %v; want fenced with ErrLeaseLost", err)
	}
	if s := l.Status(); !errors.Is(s.Err, machineid.ErrClockSkew) || s.State != machineid.StateFenced {
		t.Fatalf("status %+v; want fenced for the clock skew", s)
	}
}

// TestReleaseRecordAfterAFailoverIsNotTrusted: the same redis-server
// process (same run_id) that became a replica and was promoted again has a
// new master_replid, as after a failover: a release record it got from its
// master must not skip the quarantine.
func TestReleaseRecordAfterAFailoverIsNotTrusted(t *testing.T) {
	srv, c, gc := startLoss(t)
	replica := redistest.StartReplica(t, srv)
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, gc)
	release(t, gen, l)
	relKey := redislease.ReleasedKey("vesta", oneID.First)
	if v, err := srv.Command("WAIT", "1", "5000"); err != nil || v != "1" {
		t.Fatalf("WAIT: %q, %v", v, err)
	}
	// The replica is promoted, the old master follows it (getting the
	// record back through replication) and is promoted in turn.
	mustCommand(t, replica, "REPLICAOF", "NO", "ONE")
	host, port, _ := strings.Cut(replica.Addr(), ":")
	mustCommand(t, srv, "REPLICAOF", host, port)
	eventually(t, "the old master to sync from the new one", func() bool {
		info, err := srv.Command("INFO", "replication")
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	mustCommand(t, srv, "REPLICAOF", "NO", "ONE")
	if v, _ := srv.Command("EXISTS", relKey); v != "1" {
		t.Fatal("the release record did not come back through replication")
	}
	b := mustAcquire(t, c, core.Central)
	if b.Status().QuarantineUntil.IsZero() {
		t.Fatal("a release record written before a failover was trusted")
	}
}

func mustCommand(t testing.TB, s *redistest.Server, args ...string) {
	t.Helper()
	if _, err := s.Command(args...); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// TestRedisMarkKnowsItsShape: a restart of the machine ID with another
// layout is refused, first by the fleet record (ErrFleet) and, should the
// record be deleted, by the shape beside the Redis mark (core.ErrShape),
// each naming both layouts; a mark written without a shape (by earlier
// versions) reads as the same shape.
func TestRedisMarkKnowsItsShape(t *testing.T) {
	srv, c, _ := startLoss(t)
	rdb := client(t, srv)
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	release(t, gen, l)
	l = mustAcquire(t, c, core.Central) // after a clean release: at once
	_, err := l.NewGenerator(context.Background(), core.Config{Layout: core.Vesta}, "")
	if !errtest.Wraps(err, machineid.ErrFleet, "id.layout vesta (the fleet's: sorted)") {
		t.Fatalf("a Vesta-layout generator in a sorted-layout fleet: %v; want ErrFleet naming both layouts", err)
	}
	dropFleetRecord(t, srv)
	_, err = l.NewGenerator(context.Background(), core.Config{Layout: core.Vesta}, "")
	if !errtest.Wraps(err, core.ErrShape, "layout sorted", "layout vesta") {
		t.Fatalf("a Vesta-layout generator on a sorted-layout mark: %v; want ErrShape naming both layouts", err)
	}
	l.Close(context.Background())

	// A mark without a shape: the next generator, of any shape, starts.
	rdb.Del(context.Background(), redislease.ShapeKey("vesta", oneID.First), redislease.FleetKey("vesta"))
	l = mustAcquire(t, c, core.Central)
	gen, err = l.NewGenerator(context.Background(), core.Config{Layout: core.Vesta}, "")
	if err != nil {
		t.Fatalf("a mark without a shape: %v", err)
	}
	defer l.Close(context.Background())
	defer gen.Close()
	if sh := rdb.Get(context.Background(), redislease.ShapeKey("vesta", oneID.First)).Val(); !strings.Contains(sh, `"layout":"vesta"`) {
		t.Fatalf("shape %q after the first save; want the new generator's", sh)
	}
}
