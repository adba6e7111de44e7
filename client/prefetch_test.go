package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/waittest"
)

// waitFor polls cond until it holds (waittest.Until: a safety net against
// hangs, not a speed assertion).
var waitFor = waittest.Until

func TestPrefetchRefill(t *testing.T) {
	f := startFake(t, 1000, 64) // refills of 100 take two calls
	cfg, reg := testConfig(t, f.addr)
	cfg.Prefetch = 100
	c := newClient(t, cfg)
	buffered := func() float64 { return gauge(t, reg, "vesta_client_prefetch_buffered") }
	ctx := context.Background()
	var all collect

	waitFor(t, "the first fill", func() bool { return buffered() == 100 })
	calls := f.calls.Load()
	for range 50 { // down to 50: still not low
		id, err := c.NextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all.add(id)
	}
	if f.calls.Load() != calls || buffered() != 50 {
		t.Fatalf("after 50 NextIDs: %d server calls (want %d), %v buffered (want 50)", f.calls.Load(), calls, buffered())
	}
	ids, err := c.NextIDs(ctx, 20) // taken from the buffer too: 30 left, below half
	if err != nil {
		t.Fatal(err)
	}
	all.add(ids...)
	waitFor(t, "the refill", func() bool { return buffered() == 100 })
	if f.calls.Load() != calls+2 {
		t.Fatalf("%d server calls for one refill of 70 with max_batch 64; want 2", f.calls.Load()-calls)
	}

	// Many callers drain it faster than it refills: nobody waits forever,
	// no ID is handed out twice.
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 300 {
				id, err := c.NextID(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				all.add(id)
			}
		})
	}
	wg.Wait()
	if all.dups != 0 {
		t.Fatalf("%d duplicates among %d IDs", all.dups, len(all.seen))
	}
	for id := range all.seen {
		if e := c.Explain(id); e.Method != core.Central || e.Machine != 1000 {
			t.Fatalf("ID %+v; want central, machine 1000", e)
		}
	}
}

func TestPrefetchCloseStopsRefill(t *testing.T) {
	f := startFake(t, 1000, 100)
	f.silent.Store(true) // the refill's GenIDs hangs
	cfg, _ := testConfig(t, f.addr)
	cfg.Prefetch = 10
	cfg.Timeout = time.Hour
	c, err := client.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refill's call", func() bool { return f.calls.Load() == 1 })
	done := make(chan error, 1)
	go func() {
		_, err := c.NextID(context.Background()) // waits for the refill
		done <- err
	}()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, client.ErrClosed) {
		t.Fatalf("NextID during Close = %v; want ErrClosed", err)
	}
	// goleak (TestMain) checks that the refill goroutine is gone.
}

func TestPrefetchFallsBackWhenServersDown(t *testing.T) {
	f := startFake(t, 1000, 100)
	cfg, _ := testConfig(t, f.addr)
	cfg.Prefetch = 20
	c := newClient(t, cfg)
	ctx := context.Background()
	var all collect
	for range 20 {
		id, err := c.NextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all.add(id)
	}
	f.kill()
	fallbackIDs := 0
	for range 200 { // what was buffered still goes out; then the fallback
		id, err := c.NextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all.add(id)
		if c.Explain(id).Method == core.Embedded {
			fallbackIDs++
		}
	}
	if fallbackIDs < 150 || all.dups != 0 {
		t.Fatalf("%d fallback IDs of 200, %d duplicates", fallbackIDs, all.dups)
	}
}
