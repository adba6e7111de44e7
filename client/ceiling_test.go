package client_test

import (
	"context"
	"errors"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// startTaker is a fake with Vesta.TakeIDs that gives room IDs in all
// (negative: no limit) and then says busy, retry after retryMS.
func startTaker(t testing.TB, machine core.MachineID, maxBatch int, room int64, retryMS uint64) *fake {
	t.Helper()
	f := startFake(t, machine, maxBatch)
	f.takeIDs.Store(true)
	f.room.Store(room)
	f.retryMS.Store(retryMS)
	return f
}

// clockClient is newClient with the waits at the ceiling on clk.
func clockClient(t testing.TB, cfg client.Config, clk core.Clock) *client.Client {
	t.Helper()
	c, err := client.NewWithClock(context.Background(), cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// dialCounter wraps the dialer and counts dials per address.
type dialCounter struct {
	mu    sync.Mutex
	dials map[string]int
}

func countDials(cfg *client.Config) *dialCounter {
	d := &dialCounter{dials: map[string]int{}}
	var nd net.Dialer
	cfg.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.mu.Lock()
		d.dials[addr]++
		d.mu.Unlock()
		return nd.DialContext(ctx, network, addr)
	}
	return d
}

func (d *dialCounter) of(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials[addr]
}

// counter reads a counter of reg (0 when absent).
func counter(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	v, _ := promtest.Value(t, reg, name, labels...)
	return v
}

func TestBusyServerIsNotDead(t *testing.T) {
	busy := startTaker(t, 1000, 100, 0, 100) // never has room
	ok := startTaker(t, 1001, 100, -1, 0)
	cfg := testConfig(t, busy.addr, ok.addr)
	cfg.ConnsPerServer = 1
	dials := countDials(&cfg)
	c, _, reg := manualClient(t, cfg) // busy marks never expire
	ctx := context.Background()
	var all collect
	for i := range 40 {
		if i%2 == 0 {
			id, err := c.NextID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			all.add(id)
			continue
		}
		ids, err := c.NextIDs(ctx, 150) // above max_batch: two calls
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 150 || !slices.IsSorted(ids) {
			t.Fatalf("NextIDs(150): %d IDs, sorted %v", len(ids), slices.IsSorted(ids))
		}
		all.add(ids...)
	}
	if all.dups > 0 {
		t.Fatalf("%d duplicate IDs", all.dups)
	}
	for id := range all.seen {
		if m := c.Explain(id).Machine; m != 1001 {
			t.Fatalf("ID %d from machine %d; want every ID from the server with room (1001)", id, m)
		}
	}
	if busy.takes.Load() != 1 || busy.busy.Load() != 1 {
		t.Errorf("the busy server got %d TakeIDs (%d short); want 1: its busy mark keeps calls away until it passes", busy.takes.Load(), busy.busy.Load())
	}
	if got := counter(t, reg, "vesta_client_calls_total", "server", busy.addr, "result", "busy"); got != 1 {
		t.Errorf("calls_total{busy server, busy} = %v; want 1", got)
	}
	for _, s := range c.Servers() {
		if s.Breaker != gobreaker.StateClosed {
			t.Errorf("breaker of %s %v; want closed", s.Addr, s.Breaker)
		}
	}
	if c.InFallback() || counter(t, reg, "vesta_ids_issued_total", "method", "embedded") != 0 {
		t.Error("busy answers sent IDs to the fallback")
	}
	if n := dials.of(busy.addr); n != 1 {
		t.Errorf("%d dials to the busy server; want 1 (a busy answer never closes the connection)", n)
	}
	if got := counter(t, reg, "vesta_ceiling_waits_total", "method", "central"); got != 0 {
		t.Errorf("ceiling waits %v; want 0 (another server always had room)", got)
	}
}

// waitResult is what a call in a goroutine returned.
type waitResult struct {
	ids []core.ID
	err error
}

func goNextIDs(ctx context.Context, c *client.Client, n int) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		ids, err := c.NextIDs(ctx, n)
		ch <- waitResult{ids, err}
	}()
	return ch
}

