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
	cfg := testConfig(t, f.addr)
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
	cfg := testConfig(t, f.addr)
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

// A server that stops answering: the flying group times out and closes
// the silent connection, and the group held back behind it fails with it,
// so every rider's call ends within its attempts (no rider waits on a
// group that will never be sent).
func TestSinglesSilentServer(t *testing.T) {
	f := startGrouper(t, -1, 1)
	f.silent.Store(true)
	cfg := testConfig(t, f.addr)
	cfg.NoFallback = true
	cfg.Timeout = 100 * time.Millisecond
	c := newClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var late atomic.Int64
	for range 32 {
		wg.Go(func() {
			if _, err := c.NextID(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
				late.Add(1)
				t.Errorf("NextID on a silent server: %v; want its own failure, before the context's end", err)
			}
		})
	}
	wg.Wait()
	if f.calls.Load() == 0 {
		t.Fatal("no call reached the server")
	}
}

// The connection breaks (the server dies) while a group flies and the
// next is held back: the riders of both fail at once, none waits out its
// timeout or its context.
func TestSinglesConnectionBreaks(t *testing.T) {
	f := startGrouper(t, -1, 1)
	f.silent.Store(true)
	cfg := testConfig(t, f.addr)
	cfg.NoFallback = true
	cfg.ConnsPerServer = 1
	cfg.Timeout = time.Minute
	c := newClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	riders := func(n int) {
		for range n {
			wg.Go(func() {
				if _, err := c.NextID(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("NextID when the connection broke: %v; want its own failure, before the context's end", err)
				}
			})
		}
	}
	riders(8)
	for f.calls.Load() == 0 { // the first group flies
		time.Sleep(time.Millisecond)
	}
	riders(8) // these join the group held back behind it
	time.Sleep(20 * time.Millisecond)
	if got := f.calls.Load(); got != 1 {
		t.Fatalf("%d requests reached the server while the first flew; want 1", got)
	}
	f.kill()
	wg.Wait()
}
