package core_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// t0 is an arbitrary instant well after both epochs, on a whole second.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// newGen starts a generator, closed at cleanup.
var newGen = gentest.New

func next(tb testing.TB, g *core.Generator) core.ID {
	tb.Helper()
	id, err := g.NextID(context.Background(), core.Embedded)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// checkUnique fails on the first ID issued twice.
// checkStreams checks that each caller's IDs increase and that no ID occurs
// twice among all of them, which it returns.
func checkStreams(tb testing.TB, got [][]core.ID) []core.ID {
	tb.Helper()
	var all []core.ID
	for _, ids := range got {
		gentest.Increasing(tb, ids)
		all = append(all, ids...)
	}
	gentest.Unique(tb, all)
	return all
}

// ticker advances a ManualClock in small steps until stopped, so that
// concurrent callers cross many unit boundaries (random starts, carries).
func ticker(tb testing.TB, clk *core.ManualClock, step time.Duration) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				clk.Advance(step)
			}
		}
	}()
	tb.Cleanup(func() { close(stop); <-done })
}

func TestUniqueUnderConcurrency(t *testing.T) {
	perG := 300_000
	if testkit.Short() {
		perG = 30_000
	}
	for _, tc := range []struct {
		name string
		cfg  core.Config
		tick time.Duration
	}{
		// Borrowing far ahead: the state word only carries.
		{"max-peak/borrow", core.Config{MaxBorrow: time.Hour}, 0},
		// A clock racing forward: new units, random starts and carries mix.
		{"min-granularity/moving-clock", core.Config{Type: core.MinGranularity, MaxBorrow: 2 * time.Millisecond}, 50 * time.Microsecond},
		{"vesta/moving-clock", core.Config{Layout: core.Vesta, Type: core.MinGranularity, MaxBorrow: time.Millisecond}, 100 * time.Microsecond},
		{"leaf/moving-clock", core.Config{Layout: core.Leaf, Type: core.MinGranularity, MaxBorrow: time.Millisecond}, 100 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := core.NewManualClock(t0)
			tc.cfg.Clock = clk
			g := newGen(t, tc.cfg)
			if tc.tick > 0 {
				ticker(t, clk, tc.tick)
			}
			const goroutines = 8
			got := make([][]core.ID, goroutines)
			var wg sync.WaitGroup
			for i := range goroutines {
				wg.Go(func() {
					ids := make([]core.ID, 0, perG)
					for range perG {
						id, err := g.NextID(context.Background(), core.Embedded)
						if err != nil {
							t.Error(err)
							return
						}
						ids = append(ids, id)
					}
					got[i] = ids
				})
			}
			wg.Wait()
			all := checkStreams(t, got)
			if len(all) != goroutines*perG {
				t.Fatalf("got %d IDs", len(all))
			}
			if s := g.Stats(); s.Issued != uint64(len(all)) {
				t.Fatalf("Stats.Issued = %d; issued %d", s.Issued, len(all))
			}
		})
	}
}

func TestBatchesInterleavedWithSingles(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Type: core.MinGranularity, MaxBorrow: 5 * time.Millisecond, Clock: clk})
	ticker(t, clk, 20*time.Microsecond)
	const goroutines = 6
	got := make([][]core.ID, goroutines)
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			var ids []core.ID
			for range 400 {
				if rng.IntN(2) == 0 {
					id, err := g.NextID(context.Background(), core.Embedded)
					if err != nil {
						t.Error(err)
						return
					}
					ids = append(ids, id)
					continue
				}
				n := 1 + rng.IntN(3000)
				before := len(ids)
				var err error
				ids, err = g.AppendIDs(context.Background(), core.Embedded, ids, n)
				if err != nil || len(ids)-before != n {
					t.Errorf("AppendIDs(%d) gave %d, %v", n, len(ids)-before, err)
					return
				}
			}
			got[i] = ids
		})
	}
	wg.Wait()
	all := checkStreams(t, got)
	if s := g.Stats(); s.Issued != uint64(len(all)) {
		t.Fatalf("Stats.Issued = %d; issued %d", s.Issued, len(all))
	}
}