func TestEveryServerBusyWaits(t *testing.T) {
	a := startTaker(t, 1000, 100, 0, 300)
	b := startTaker(t, 1001, 100, 0, 500)
	cfg := testConfig(t, a.addr, b.addr)
	cfg.Timeout = 50 * time.Millisecond
	c, clk, reg := manualClient(t, cfg)
	ctx := context.Background()

	res := goNextIDs(ctx, c, 40)
	waittest.Sleepers(t, clk, 1)
	// Four attempt timeouts of real time pass: a wait at the ceiling is
	// not bounded by Timeout.
	select {
	case r := <-res:
		t.Fatalf("NextIDs returned while every server was busy: %v", r.err)
	case <-time.After(4 * cfg.Timeout):
	}
	a.room.Store(25) // a has room for part of it, b for the rest after its mark
	b.room.Store(-1)
	clk.Advance(300 * time.Millisecond) // a's mark passes, b's not yet
	waittest.Sleepers(t, clk, 1)
	clk.Advance(200 * time.Millisecond)
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.ids) != 40 || !slices.IsSorted(r.ids) {
		t.Fatalf("NextIDs(40): %d IDs, sorted %v", len(r.ids), slices.IsSorted(r.ids))
	}
	var fromA int
	for _, id := range r.ids {
		if c.Explain(id).Machine == 1000 {
			fromA++
		}
	}
	if fromA != 25 {
		t.Errorf("%d IDs from a; want its 25", fromA)
	}
	if got := counter(t, reg, "vesta_ceiling_waits_total", "method", "central"); got != 1 {
		t.Errorf("ceiling waits %v; want 1 (one call)", got)
	}
	count, sum := promtest.Histogram(t, reg, "vesta_ceiling_wait_seconds", "method", "central")
	if count != 1 || math.Abs(sum-0.5) > 1e-9 {
		t.Errorf("ceiling wait: %d observations summing %vs; want one of 0.5s (300ms, then 200ms)", count, sum)
	}
	for _, s := range c.Servers() {
		if s.Breaker != gobreaker.StateClosed {
			t.Errorf("breaker of %s %v; want closed", s.Addr, s.Breaker)
		}
	}
	if c.InFallback() {
		t.Error("a wait at the ceiling went to the fallback")
	}
}

func TestDeadServerFailsOverWhileBusyIsWaitedFor(t *testing.T) {
	for _, dead := range []string{"silent", "refused"} {
		t.Run(dead, func(t *testing.T) {
			busy := startTaker(t, 1001, 100, 0, 200)
			deadAddr := deadAddr(t)
			if dead == "silent" {
				f := startTaker(t, 1000, 100, -1, 0)
				f.silent.Store(true)
				deadAddr = f.addr
			}
			cfg := testConfig(t, deadAddr, busy.addr)
			cfg.Timeout = 100 * time.Millisecond
			cfg.BreakerFailures = 100 // the dead server is tried on every walk
			c, clk, reg := manualClient(t, cfg)
			ctx := context.Background()

			res := goNextIDs(ctx, c, 1)
			waittest.Sleepers(t, clk, 1)
			busy.room.Store(-1)
			clk.Advance(200 * time.Millisecond)
			r := <-res
			if r.err != nil {
				t.Fatal(r.err)
			}
			if m := c.Explain(r.ids[0]).Machine; m != 1001 {
				t.Fatalf("ID from machine %d; want the busy server's (1001), once it had room", m)
			}
			result := "timeout"
			if dead == "refused" {
				result = "network"
			}
			if got := counter(t, reg, "vesta_client_calls_total", "server", deadAddr, "result", result); got < 1 {
				t.Errorf("calls_total{dead server, %s} = %v; want the dead server's attempts to fail", result, got)
			}
			if c.InFallback() || counter(t, reg, "vesta_ids_issued_total", "method", "embedded") != 0 {
				t.Error("the fallback served while a busy server was alive")
			}
		})
	}
}

func TestCeilingWaitEndsWithContext(t *testing.T) {
	f := startTaker(t, 1000, 100, 0, 1000)
	cfg := testConfig(t, f.addr)
	c, _, reg := manualClient(t, cfg) // never advanced
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.NextID(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NextID past its deadline at the ceiling: %v; want context.DeadlineExceeded", err)
	}
	if c.InFallback() || counter(t, reg, "vesta_ids_issued_total", "method", "embedded") != 0 {
		t.Error("a wait at the ceiling went to the fallback")
	}
	if s := c.Servers()[0]; s.Breaker != gobreaker.StateClosed {
		t.Errorf("breaker %v; want closed", s.Breaker)
	}
}

