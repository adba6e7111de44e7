package machineid_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/redislease"
)

func TestKeysShareAHashTag(t *testing.T) {
	lease, mark := redislease.Keys("vesta", 924)
	if lease != "{vesta:machine:924}:lease" || mark != "{vesta:machine:924}:mark" {
		t.Fatalf("Keys = %q, %q", lease, mark)
	}
}

func TestRacingLeasersNeverShareAnID(t *testing.T) {
	_, c := startRedis(t, 10*time.Second)
	c.ServerRange = core.MachineRange{First: 924, Count: 10}
	// Thirty claims at once under -race on a loaded machine see round
	// trips of 100 ms, which a 20 ms skew bound refuses; the clock check is
	// not what this test is about.
	c.Redis.MaxClockSkew = 500 * time.Millisecond
	const n = 30
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		leases []*machineid.Lease
		errs   []error
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			l, err := machineid.Acquire(context.Background(), c, core.Central)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			leases = append(leases, l)
		})
	}
	close(start)
	wg.Wait()
	defer func() {
		for _, l := range leases {
			l.Close(context.Background())
		}
	}()
	seen := map[core.MachineID]bool{}
	for _, l := range leases {
		if seen[l.ID()] || !c.ServerRange.Contains(l.ID()) {
			t.Fatalf("ID %d leased twice or outside %s", l.ID(), c.ServerRange)
		}
		seen[l.ID()] = true
	}
	if len(leases) != 10 || len(errs) != 20 {
		t.Fatalf("%d leases and %d errors; want 10 and 20 (errors: %v)", len(leases), len(errs), errors.Join(errs...))
	}
	for _, err := range errs {
		if !errtest.Wraps(err, machineid.ErrRangeFull, "924-933") {
			t.Fatalf("error %q; want ErrRangeFull naming the range 924-933", err)
		}
		if errors.Is(err, machineid.ErrUnavailable) {
			t.Fatalf("a full range %q must not fall through the chain", err)
		}
	}
}

func TestGracefulCloseReleasesAtOnce(t *testing.T) {
	srv, c := startRedis(t, 10*time.Second)
	srv.Established("vesta") // no quarantine before the first generator
	rdb := client(t, srv)
	c.ServerRange = core.MachineRange{First: 1000, Count: 1}
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	if _, err := gen.NextID(context.Background(), core.Central); err != nil {
		t.Fatal(err)
	}
	leaseKey, markKey := redislease.Keys("vesta", 1000)
	if v := rdb.Get(context.Background(), leaseKey).Val(); !strings.Contains(v, "/") {
		t.Fatalf("lease value %q; want token/host/pid", v)
	}
	if _, err := machineid.Acquire(context.Background(), c, core.Central); !errors.Is(err, machineid.ErrRangeFull) {
		t.Fatalf("second lease of a one-ID range: %v; want ErrRangeFull", err)
	}
	release(t, gen, l)
	if err := l.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n := rdb.Exists(context.Background(), leaseKey).Val(); n != 0 {
		t.Fatal("the lease key outlived Close")
	}
	if rdb.Get(context.Background(), markKey).Val() == "" {
		t.Fatal("the mark was not kept")
	}
	if s := l.Status(); s.State != machineid.StateNone {
		t.Fatalf("state after Close: %s", s.State)
	}
	// The ID is free at once, well before the 10s TTL.
	l2, err := machineid.Acquire(context.Background(), c, core.Central)
	if err != nil {
		t.Fatalf("re-leasing after Close: %v", err)
	}
	l2.Close(context.Background())
}

