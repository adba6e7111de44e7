package core_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// TestImpossibleCountsAreErrors: counts that can never be issued fail with
// ErrInvalidCount and allocate nothing, never a makeslice panic.
func TestImpossibleCountsAreErrors(t *testing.T) {
	g := newGen(t, core.Config{Clock: core.NewManualClock(t0)})
	for _, n := range []int{0, -1, core.MaxCount + 1, 1 << 40, 1 << 62, math.MaxInt} {
		if ids, err := g.NextIDs(context.Background(), core.Embedded, n); !errors.Is(err, core.ErrInvalidCount) || ids != nil {
			t.Errorf("NextIDs(%d) = %d IDs, %v; want ErrInvalidCount", n, len(ids), err)
		}
		if _, err := g.AppendIDs(context.Background(), core.Embedded, make([]core.ID, 3), n); !errors.Is(err, core.ErrInvalidCount) {
			t.Errorf("AppendIDs(%d): %v", n, err)
		}
		if ids, d, err := g.TryAppendIDs(core.Embedded, nil, n); !errors.Is(err, core.ErrInvalidCount) || ids != nil || d != 0 {
			t.Errorf("TryAppendIDs(%d) = %d IDs, %v, %v", n, len(ids), d, err)
		}
	}
}

// TestTryAppendIDs: what the sequence has now, then a retry hint that is
// exactly the start of the next unit MaxBorrow lets issuing reach.
func TestTryAppendIDs(t *testing.T) {
	clk := core.NewManualClock(t0.Add(300 * time.Microsecond))
	// min-granularity (1024 per ms), 2ms of borrowing: 3 units now.
	g := newGen(t, core.Config{Type: core.MinGranularity, Layout: core.Vesta, MaxBorrow: 2 * time.Millisecond, Clock: clk})
	ids, d, err := g.TryAppendIDs(core.Central, nil, 5000)
	if err != nil || len(ids) != 3*1024 {
		t.Fatalf("got %d IDs, %v; want 3072", len(ids), err)
	}
	gentest.Increasing(t, ids)
	if d != 700*time.Microsecond {
		t.Fatalf("retry after %v; want 700µs (the next unit)", d)
	}
	// Nothing more until then, and nothing waited for.
	if more, d2, err := g.TryAppendIDs(core.Central, ids, 1); err != nil || len(more) != len(ids) || d2 != d {
		t.Fatalf("again: %d IDs, %v, %v", len(more)-len(ids), d2, err)
	}
	if s := g.Stats(); s.Waits != 0 {
		t.Fatalf("%d waits", s.Waits)
	}
	clk.Advance(d)
	more, d, err := g.TryAppendIDs(core.Central, ids, 2000)
	if err != nil || len(more)-len(ids) != 1024 || d != time.Millisecond {
		t.Fatalf("after the retry: %d IDs, %v, %v", len(more)-len(ids), d, err)
	}
	gentest.Increasing(t, more)
	gentest.Unique(t, more)
	// Results hold what was issued, not what was asked for.
	if c := cap(more); c > 2*len(more) {
		t.Fatalf("cap %d for %d IDs", c, len(more))
	}
	g.Close()
	if _, _, err := g.TryAppendIDs(core.Central, nil, 1); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestTryAppendIDsGuardLag: a lagging time guard is a short retry, a
// failed one an error.
func TestTryAppendIDsGuardLag(t *testing.T) {
	g, store, release := guardBound(t)
	ids, d, err := g.TryAppendIDs(core.Central, nil, 4<<20)
	if err != nil || len(ids) == 0 || len(ids) >= 3<<20 || d <= 0 || d > 100*time.Millisecond {
		t.Fatalf("got %d IDs, retry %v, %v; want the reservation (under 3 units) and a short retry", len(ids), d, err)
	}
	store.Fail(errors.New("disk gone"))
	release()
	for {
		_, _, err = g.TryAppendIDs(core.Central, nil, 1)
		if err != nil {
			break
		}
	}
	if !errors.Is(err, core.ErrGuard) {
		t.Fatalf("got %v; want ErrGuard", err)
	}
}

// TestCloseWakesEveryWaiter: callers parked on the clock or on the time
// guard, with contexts that never end, return ErrClosed when the generator
// closes; none is stranded.
func TestCloseWakesEveryWaiter(t *testing.T) {
	for _, on := range []string{"clock", "guard", "clock without guard"} {
		t.Run(on, func(t *testing.T) {
			clk := core.NewManualClock(t0)
			store := core.NewMemGuard(time.Time{})
			cfg := guarded(clk, store)
			switch on {
			case "clock":
				cfg.MaxBorrow = 0
			case "guard":
				cfg.MaxBorrow = time.Hour
			case "clock without guard":
				cfg.MaxBorrow, cfg.Guard = 0, nil
			}
			g, err := core.New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			release := store.Block() // the guard's reservation stays where it is
			defer release()
			// Take everything issuable now: the sequence (clock) or the
			// reservation (guard).
			if _, d, err := g.TryAppendIDs(core.Embedded, nil, core.MaxCount); err != nil || d <= 0 {
				t.Fatalf("filling: %v, %v", d, err)
			}
			const callers = 8
			errc := make(chan error, callers)
			for i := range callers {
				go func() {
					var err error
					if i%2 == 0 {
						_, err = g.NextID(context.Background(), core.Embedded)
					} else {
						_, err = g.NextIDs(context.Background(), core.Embedded, 1<<20)
					}
					errc <- err
				}()
			}
			if on != "guard" {
				waittest.Sleepers(t, clk, callers)
			} else {
				time.Sleep(20 * time.Millisecond) // let them park on the guard
			}
			closed := make(chan struct{})
			go func() { g.Close(); close(closed) }()
			for range callers {
				if err := <-errc; !errors.Is(err, core.ErrClosed) {
					t.Fatalf("a waiter got %v; want ErrClosed", err)
				}
			}
			release() // the final mark's save
			<-closed
		})
	}
}

// TestRekeyWakesWaiters: callers parked on the old run return (fenced while
// the machine ID changes) instead of sleeping on a run that is gone.
func TestRekeyWakesWaiters(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Clock: clk, Machine: 3})
	if _, d, err := g.TryAppendIDs(core.Embedded, nil, core.MaxCount); err != nil || d <= 0 {
		t.Fatalf("filling: %v, %v", d, err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := g.NextID(context.Background(), core.Embedded)
		errc <- err
	}()
	waittest.Sleepers(t, clk, 1)
	newStore := core.NewMemGuard(time.Time{})
	release := newStore.Block()
	done := make(chan error, 1)
	go func() { done <- g.Control().Rekey(context.Background(), 4, newStore) }()
	if err := <-errc; !errors.Is(err, core.ErrFenced) {
		t.Fatalf("waiter got %v; want ErrFenced while re-keying", err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if e := g.Codec().Explain(next(t, g)); e.Machine != 4 {
		t.Fatalf("after Rekey: %+v", e)
	}
}

// TestReadyAfterStepBack: at the ceiling a generator is busy, still ready;
// after a clock step back past MaxBorrow it has nothing to issue until the
// clock catches up, and says so, until then.
func TestReadyAfterStepBack(t *testing.T) {
	clk := core.NewManualClock(t0.Add(300 * time.Microsecond))
	g := newGen(t, core.Config{Type: core.MinGranularity, Layout: core.Vesta, MaxBorrow: 2 * time.Millisecond, Clock: clk})
	ids, d, err := g.TryAppendIDs(core.Central, nil, 5000)
	if err != nil || d == 0 {
		t.Fatalf("at the ceiling: %d IDs, retry %v, %v", len(ids), d, err)
	}
	if err := g.Ready(); err != nil {
		t.Fatalf("Ready at the ceiling (retry in %v): %v; want ready", d, err)
	}
	last := ids[len(ids)-1]

	clk.Set(t0.Add(-time.Hour))
	if more, d, err := g.TryAppendIDs(core.Central, nil, 1); err != nil || len(more) != 0 || d < time.Hour {
		t.Fatalf("an hour back: %d IDs, retry %v, %v; want none, for an hour", len(more), d, err)
	}
	err = g.Ready()
	if !errtest.Wraps(err, core.ErrClockBehind, "resumes at") {
		t.Fatalf("Ready an hour back: %v; want ErrClockBehind saying when issuing resumes", err)
	}

	// Within a second of resuming it is ready again: the wait is short.
	clk.Set(t0.Add(2*time.Millisecond - 500*time.Millisecond))
	if err := g.Ready(); err != nil {
		t.Fatalf("Ready half a second before issuing resumes: %v", err)
	}
	clk.Set(t0.Add(3 * time.Millisecond))
	more, _, err := g.TryAppendIDs(core.Central, nil, 10)
	if err != nil || len(more) == 0 || more[0] <= last {
		t.Fatalf("after the clock caught up: %v, %v; want IDs above %d", more, err, last)
	}
	if err := g.Ready(); err != nil {
		t.Fatalf("Ready after the clock caught up: %v", err)
	}
}

// A step back within the unit being issued leaves its rest to issue:
// ready.
func TestReadyStepBackWithinUnit(t *testing.T) {
	clk := core.NewManualClock(t0.Add(300 * time.Microsecond))
	g := newGen(t, core.Config{Type: core.MinGranularity, Layout: core.Vesta, MaxBorrow: 2 * time.Millisecond, Clock: clk})
	if _, err := g.NextID(t.Context(), core.Central); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(-time.Hour))
	if err := g.Ready(); err != nil {
		t.Fatalf("Ready with the rest of the unit to issue: %v", err)
	}
}