// A batch larger than what may be borrowed is served in parts, waiting for
// the clock between them, and still comes back whole and increasing.
func TestBatchSpansUnitsAndWaits(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Type: core.MinGranularity, Clock: clk}) // never borrow
	var ids []core.ID
	ctx, finished := context.WithCancel(context.Background())
	go func() {
		defer finished()
		var err error
		if ids, err = g.NextIDs(context.Background(), core.Embedded, 3000); err != nil {
			t.Error(err)
		}
	}()
	for clk.BlockUntil(ctx, 1) == nil {
		clk.Advance(time.Millisecond)
	}
	<-ctx.Done()
	if len(ids) != 3000 {
		t.Fatalf("got %d IDs", len(ids))
	}
	gentest.Increasing(t, ids)
	units := map[uint64]bool{}
	for _, id := range ids {
		units[g.Codec().Explain(id).Time] = true
	}
	if len(units) < 3 {
		t.Fatalf("3000 IDs in %d units; a unit holds 1024", len(units))
	}
}

func TestNeverBelowLastUnitWhenClockStepsBack(t *testing.T) {
	for _, tc := range []struct {
		layout core.Layout
		maxSeq uint64
	}{{core.Sorted, 1023}, {core.Leaf, 4095}} {
		for _, step := range []time.Duration{-time.Second, -1500 * time.Millisecond, -time.Hour} {
			t.Run(tc.layout.String()+"/"+step.String(), func(t *testing.T) {
				clk := core.NewManualClock(t0)
				g := newGen(t, core.Config{Layout: tc.layout, Type: core.MinGranularity, MaxBorrow: time.Millisecond, Clock: clk})
				before := next(t, g)
				clk.Advance(step)
				// The rest of the last unit's sequence is still issued, above before.
				after := next(t, g)
				if after <= before {
					t.Fatalf("after a step of %s: %d not above %d", step, after, before)
				}
				if e := g.Codec().Explain(after); e.Time != g.Codec().Explain(before).Time {
					t.Fatalf("issued from unit %d, want the last unit %d", e.Time, g.Codec().Explain(before).Time)
				}
				// Exhaust that unit: then callers wait for the clock (it is more
				// than MaxBorrow behind), bounded by their context.
				ids, err := g.NextIDs(context.Background(), core.Embedded, int(tc.maxSeq-g.Codec().Explain(after).Seq))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				_, err = g.NextIDs(ctx, core.Embedded, int(tc.maxSeq+1))
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("with the clock %s behind, got %v; want a wait ended by the context", step, err)
				}
				// The clock comes back: issuing resumes above everything.
				clk.Set(t0.Add(10 * time.Millisecond))
				last := next(t, g)
				gentest.Increasing(t, append(append([]core.ID{before, after}, ids...), last))
			})
		}
	}
}

func TestExhaustionWaitsWithoutSpinning(t *testing.T) {
	clk := core.NewManualClock(t0)
	// min-granularity, 3 units of borrowing: 4 units of 1024 without a wait.
	g := newGen(t, core.Config{Type: core.MinGranularity, Layout: core.Vesta, MaxBorrow: 3 * time.Millisecond, Clock: clk})
	ids, err := g.NextIDs(context.Background(), core.Embedded, 4*1024)
	if err != nil {
		t.Fatal(err)
	}
	first, last := g.Codec().Explain(ids[0]), g.Codec().Explain(ids[len(ids)-1])
	if first.Seq != 0 || last.Time != first.Time+3 || last.Seq != 1023 {
		t.Fatalf("4096 IDs span %+v to %+v", first, last)
	}
	got := waitsWithoutSpinning(t, g, clk, core.Embedded)
	if s := g.Stats(); s.Waits != 1 || s.Ahead != 3*time.Millisecond {
		t.Fatalf("stats %+v; want 1 wait, 3ms ahead", s)
	}
	clk.Advance(time.Millisecond)
	id := <-got
	// seq 0, or 1: the fast path's add that found the unit ended drops
	// the state it got (the next unit's seq 0) rather than issue it
	// unchecked.
	if e := g.Codec().Explain(id); e.Time != last.Time+1 || e.Seq > 1 {
		t.Fatalf("after the wait got %+v; want unit %d seq 0 or 1", e, last.Time+1)
	}
}

