package client_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

func TestPrefetchRefill(t *testing.T) {
	f := startFake(t, 1000, 64) // refills of 100 take two calls
	cfg := testConfig(t, f.addr)
	cfg.Prefetch = 100
	c, reg := meteredClient(t, cfg)
	buffered := func() float64 { return gauge(t, reg, "vesta_client_prefetch_buffered") }
	ctx := context.Background()
	var all collect

	waittest.Until(t, "the first fill", func() bool { return buffered() == 100 })
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
	waittest.Until(t, "the refill", func() bool { return buffered() == 100 })
	if f.calls.Load() != calls+2 {
		t.Fatalf("%d server calls for one refill of 70 with max_batch 64; want 2", f.calls.Load()-calls)
	}

	// Many callers drain it faster than it refills: nobody waits forever,
	// no ID is handed out twice.
	var wg sync.WaitGroup
	all.singles(t, &wg, c, 16, 300)
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
	cfg := testConfig(t, f.addr)
	cfg.Prefetch = 10
	cfg.Timeout = time.Hour
	c, err := client.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "the refill's call", func() bool { return f.calls.Load() == 1 })
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
	cfg := testConfig(t, f.addr)
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

// NextIDs hands out parts of the buffer without copying them: each batch
// is still the caller's own, so appending to one or writing into it leaves
// the others alone.
func TestPrefetchBatchesAreTheirOwn(t *testing.T) {
	f := startFake(t, 1000, 1000)
	cfg := testConfig(t, f.addr)
	cfg.Prefetch = 1000
	c, reg := meteredClient(t, cfg)
	waittest.Until(t, "the first fill", func() bool { return gauge(t, reg, "vesta_client_prefetch_buffered") == 1000 })
	ctx := context.Background()
	a, err := c.NextIDs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.NextIDs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(b)
	a = append(a, 0, 0, 0)
	for i := range a {
		a[i] = 0
	}
	if !slices.Equal(b, want) {
		t.Fatalf("writing to one batch changed the next: %v, want %v", b, want)
	}
	var all collect
	all.add(b...)
	all.add(want...)
	if all.dups != len(b) || b[0] == 0 {
		t.Fatalf("batches %v", b)
	}
}

func TestAppendIDs(t *testing.T) {
	for _, prefetch := range []int{0, 500} {
		f := startFake(t, 1000, 100)
		cfg := testConfig(t, f.addr)
		cfg.Prefetch = prefetch
		c, reg := meteredClient(t, cfg)
		if prefetch > 0 {
			waittest.Until(t, "the first fill", func() bool { return gauge(t, reg, "vesta_client_prefetch_buffered") == float64(prefetch) })
		}
		ctx := context.Background()
		buf := []core.ID{3, 2, 1}
		var all collect
		for range 5 {
			var err error
			buf, err = c.AppendIDs(ctx, buf[:3], 150)
			if err != nil {
				t.Fatal(err)
			}
			if len(buf) != 153 || !slices.Equal(buf[:3], []core.ID{3, 2, 1}) || !slices.IsSorted(buf[3:]) {
				t.Fatalf("prefetch %d: AppendIDs gave %d IDs after %v, sorted %v", prefetch, len(buf)-3, buf[:3], slices.IsSorted(buf[3:]))
			}
			all.add(buf[3:]...)
		}
		if all.dups > 0 {
			t.Fatalf("%d duplicates", all.dups)
		}
		if _, err := c.AppendIDs(ctx, buf, client.MaxCount+1); !errors.Is(err, core.ErrInvalidCount) {
			t.Fatalf("AppendIDs(MaxCount+1): %v", err)
		}
	}
}
