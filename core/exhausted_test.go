package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
)

// TestExhaustedUnits: Stats.Exhausted counts the units whose sequence ran
// out, whichever path took their last state (NextID's add, a batch's
// reservation, a reservation starting at a unit's last state), and no unit
// the clock left with states unused, nor the unit below a run's floor.
func TestExhaustedUnits(t *testing.T) {
	const perUnit = 1024 // min-granularity: 10 bits of sequence
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, g *core.Generator, clk *core.ManualClock)
		want uint64
	}{
		{"a unit partly used, then the clock moves", func(t *testing.T, g *core.Generator, clk *core.ManualClock) {
			mustIDs(t, g, 10)
			clk.Advance(time.Millisecond)
			mustIDs(t, g, 10)
		}, 0},
		{"single IDs through a unit and into the next", func(t *testing.T, g *core.Generator, clk *core.ManualClock) {
			for range perUnit + 5 {
				if _, err := g.NextID(ctx, core.Central); err != nil {
					t.Fatal(err)
				}
			}
		}, 1},
		{"a batch over three units", func(t *testing.T, g *core.Generator, clk *core.ManualClock) {
			mustIDs(t, g, 2*perUnit+perUnit/2)
		}, 2},
		{"a batch ending on a unit's last state, then one more", func(t *testing.T, g *core.Generator, clk *core.ManualClock) {
			ids := mustIDs(t, g, 1)
			seq := g.Codec().Explain(ids[0]).Seq
			mustIDs(t, g, int(perUnit-1-seq)) // up to the last state of the unit
			if s := g.Stats(); s.Exhausted != 0 {
				t.Fatalf("at the unit's last state: %d", s.Exhausted)
			}
			clk.Advance(time.Millisecond) // the clock moves on: the spent unit still counts
			mustIDs(t, g, 1)
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := core.NewManualClock(t0)
			g := newGen(t, core.Config{Type: core.MinGranularity, MaxBorrow: 5 * time.Millisecond, Clock: clk})
			tc.run(t, g, clk)
			if got := g.Stats().Exhausted; got != tc.want {
				t.Fatalf("Exhausted = %d; want %d", got, tc.want)
			}
		})
	}
}

// TestExhaustedNotAtFloor: a run that starts above a time guard's mark
// starts at the last state of the unit below its floor, which nothing
// issued: the first ID counts no unit.
func TestExhaustedNotAtFloor(t *testing.T) {
	clk := core.NewManualClock(t0)
	guard := core.NewMemGuard(t0.Add(2 * time.Millisecond))
	g := newGen(t, core.Config{Type: core.MinGranularity, MaxBorrow: 5 * time.Millisecond, Clock: clk, Guard: guard})
	mustIDs(t, g, 1)
	if got := g.Stats().Exhausted; got != 0 {
		t.Fatalf("Exhausted = %d after the first ID above a floor; want 0", got)
	}
}

func mustIDs(t *testing.T, g *core.Generator, n int) []core.ID {
	t.Helper()
	ids, err := g.NextIDs(context.Background(), core.Central, n)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