func TestCloseReturnsCallersWaitingAtCeiling(t *testing.T) {
	for _, prefetch := range []int{0, 100} {
		t.Run(map[int]string{0: "direct", 100: "prefetch"}[prefetch], func(t *testing.T) {
			f := startTaker(t, 1000, 100, 0, 1000)
			cfg := testConfig(t, f.addr)
			cfg.Prefetch = prefetch
			clk := core.NewManualClock(time.Now()) // never advanced
			c, err := client.NewWithClock(context.Background(), cfg, clk)
			if err != nil {
				t.Fatal(err)
			}
			const callers = 8
			var wg sync.WaitGroup
			var returned atomic.Int32
			errs := make(chan error, callers)
			for i := range callers {
				wg.Go(func() {
					var err error
					if i%2 == 0 {
						_, err = c.NextID(context.Background())
					} else {
						_, err = c.NextIDs(context.Background(), 10)
					}
					returned.Add(1)
					errs <- err
				})
			}
			// Every direct caller, or the refiller, sleeps on the clock.
			waiting := callers
			if prefetch > 0 {
				waiting = 1
			}
			waittest.Sleepers(t, clk, waiting)
			if n := returned.Load(); n != 0 {
				t.Fatalf("%d callers returned before Close", n)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second): // a hang, not a speed check
				t.Fatalf("%d of %d callers still waiting after Close", callers-int(returned.Load()), callers)
			}
			close(errs)
			for err := range errs {
				if !errors.Is(err, client.ErrClosed) {
					t.Errorf("a caller waiting at Close got %v; want client.ErrClosed", err)
				}
			}
		})
	}
}

// startTakers starts n takers (machines 1000 on, max_batch 1000) with
// room IDs each before they answer busy for a second.
func startTakers(t testing.TB, n int, room int64) (fs []*fake, addrs []string) {
	t.Helper()
	for i := range n {
		f := startTaker(t, core.MachineID(1000+i), 1000, room, 1000)
		fs, addrs = append(fs, f), append(addrs, f.addr)
	}
	return fs, addrs
}

func TestSpreadOverServers(t *testing.T) {
	t.Run("NextIDs", func(t *testing.T) {
		fs, addrs := startTakers(t, 3, 300)
		cfg := testConfig(t, addrs...)
		c, _, reg := manualClient(t, cfg) // never advanced: a wait would hang
		ids, err := c.NextIDs(context.Background(), 900)
		if err != nil {
			t.Fatal(err)
		}
		var all collect
		all.add(ids...)
		if len(ids) != 900 || !slices.IsSorted(ids) || all.dups > 0 {
			t.Fatalf("NextIDs(900): %d IDs, sorted %v, %d duplicates", len(ids), slices.IsSorted(ids), all.dups)
		}
		for i, f := range fs {
			if f.room.Load() != 0 {
				t.Errorf("server %d has %d of its 300 left; want each server's share used", i, f.room.Load())
			}
		}
		if got := counter(t, reg, "vesta_ceiling_waits_total", "method", "central"); got != 0 {
			t.Errorf("ceiling waits %v; want 0", got)
		}
	})
	t.Run("prefetch", func(t *testing.T) {
		fs, addrs := startTakers(t, 3, 3000)
		cfg := testConfig(t, addrs...)
		cfg.Prefetch = 9000
		clk := core.NewManualClock(time.Now())
		c := clockClient(t, cfg, clk)
		waittest.Until(t, "a full buffer", func() bool { return c.Stats().Buffered == 9000 })
		for i, f := range fs {
			if f.room.Load() != 0 {
				t.Errorf("server %d has %d of its 3000 left; want the refill spread over every server", i, f.room.Load())
			}
		}
	})
}

