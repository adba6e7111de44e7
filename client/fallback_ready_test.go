package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// New holds a fresh Redis lease for the fallback at once and does not wait
// out its takeover quarantine: the fallback's clock is fake and never
// moves here, so the quarantine (about 19 s of it at the defaults) never ends,
// and New returning at all shows it did not wait. Meanwhile the state, the
// metric and the start-up line say the fallback is not ready; a call with
// every server down waits for it within its own context and fails with
// both errors when that ends; Close ends the opening, returns waiting
// calls, releases the lease and leaves no goroutine behind.
func TestNewDoesNotWaitOutTheQuarantine(t *testing.T) {
	srv := redistest.Start(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	clock := core.NewManualClock(time.Now())
	cfg := testConfig(t, deadAddr(t))
	cfg.FallbackConfig.DataDir = "" // the mark lives in Redis
	cfg.FallbackConfig.Clock = clock
	cfg.FallbackConfig.Machine.Static = nil
	cfg.FallbackConfig.Machine.Providers = []string{machineid.ProviderRedis}
	cfg.FallbackConfig.Machine.Redis.Addrs = []string{srv.Addr()}
	logs := logTo(&cfg)
	before := goleak.IgnoreCurrent()

	// The minute only bounds a New that would wait: it would fail with
	// its context, never succeed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	c, err := client.New(ctx, cfg)
	cancel()
	if err != nil {
		t.Fatalf("New with a quarantined fallback lease = %v; want it to return at once", err)
	}
	t.Cleanup(func() { c.Close() })
	reg := registry(t, c)

	st := c.FallbackState()
	if st.Ready || !errors.Is(st.NotReady, client.ErrFallbackNotReady) || !strings.Contains(st.NotReady.Error(), "quarantine") ||
		st.Lease.State != machineid.StateHeld || !st.Lease.QuarantineUntil.After(clock.Now()) {
		t.Fatalf("FallbackState after New = %+v; want a held lease, quarantined, not ready", st)
	}
	leaseKey, _ := redislease.Keys(machineid.DefaultConfig().Redis.KeyPrefix, st.Machine)
	if n, err := rc.Exists(context.Background(), leaseKey).Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS %s after New = %d, %v; want 1: the claim is made at New", leaseKey, n, err)
	}
	if v := gauge(t, reg, "vesta_client_fallback_ready"); v != 0 {
		t.Fatalf("vesta_client_fallback_ready = %v; want 0", v)
	}
	if line := logs.String(); !strings.Contains(line, "client: started") || !strings.Contains(line, "fallback_ready=false") ||
		!strings.Contains(line, "quarantine until") {
		t.Fatalf("start-up log %q does not say the fallback waits out its quarantine", line)
	}

	// A call needing the fallback waits for it within its own context.
	callCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.NextID(callCtx)
		done <- err
	}()
	waittest.Until(t, "the call to wait for the fallback", func() bool { return c.FallbackWaiters() == 1 })
	stop()
	if err := <-done; !errors.Is(err, client.ErrFallbackNotReady) || !errors.Is(err, client.ErrUnavailable) ||
		!errtest.Wraps(err, context.Canceled, "connection refused") {
		t.Fatalf("NextID whose context ended first = %v; want ErrFallbackNotReady and context.Canceled joined with the servers' ErrUnavailable", err)
	}

	// Close during the opening: waiting calls get ErrClosed; the lease
	// is released and every goroutine gone, though the clock never moved.
	go func() {
		_, err := c.NextIDs(context.Background(), 10)
		done <- err
	}()
	waittest.Until(t, "the call to wait for the fallback", func() bool { return c.FallbackWaiters() == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, client.ErrClosed) {
		t.Fatalf("NextIDs waiting for the fallback at Close = %v; want ErrClosed", err)
	}
	if n, err := rc.Exists(context.Background(), leaseKey).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS %s after Close = %d, %v; want 0 (released)", leaseKey, n, err)
	}
	goleak.VerifyNone(t, before)
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("Close during the opening logged an error:\n%s", logs.String())
	}
}