func TestOnlyTheHolderWritesTheMark(t *testing.T) {
	srv, c := startRedis(t, 10*time.Second)
	rdb := client(t, srv)
	l := mustAcquire(t, c, core.Central)
	g := l.Guard()
	if g == nil {
		t.Fatal("a Redis lease has no guard")
	}
	if tg, _ := l.TimeGuard(t.TempDir()); tg != g {
		t.Fatal("TimeGuard of a Redis lease is not its Redis store")
	}
	ctx := context.Background()
	// A fresh ID has no mark, but no clean release either: Load returns
	// the quarantine's floor.
	if m, err := g.Load(ctx); err != nil || m.IsZero() || !m.Equal(l.Status().QuarantineUntil) {
		t.Fatalf("Load of a fresh ID = %v, %v; want the quarantine's floor %v", m, err, l.Status().QuarantineUntil)
	}
	mark := time.Date(2030, 1, 2, 3, 4, 5, 600_000_001, time.UTC)
	if err := g.Save(ctx, mark); err != nil {
		t.Fatal(err)
	}
	got, err := g.Load(ctx)
	if err != nil || !got.Equal(mark.Truncate(time.Millisecond).Add(time.Millisecond)) {
		t.Fatalf("Load = %v, %v; want %v rounded up to the millisecond", got, err, mark)
	}
	leaseKey, markKey := redislease.Keys("vesta", l.ID())
	rdb.Set(ctx, leaseKey, "thief", 0)
	if err := g.Save(ctx, mark.Add(time.Hour)); !errors.Is(err, machineid.ErrNotHolder) {
		t.Fatalf("Save after the lease was taken: %v; want ErrNotHolder", err)
	}
	if after, _ := g.Load(ctx); !after.Equal(got) {
		t.Fatalf("the mark moved to %v without the lease", after)
	}
	rdb.Set(ctx, markKey, "garbage", 0)
	if _, err := g.Load(ctx); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("Load of a damaged mark: %v", err)
	}
}

func TestClockSkewAgainstRedisTime(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name   string
		offset time.Duration
		ok     bool
	}{
		{"ahead beyond", 10 * time.Second, false},
		{"behind beyond", -10 * time.Second, false},
		{"within", 500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redisConfig(t, srv, 3*time.Second)
			c.Redis.MaxClockSkew = 2 * time.Second
			machineid.SetMaxRedisReach(t, 6*time.Second)
			c.Clock = core.NewManualClock(time.Now().Add(tc.offset))
			l, err := acquire(t, c, core.Central)
			if tc.ok {
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				if skew := l.Stats().ClockSkew; (skew - tc.offset).Abs() > time.Second {
					t.Fatalf("Stats().ClockSkew %s; want about %s", skew, tc.offset)
				}
				l.Close(context.Background())
				return
			}
			if !errors.Is(err, machineid.ErrClockSkew) || errors.Is(err, machineid.ErrUnavailable) {
				t.Fatalf("Acquire = %v; want ErrClockSkew, not falling through", err)
			}
			local := c.Clock.Now().UTC().Format("2006-01-02T15:04:05")
			redisNow := time.Now().UTC().Format("2006-01-02T15:04")
			if !strings.Contains(err.Error(), local) || !strings.Contains(err.Error(), redisNow) {
				t.Fatalf("error %q does not name both instants (%s..., %s...)", err, local, redisNow)
			}
		})
	}
}

// TestStatsOfALease: what a lease measures (package prommetrics's tests
// check the series it makes of them).
func TestStatsOfALease(t *testing.T) {
	_, c := startRedis(t, 3*time.Second)
	l := mustAcquire(t, c, core.Central)
	if st := l.Stats(); st.State != machineid.StateHeld || st.Range != "server" || st.Machine != l.ID() || st.Closed {
		t.Fatalf("stats %+v; want held, of the server range, machine %d, open", st, l.ID())
	}
	eventually(t, "a renewal", func() bool { return l.Stats().Renewals.Count() >= 1 })
	l.Close(context.Background())
	if st := l.Stats(); st.State != machineid.StateNone || !st.Closed {
		t.Fatalf("stats after Close: state %s, closed %t; want none, true", st.State, st.Closed)
	}
}

// TestClusterIsRefused: a Redis Cluster cannot keep a lease (a master cut
// off in a minority keeps accepting writes while a replica is promoted), so
// several addresses without a master name and a Cluster node are refused,
// naming the setting and the alternatives.
func TestClusterIsRefused(t *testing.T) {
	c := machineid.DefaultConfig()
	c.Providers = []string{machineid.ProviderRedis}
	c.Redis.Addrs = []string{"a:6379", "b:6379", "c:6379"}
	err := c.Validate()
	if !errtest.Wraps(err, machineid.ErrConfig, "Redis.Addrs", "Cluster") {
		t.Fatalf("Validate with 3 addresses and no master name: %v; want ErrConfig naming Redis.Addrs and Cluster", err)
	}
	srv := redistest.StartCluster(t)
	c = redisConfig(t, srv, 2*time.Second)
	_, err = machineid.Acquire(context.Background(), c, core.Central)
	if !errors.Is(err, machineid.ErrConfig) || errors.Is(err, machineid.ErrUnavailable) || !strings.Contains(err.Error(), "Cluster node") {
		t.Fatalf("Acquire on a Cluster node: %v; want ErrConfig (not unavailable) saying it is a Cluster node", err)
	}
}