// waitsWithoutSpinning starts a NextID with method m that must wait for
// clk, checks that it sleeps (a spinning caller would read the clock
// thousands of times in 20ms) and issues nothing while the clock stands,
// and returns where its ID arrives once the clock moves.
func waitsWithoutSpinning(t *testing.T, g *core.Generator, clk *core.ManualClock, m core.Method) <-chan core.ID {
	t.Helper()
	got := make(chan core.ID, 1)
	go func() {
		id, err := g.NextID(context.Background(), m)
		if err != nil {
			t.Error(err)
		}
		got <- id
	}()
	waittest.Sleepers(t, clk, 1)
	reads := clk.Reads()
	time.Sleep(20 * time.Millisecond)
	if r := clk.Reads(); r > reads+2 {
		t.Fatalf("the waiting caller read the clock %d times in 20ms: spinning", r-reads)
	}
	select {
	case id := <-got:
		t.Fatalf("issued %d without the clock moving", id)
	default:
	}
	return got
}

func TestWaitHonoursCancelledContext(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Layout: core.Vesta, Type: core.MinGranularity, Clock: clk})
	if _, err := g.NextIDs(context.Background(), core.Embedded, 1024); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := g.NextID(ctx, core.Embedded)
		errc <- err
	}()
	waittest.Sleepers(t, clk, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v; want context.Canceled", err)
	}
	// A cancelled wait reserves nothing: the next unit starts at seq 0
	// (or 1, see TestExhaustionWaitsWithoutSpinning).
	clk.Advance(time.Millisecond)
	if e := g.Codec().Explain(next(t, g)); e.Seq > 1 {
		t.Fatalf("after cancel: %+v", e)
	}
}

// Vesta's bug: threads that found the sequence exhausted each waited for the
// next unit and then issued (T+1, 0). Here they all wait and then get
// distinct IDs, because the state only ever grows.
func TestVestaDuplicateOnExhaustionIsImpossible(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Layout: core.Vesta, Type: core.MinGranularity, Clock: clk}) // MaxBorrow 0, as Vesta
	if _, err := g.NextIDs(context.Background(), core.Embedded, 1024); err != nil {
		t.Fatal(err)
	}
	const waiters = 64
	res := make(chan core.ID, waiters)
	for range waiters {
		go func() {
			id, err := g.NextID(context.Background(), core.Embedded)
			if err != nil {
				t.Error(err)
			}
			res <- id
		}()
	}
	waittest.Sleepers(t, clk, waiters)
	clk.Advance(time.Millisecond)
	var ids []core.ID
	for range waiters {
		id := <-res
		ids = append(ids, id)
		// The next unit; its first seqs, give or take the few states
		// NextID's fast path drops at a unit's end.
		if e := g.Codec().Explain(id); e.Time != g.Codec().Explain(ids[0]).Time || e.Seq >= 2*waiters {
			t.Fatalf("waiter got %+v", e)
		}
	}
	gentest.Unique(t, ids)
}

func TestRandomSequenceStart(t *testing.T) {
	for _, tc := range []struct {
		layout core.Layout
		typ    core.Type
		bound  uint64
	}{{core.Sorted, core.MaxPeak, 1024}, {core.Sorted, core.MinGranularity, 32}, {core.Vesta, core.MaxPeak, 1}, {core.Vesta, core.MinGranularity, 1},
		{core.Leaf, core.MinGranularity, 100}} { // Leaf's RANDOM.nextInt(100)
		t.Run(tc.layout.String()+"/"+tc.typ.String(), func(t *testing.T) {
			clk := core.NewManualClock(t0)
			g := newGen(t, core.Config{Layout: tc.layout, Type: tc.typ, Clock: clk})
			starts := map[uint64]bool{}
			for range 60 {
				e := g.Codec().Explain(next(t, g))
				if e.Seq >= tc.bound {
					t.Fatalf("unit starts at seq %d; want below %d", e.Seq, tc.bound)
				}
				starts[e.Seq] = true
				clk.Advance(tc.typ.Unit())
			}
			if tc.bound > 1 && len(starts) < 2 {
				t.Fatalf("60 units all started at %v", starts)
			}
		})
	}
}