// A fallback whose clock is behind its time guard's mark opens in the
// background once the clock passes it (MaxStartupWait). Calls with every
// server down — through the prefetch buffer and not — wait for it and
// then get fallback IDs, above everything the last run issued; state,
// metric and log go from not ready to ready.
func TestCallsWaitForTheFallback(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cfg := testConfig(t, deadAddr(t))
	cfg.FallbackConfig.MaxStartupWait = time.Hour
	ctx := context.Background()

	last := cfg
	last.FallbackConfig.Clock = core.NewManualClock(start)
	c, err := client.New(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	var all collect
	before, err := c.NextIDs(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	all.add(before...)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// Restarted with the clock a minute behind the mark.
	clock := core.NewManualClock(start.Add(-time.Minute))
	cfg.FallbackConfig.Clock = clock
	cfg.Prefetch = 10
	logs := logTo(&cfg)
	c = newClient(t, cfg)
	reg := registry(t, c)
	if st := c.FallbackState(); st.Ready || !errors.Is(st.NotReady, client.ErrFallbackNotReady) || st.Machine != 7 {
		t.Fatalf("FallbackState after New = %+v; want machine 7, not ready", st)
	}
	if v := gauge(t, reg, "vesta_client_fallback_ready"); v != 0 {
		t.Fatalf("vesta_client_fallback_ready = %v; want 0", v)
	}
	got := make(chan []core.ID, 2)
	errs := make(chan error, 2)
	go func() { // through the prefetch buffer, whose refill fails
		id, err := c.NextID(ctx)
		got <- []core.ID{id}
		errs <- err
	}()
	go func() {
		ids, err := c.NextIDs(ctx, 50)
		got <- ids
		errs <- err
	}()
	waittest.Until(t, "both calls to wait for the fallback", func() bool { return c.FallbackWaiters() == 2 })
	waittest.Sleepers(t, clock, 1) // the generator waits for the clock
	clock.Advance(2 * time.Minute)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a call waiting for the fallback = %v; want fallback IDs", err)
		}
		ids := <-got
		all.add(ids...)
		for _, id := range ids {
			if e := c.Explain(id); e.Method != core.Embedded || e.Machine != 7 || id <= before[len(before)-1] {
				t.Fatalf("ID %d (%+v); want the fallback's, above the last run's %d", id, e, before[len(before)-1])
			}
		}
	}
	if all.dups != 0 || len(all.seen) != 151 {
		t.Fatalf("%d duplicates among %d IDs", all.dups, len(all.seen))
	}
	if st := c.FallbackState(); !st.Ready || st.NotReady != nil || !st.Active {
		t.Fatalf("FallbackState after the calls = %+v; want ready and active", st)
	}
	if v := gauge(t, reg, "vesta_client_fallback_ready"); v != 1 {
		t.Fatalf("vesta_client_fallback_ready = %v; want 1", v)
	}
	text := logs.String()
	if i, j := strings.Index(text, "fallback_ready=false"), strings.Index(text, "client: the fallback is ready"); i < 0 || j < i ||
		!strings.Contains(text[j:], "after=") {
		t.Fatalf("log %q: want the start-up line saying not ready, then one line saying ready and after how long", text)
	}
}

// A fallback configured unlike its fleet (another layout than the one the
// fleet record of its key prefix holds) is refused by New at once, naming
// both layouts, although the rest of the opening runs in the background:
// the fleet record is checked when the machine ID is claimed.
func TestNewRefusesAFallbackUnlikeItsFleet(t *testing.T) {
	srv := redistest.Start(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	fleet := `{"layout":"sorted","type":0,"epoch_ms":1735689600000,"version":0,"lease_ttl_ms":15000,"max_borrow_ms":1000,"max_clock_skew_ms":2000,"timing":true}`
	if err := rc.Set(context.Background(), redislease.FleetKey("vesta"), fleet, 0).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, deadAddr(t))
	cfg.FallbackConfig.DataDir = ""
	cfg.FallbackConfig.Layout = core.Vesta
	cfg.FallbackConfig.Machine.Static = nil
	cfg.FallbackConfig.Machine.Providers = []string{machineid.ProviderRedis}
	cfg.FallbackConfig.Machine.Redis.Addrs = []string{srv.Addr()}
	_, err := client.New(context.Background(), cfg)
	if !errtest.Wraps(err, machineid.ErrFleet, "id.layout vesta (the fleet's: sorted)") {
		t.Fatalf("New with a vesta-layout fallback in a sorted fleet = %v; want ErrFleet naming both layouts", err)
	}
	if keys := rc.Keys(context.Background(), "*:lease").Val(); len(keys) != 0 {
		t.Fatalf("leases left after the refusal: %v", keys)
	}
}
