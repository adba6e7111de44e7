package client_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
)

// startGrouper is a fake with Vesta.TakeIDs and its singles key.
func startGrouper(t testing.TB, room int64, retryMS uint64) *fake {
	t.Helper()
	f := startTaker(t, 1, 1000, room, retryMS)
	f.singles.Store(true)
	return f
}

// Concurrent NextIDs ride shared TakeIDs requests with singles set: fewer
// requests than calls, every ID distinct, none lost.
func TestSinglesCoalesced(t *testing.T) {
	f := startGrouper(t, -1, 1)
	cfg, _ := testConfig(t, f.addr)
	cfg.NoFallback = true
	c := newClient(t, cfg)
	var got collect
	var wg sync.WaitGroup
	const callers, per = 64, 50
	got.singles(t, &wg, c, callers, per)
	wg.Wait()
	if n := len(got.seen); n != callers*per || got.dups != 0 {
		t.Fatalf("%d distinct IDs, %d repeated; want %d, 0", n, got.dups, callers*per)
	}
	takes, grouped := f.takes.Load(), f.grouped.Load()
	if grouped != takes || takes >= callers*per {
		t.Fatalf("%d TakeIDs requests, %d of them with singles, for %d calls; want all with singles, fewer than the calls", takes, grouped, callers*per)
	}
	t.Logf("%d calls in %d requests", callers*per, takes)
}

// A group the server answers short (its ceiling) serves its first riders;
// the others find the server busy, as a TakeIDs of one that got none: they
// wait for its mark within their context, no ID given twice, the breaker
// untouched.
func TestSinglesShortGroup(t *testing.T) {
	const room, callers = 10, 32
	f := startGrouper(t, room, 60_000)
	cfg, _ := testConfig(t, f.addr)
	cfg.NoFallback = true
	c := newClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var got collect
	var failed, other atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			id, err := c.NextID(ctx)
			switch {
			case err == nil:
				got.add(id)
			case errors.Is(err, context.DeadlineExceeded):
				failed.Add(1)
			default:
				other.Add(1)
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(got.seen); n != room || got.dups != 0 || failed.Load() != callers-room || other.Load() != 0 {
		t.Fatalf("%d IDs (%d repeated), %d calls out of time, %d other failures; want %d, 0, %d, 0",
			n, got.dups, failed.Load(), other.Load(), room, callers-room)
	}
	if st := c.Servers()[0].Breaker; st != gobreaker.StateClosed {
		t.Fatalf("breaker %v; want closed", st)
	}
}