func TestEndOfTime(t *testing.T) {
	c := mustCodec(t, core.Sorted, time.Time{})
	lastUnit, _ := c.TransTime(core.MaxPeak, 1<<30-1)
	clk := core.NewManualClock(lastUnit)
	g := newGen(t, core.Config{Clock: clk, MaxBorrow: time.Hour})
	ids, err := g.NextIDs(context.Background(), core.Embedded, 1<<20) // more than the last unit holds
	if !errors.Is(err, core.ErrEndOfTime) {
		t.Fatalf("got %v; want ErrEndOfTime", err)
	}
	for _, id := range ids {
		if e := c.Explain(id); e.Time != 1<<30-1 {
			t.Fatalf("ID %d decodes to unit %d: wrapped", id, e.Time)
		}
	}
	if _, err := g.NextID(context.Background(), core.Embedded); !errors.Is(err, core.ErrEndOfTime) {
		t.Fatalf("after the end: %v", err)
	}
	clk.Advance(100 * 365 * 24 * time.Hour)
	if _, err := g.NextID(context.Background(), core.Embedded); !errors.Is(err, core.ErrEndOfTime) {
		t.Fatalf("a century later: %v", err)
	}
}

func TestClockBeforeEpoch(t *testing.T) {
	clk := core.NewManualClock(core.SortedEpoch.Add(-time.Hour))
	g := newGen(t, core.Config{Clock: clk})
	if _, err := g.NextID(context.Background(), core.Embedded); !errors.Is(err, core.ErrBeforeEpoch) {
		t.Fatalf("got %v", err)
	}
	if err := g.Ready(); !errors.Is(err, core.ErrBeforeEpoch) {
		t.Fatalf("Ready: %v", err)
	}
}

func TestMethods(t *testing.T) {
	g := newGen(t, core.Config{Machine: 77, Version: 1})
	for _, m := range []core.Method{core.Embedded, core.Central, core.REST} {
		id, err := g.NextID(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		e := g.Codec().Explain(id)
		if e.Method != m || e.Machine != 77 || e.Version != 1 || e.Type != core.MaxPeak {
			t.Fatalf("%s: %+v", m, e)
		}
		if d := time.Since(e.Instant); d < -time.Second || d > 2*time.Second {
			t.Fatalf("instant %s is not now", e.Instant)
		}
	}
	if _, err := g.NextID(context.Background(), core.Reserved); !errors.Is(err, core.ErrOutOfRange) {
		t.Fatalf("reserved method: %v", err)
	}
	if _, err := g.NextIDs(context.Background(), core.Embedded, 0); !errors.Is(err, core.ErrInvalidCount) {
		t.Fatalf("count 0: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   core.Config
		field string
	}{
		{"layout", core.Config{Layout: 3}, "Layout"},
		{"leaf-type", core.Config{Layout: core.Leaf, Type: core.MaxPeak}, "Type"},
		{"leaf-version", core.Config{Layout: core.Leaf, Type: core.MinGranularity, Version: 1}, "Version"},
		{"leaf-epoch", core.Config{Layout: core.Leaf, Type: core.MinGranularity, Epoch: core.SortedEpoch}, "Epoch"},
		{"type", core.Config{Type: 2}, "Type"},
		{"version", core.Config{Version: 2}, "Version"},
		{"machine", core.Config{Machine: 1024}, "Machine"},
		{"borrow", core.Config{MaxBorrow: -1}, "MaxBorrow"},
		{"borrow-huge", core.Config{MaxBorrow: 25 * time.Hour}, "MaxBorrow"},
		{"window", core.Config{GuardWindow: time.Millisecond}, "GuardWindow"},
		{"wait", core.Config{MaxStartupWait: -time.Second}, "MaxStartupWait"},
		{"epoch", core.Config{Epoch: time.Unix(-5, 0)}, "Epoch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate() = %v; want an error naming %s", err, tc.field)
			}
			if _, err := core.New(context.Background(), tc.cfg); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	if err := core.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFence(t *testing.T) {
	g := newGen(t, core.DefaultConfig())
	cause := errors.New("lease lost")
	g.Control().Fence(cause)
	_, err := g.NextID(context.Background(), core.Embedded)
	if !errors.Is(err, core.ErrFenced) || !errors.Is(err, cause) {
		t.Fatalf("fenced: %v", err)
	}
	if _, err := g.NextIDs(context.Background(), core.Embedded, 5); !errors.Is(err, core.ErrFenced) {
		t.Fatalf("fenced batch: %v", err)
	}
	if err := g.Ready(); !errors.Is(err, cause) {
		t.Fatalf("Ready: %v", err)
	}
	g.Control().Unfence()
	next(t, g)
	if err := g.Ready(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	g := newGen(t, core.DefaultConfig())
	next(t, g)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.NextID(context.Background(), core.Embedded); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if err := g.Ready(); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Ready after Close: %v", err)
	}
}