func TestTakeIDsOnlyWhenOffered(t *testing.T) {
	for _, offered := range []bool{true, false} {
		f := startFake(t, 1000, 100)
		f.takeIDs.Store(offered)
		cfg := testConfig(t, f.addr)
		c := newClient(t, cfg)
		if _, err := c.NextID(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := c.NextIDs(context.Background(), 50); err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if offered {
			want = 2
		}
		if got := f.takes.Load(); got != want || f.calls.Load() != 2 {
			t.Errorf("take_ids %v: %d TakeIDs of %d calls; want %d of 2", offered, got, f.calls.Load(), want)
		}
	}
}

func TestNextIDsCountBounds(t *testing.T) {
	f := startTaker(t, 1000, 100, -1, 0)
	cfg := testConfig(t, f.addr)
	c := newClient(t, cfg)
	for _, n := range []int{0, -1, math.MinInt, client.MaxCount + 1, 1 << 40, math.MaxInt} {
		if ids, err := c.NextIDs(context.Background(), n); !errors.Is(err, core.ErrInvalidCount) || ids != nil {
			t.Errorf("NextIDs(%d) = %d IDs, %v; want core.ErrInvalidCount", n, len(ids), err)
		}
	}
	if f.calls.Load() != 0 {
		t.Errorf("%d server calls for impossible counts; want none", f.calls.Load())
	}
}

// At the ceiling, callers on an empty prefetch buffer wait for the refill,
// which alone asks the servers; they do not each call a server.
func TestPrefetchCallersWaitForRefillAtCeiling(t *testing.T) {
	f := startTaker(t, 1000, 100, 0, 100)
	cfg := testConfig(t, f.addr)
	cfg.Prefetch = 200
	c, clk, reg := manualClient(t, cfg)
	waittest.Sleepers(t, clk, 1) // the refill waits
	const callers = 8
	var wg sync.WaitGroup
	var all collect
	all.singles(t, &wg, c, callers, 50)
	waittest.Until(t, "callers waiting", func() bool { return f.takes.Load() == 1 })
	f.room.Store(-1)
	clk.Advance(100 * time.Millisecond)
	wg.Wait()
	if len(all.seen) != callers*50 || all.dups > 0 {
		t.Fatalf("%d distinct IDs, %d duplicates", len(all.seen), all.dups)
	}
	if got := counter(t, reg, "vesta_ceiling_waits_total", "method", "central"); got != 1 {
		t.Errorf("ceiling waits %v; want 1: the refill's, the callers waiting on the buffer", got)
	}
	// One busy answer to the first refill, then refills of up to 200
	// with max_batch 100: two calls each, never one per caller.
	if takes := f.takes.Load(); takes > 1+2*(callers*50/100+1) {
		t.Errorf("%d TakeIDs calls for %d IDs; want only the refills'", takes, callers*50)
	}
}

// A call that times out on a silent connection closes it; the other calls
// in flight on it are asked again on a new connection, and the breaker
// counts the one timeout, not every call in flight.
func TestSilentConnectionFailsOneCall(t *testing.T) {
	f := startTaker(t, 1000, 100, -1, 0)
	f.silentFirst.Store(true)
	cfg := testConfig(t, f.addr)
	cfg.NoFallback = true
	cfg.ConnsPerServer = 1
	cfg.Timeout = 2 * time.Second // the others' deadlines are a second after the first's
	cfg.BreakerFailures = 2
	c, reg := meteredClient(t, cfg)
	first := make(chan error, 1)
	go func() {
		_, err := c.NextID(context.Background())
		first <- err
	}()
	waittest.Until(t, "the first call", func() bool { return f.calls.Load() == 1 })
	time.Sleep(cfg.Timeout / 2)
	const others = 5
	var wg sync.WaitGroup
	for range others {
		wg.Go(func() {
			if _, err := c.NextID(context.Background()); err != nil {
				t.Errorf("a call in flight when another timed out: %v", err)
			}
		})
	}
	if err := <-first; !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("the call on the silent connection: %v; want ErrUnavailable (a timeout)", err)
	}
	wg.Wait()
	if s := c.Servers()[0]; s.Breaker != gobreaker.StateClosed {
		t.Errorf("breaker %v after one timeout; want closed", s.Breaker)
	}
	if got := counter(t, reg, "vesta_client_calls_total", "server", f.addr, "result", "timeout"); got != 1 {
		t.Errorf("%v timeouts counted; want 1", got)
	}
}

// manualClient is a client of cfg on a manual clock at now, and a registry
// of its metrics.
func manualClient(t testing.TB, cfg client.Config) (*client.Client, *core.ManualClock, *prometheus.Registry) {
	t.Helper()
	clk := core.NewManualClock(time.Now())
	c := clockClient(t, cfg, clk)
	return c, clk, registry(t, c)
}
