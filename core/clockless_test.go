package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
)

// NextID's clockless path (docs/design/generator.md, the fast path):
// inside a unit the checked path entered, no call reads the clock; the
// unit's alarm closes it.

// A second ID in the same unit reads no clock.
func TestClocklessNoClockRead(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Clock: clk})
	first := next(t, g)
	reads := clk.Reads()
	var last core.ID
	for range 1000 {
		last = next(t, g)
	}
	if r := clk.Reads(); r != reads {
		t.Fatalf("1000 IDs inside one unit read the clock %d times; want 0", r-reads)
	}
	if a, b := g.Codec().Explain(first), g.Codec().Explain(last); a.Time != b.Time || b.Seq != a.Seq+1000 {
		t.Fatalf("first %+v, last %+v; want the same unit, 1000 seqs on", a, b)
	}
}

// The clock moving past the unit's end sends the very next call to the
// clock and into the new unit, however few IDs the old one issued: the
// time source of the clockless path is the clock's own alarm, and a path
// left open by an alarm that never runs would keep issuing the old unit.
func TestClocklessEndsAtUnitEnd(t *testing.T) {
	for _, typ := range []core.Type{core.MaxPeak, core.MinGranularity} {
		t.Run(typ.String(), func(t *testing.T) {
			clk := core.NewManualClock(t0)
			g := newGen(t, core.Config{Clock: clk, Type: typ})
			e0 := g.Codec().Explain(next(t, g))
			next(t, g)
			for step := uint64(1); step <= 3; step++ {
				clk.Advance(typ.Unit())
				reads := clk.Reads()
				e := g.Codec().Explain(next(t, g))
				if e.Time != e0.Time+step {
					t.Fatalf("after %d units the ID is of unit %d; want %d", step, e.Time, e0.Time+step)
				}
				if clk.Reads() == reads {
					t.Fatal("the first ID of a new unit read no clock")
				}
				next(t, g) // and the new unit is clockless again
			}
		})
	}
}

// With the system clock the alarm is a runtime timer: a unit of 1 ms ends
// within a few milliseconds of real time, long before its 1024 IDs could
// carry issuing into the next unit.
func TestClocklessSystemClockUnitEnds(t *testing.T) {
	g := newGen(t, core.Config{Type: core.MinGranularity})
	e0 := g.Codec().Explain(next(t, g))
	for range 200 {
		time.Sleep(time.Millisecond)
		if e := g.Codec().Explain(next(t, g)); e.Time > e0.Time {
			return
		}
	}
	t.Fatalf("200 IDs a millisecond apart were all of unit %d", e0.Time)
}

// A deadline (FenceAfter) is checked against the clock on every call, the
// clockless path being open or not: a call past it fails however recently
// the unit was entered, and a call before it succeeds.
func TestClocklessDeadlineReadsClock(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Clock: clk})
	next(t, g)
	next(t, g) // the unit is open
	cause := errors.New("lease ends")
	g.Control().FenceAfter(10*time.Millisecond, cause)
	clk.Advance(9 * time.Millisecond) // the same unit (1s): still open
	reads := clk.Reads()
	next(t, g)
	if clk.Reads() == reads {
		t.Fatal("a call under a deadline read no clock")
	}
	clk.Advance(time.Millisecond) // at the deadline
	if _, err := g.NextID(context.Background(), core.Embedded); !errors.Is(err, core.ErrFenced) || !errors.Is(err, cause) {
		t.Fatalf("at the deadline: %v; want ErrFenced wrapping the cause", err)
	}
	g.Control().NoDeadline()
	next(t, g)
	// Fence stops the open unit at once; Unfence lets it go on.
	g.Control().Fence(cause)
	if _, err := g.NextID(context.Background(), core.Embedded); !errors.Is(err, core.ErrFenced) {
		t.Fatalf("fenced: %v; want ErrFenced", err)
	}
	g.Control().Unfence()
	next(t, g)
}

// Close shuts the open unit: nothing is issued after it, on either path.
func TestClocklessClose(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Clock: clk})
	next(t, g)
	next(t, g)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if id, err := g.NextID(context.Background(), core.Embedded); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("after Close: %d, %v; want ErrClosed", id, err)
	}
}

// Under concurrent callers and a clock moving in small steps, no ID is
// ahead of the clock (read after it returned) by more than MaxBorrow, and
// every ID is below the final mark: the clockless path issues only in
// units the checked path entered, within their bounds.
func TestClocklessNeverAheadUnderConcurrency(t *testing.T) {
	clk := core.NewManualClock(t0)
	guard := core.NewMemGuard(time.Time{})
	const borrow = 2 * time.Millisecond
	g := newGen(t, core.Config{Clock: clk, Type: core.MinGranularity, MaxBorrow: borrow, Guard: guard})
	ticker(t, clk, 50*time.Microsecond)
	const callers, per = 4, 20_000
	got := make([][]core.ID, callers)
	errs := make(chan error, callers)
	for i := range callers {
		go func() {
			for range per {
				id, err := g.NextID(context.Background(), core.Embedded)
				if err != nil {
					errs <- err
					return
				}
				if at, now := g.Codec().Explain(id).Instant, clk.Now(); at.After(now.Add(borrow)) {
					errs <- errors.New("an ID of " + at.String() + " at clock " + now.String())
					return
				}
				got[i] = append(got[i], id)
			}
			errs <- nil
		}()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	all := checkStreams(t, got)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	mark, err := guard.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range all {
		if at := g.Codec().Explain(id).Instant; !at.Before(mark) {
			t.Fatalf("ID of %s at or past the final mark %s", at, mark)
		}
	}
}
