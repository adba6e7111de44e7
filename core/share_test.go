package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// shared returns a min-granularity generator (1024 IDs a millisecond, no
// borrowing, no random starts) on a manual clock, and a Share of it.
func shared(tb testing.TB, cfg core.ShareConfig) (*core.Generator, *core.Share, *core.ManualClock) {
	tb.Helper()
	clk := core.NewManualClock(t0)
	g := newGen(tb, core.Config{Type: core.MinGranularity, Layout: core.Vesta, Clock: clk})
	s, err := core.NewShare(g, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return g, s, clk
}

type outcome struct {
	ids []core.ID
	err error
	at  int // the tick it finished in
}

// collector gathers the outcomes of Append calls by name.
type collector struct {
	mu   sync.Mutex
	tick int
	got  map[string]outcome
}

func (c *collector) done(name string) func([]core.ID, error) {
	return func(ids []core.ID, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.got[name] = outcome{ids, err, c.tick}
	}
}

func (c *collector) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

func (c *collector) get(name string) (outcome, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.got[name]
	return o, ok
}

// append calls s.Append and records an answer given at once like one given
// later.
func (c *collector) append(s *core.Share, ctx context.Context, key uint64, name string, n int) bool {
	ids, queued, err := s.Append(ctx, key, core.Central, nil, n, c.done(name))
	if !queued {
		c.done(name)(ids, err)
	}
	return queued
}

// step advances the clock by a millisecond once the Share's goroutine
// sleeps on it; it returns false, without advancing, once no call waits.
func (c *collector) step(tb testing.TB, s *core.Share, clk *core.ManualClock) bool {
	tb.Helper()
	idle := false
	waittest.Until(tb, "the Share's goroutine to sleep on the clock", func() bool {
		if clk.Waiters() > 0 {
			return true
		}
		_, calls := s.Waiting()
		idle = calls == 0
		return idle
	})
	if idle {
		return false
	}
	c.mu.Lock()
	c.tick++
	c.mu.Unlock()
	clk.Advance(time.Millisecond)
	return true
}

// TestShareRoundRobin: a key with many large waiting calls does not delay
// another key's call by more than a tick; every call gets all its IDs,
// increasing, and no ID is issued twice.
func TestShareRoundRobin(t *testing.T) {
	g, s, clk := shared(t, core.ShareConfig{})
	// Spend the current unit.
	if ids, d, err := s.Take(core.Central, nil, 5000); err != nil || len(ids) != 1024 || d <= 0 {
		t.Fatalf("Take: %d, %v, %v", len(ids), d, err)
	}
	c := &collector{got: map[string]outcome{}}
	ctx := context.Background()
	for _, name := range []string{"greedy1", "greedy2", "greedy3", "greedy4"} {
		if !c.append(s, ctx, 1, name, 3000) {
			t.Fatalf("%s was not queued", name)
		}
	}
	if !c.append(s, ctx, 2, "light", 10) {
		t.Fatal("light was not queued while others wait")
	}
	if ids, calls := s.Waiting(); ids != 4*3000+10 || calls != 5 {
		t.Fatalf("Waiting() = %d, %d", ids, calls)
	}
	for c.step(t, s, clk) {
		if c.tick > 20 {
			t.Fatalf("after %d ms: %d calls done", c.tick, c.n())
		}
		if _, ok := c.get("light"); !ok && c.tick >= 2 {
			t.Fatalf("light still waits after %d ticks", c.tick)
		}
	}
	waittest.Until(t, "the last done callback", func() bool { return c.n() >= 5 })
	light, _ := c.get("light")
	g1, _ := c.get("greedy1")
	if light.err != nil || len(light.ids) != 10 || light.at > g1.at {
		t.Fatalf("light: %d IDs, %v, at tick %d (greedy1 at %d)", len(light.ids), light.err, light.at, g1.at)
	}
	var all []core.ID
	for _, name := range []string{"greedy1", "greedy2", "greedy3", "greedy4", "light"} {
		o, _ := c.get(name)
		if o.err != nil {
			t.Fatalf("%s: %v", name, o.err)
		}
		gentest.Increasing(t, o.ids)
		all = append(all, o.ids...)
	}
	gentest.Unique(t, all)
	// 12010 IDs at 1024 a tick: 12 ticks; the greedy calls in order.
	for i, name := range []string{"greedy1", "greedy2", "greedy3"} {
		a, _ := c.get(name)
		b, _ := c.get([]string{"greedy2", "greedy3", "greedy4"}[i])
		if a.at > b.at {
			t.Fatalf("%s finished after the next call of its key", name)
		}
	}
	if ids, calls := s.Waiting(); ids != 0 || calls != 0 {
		t.Fatalf("Waiting() = %d, %d after all", ids, calls)
	}
	if st := g.Stats(); st.Waits != 0 {
		t.Fatalf("the generator slept %d times: the Share must not block in it", st.Waits)
	}
}

// TestSharePacesBatchesNotSingles: past the pace, batches wait or are told
// to retry, but single IDs still come at once from the rest of the unit.
func TestSharePacesBatchesNotSingles(t *testing.T) {
	clk := core.NewManualClock(t0)
	// max-peak, a second of borrowing: the pace is a unit ahead of the clock.
	g := newGen(t, core.Config{Layout: core.Vesta, MaxBorrow: time.Second, Clock: clk})
	s, err := core.NewShare(g, core.ShareConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clk.Advance(500 * time.Millisecond)
	// The pace at t0+0.5s: one unit and a half, so 1.5 M IDs at once.
	ids, d, err := s.Take(core.Central, nil, 4<<20)
	if err != nil || len(ids) != 3<<19 || d <= 0 || d > 10*time.Millisecond {
		t.Fatalf("Take: %d IDs, retry %v, %v; want %d and a short retry", len(ids), d, err, 3<<19)
	}
	if more, d, err := s.Take(core.Central, nil, 2); err != nil || len(more) != 0 || d <= 0 {
		t.Fatalf("a batch past the pace: %d IDs, %v, %v", len(more), d, err)
	}
	for range 1000 {
		if one, _, err := s.Take(core.Central, nil, 1); err != nil || len(one) != 1 {
			t.Fatalf("a single ID past the pace: %v, %v", one, err)
		}
		ids, queued, err := s.Append(context.Background(), 9, core.Central, nil, 1, func([]core.ID, error) {})
		if err != nil || queued || len(ids) != 1 {
			t.Fatalf("Append of one past the pace: %v, %v, %v", ids, queued, err)
		}
	}
	// The pace moves with the clock: a millisecond frees some thousand IDs.
	clk.Advance(3 * time.Millisecond)
	if more, _, err := s.Take(core.Central, nil, 100); err != nil || len(more) != 100 {
		t.Fatalf("after 3ms: %d IDs, %v", len(more), err)
	}
}

// TestShareBudget: calls past the bounds fail at once with ErrBusy, and
// what cancelled calls were owed goes back to the budget.
func TestShareBudget(t *testing.T) {
	_, s, _ := shared(t, core.ShareConfig{MaxWaitingIDs: 5000, MaxWaitingCalls: 3})
	if _, _, err := s.Take(core.Central, nil, 2000); err != nil {
		t.Fatal(err)
	}
	c := &collector{got: map[string]outcome{}}
	ctx, cancel := context.WithCancel(context.Background())
	if !c.append(s, ctx, 1, "a", 4000) {
		t.Fatal("a not queued")
	}
	if c.append(s, context.Background(), 2, "b", 1001) {
		t.Fatal("b queued past MaxWaitingIDs")
	}
	if o, _ := c.get("b"); !errors.Is(o.err, core.ErrBusy) {
		t.Fatalf("b: %v; want ErrBusy", o.err)
	}
	for _, name := range []string{"c", "d"} {
		if !c.append(s, context.Background(), 3, name, 500) {
			t.Fatalf("%s not queued", name)
		}
	}
	if c.append(s, context.Background(), 4, "e", 1); true {
		if o, _ := c.get("e"); !errors.Is(o.err, core.ErrBusy) {
			t.Fatalf("e: %v; want ErrBusy past MaxWaitingCalls", o.err)
		}
	}
	cancel()
	waittest.Until(t, "a's answer", func() bool { _, ok := c.get("a"); return ok })
	if o, _ := c.get("a"); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("a: %v", o.err)
	}
	if ids, calls := s.Waiting(); ids != 1000 || calls != 2 {
		t.Fatalf("Waiting() = %d, %d after the cancel", ids, calls)
	}
	if !c.append(s, context.Background(), 2, "f", 4000) {
		t.Fatal("f not queued after the cancel freed the budget")
	}
}

// TestShareCloseReturnsEveryCaller: closing the Share, or the generator,
// ends every waiting call.
func TestShareCloseReturnsEveryCaller(t *testing.T) {
	for _, what := range []string{"share", "generator"} {
		t.Run(what, func(t *testing.T) {
			g, s, _ := shared(t, core.ShareConfig{})
			if _, _, err := s.Take(core.Central, nil, 2000); err != nil {
				t.Fatal(err)
			}
			const callers = 50
			errc := make(chan error, callers)
			for i := range callers {
				go func() {
					_, err := s.AppendIDs(context.Background(), uint64(i%7), core.Central, nil, 100+i)
					errc <- err
				}()
			}
			waittest.Until(t, "every caller waiting", func() bool { _, calls := s.Waiting(); return calls == callers })
			if what == "share" {
				s.Close()
			} else {
				g.Close() // wakes the Share's goroutine, asleep on the manual clock
			}
			for range callers {
				if err := <-errc; !errors.Is(err, core.ErrClosed) {
					t.Fatalf("a caller got %v; want ErrClosed", err)
				}
			}
			s.Close()
			if _, queued, err := s.Append(context.Background(), 1, core.Central, nil, 5000, func([]core.ID, error) {}); queued || !errors.Is(err, core.ErrClosed) {
				t.Fatalf("after Close: queued %v, %v", queued, err)
			}
		})
	}
}

func TestShareInvalid(t *testing.T) {
	_, s, _ := shared(t, core.ShareConfig{})
	for _, n := range []int{0, -5, core.MaxCount + 1, 1 << 62} {
		if _, _, err := s.Take(core.Central, nil, n); !errors.Is(err, core.ErrInvalidCount) {
			t.Errorf("Take(%d): %v", n, err)
		}
		if _, err := s.AppendIDs(context.Background(), 1, core.Central, nil, n); !errors.Is(err, core.ErrInvalidCount) {
			t.Errorf("AppendIDs(%d): %v", n, err)
		}
	}
	g := newGen(t, core.Config{})
	for _, cfg := range []core.ShareConfig{{MaxWaitingIDs: -1}, {MaxWaitingCalls: -1}} {
		if _, err := core.NewShare(g, cfg); !errors.Is(err, core.ErrConfig) {
			t.Errorf("NewShare(%+v): %v", cfg, err)
		}
	}
}

// TestShareBacklog: the estimate of a wait counts what waiting calls are
// owed, at the pace.
func TestShareBacklog(t *testing.T) {
	_, s, _ := shared(t, core.ShareConfig{})
	if d := s.Backlog(100); d != 0 {
		t.Fatalf("Backlog with room: %v", d)
	}
	if _, _, err := s.Take(core.Central, nil, 5000); err != nil { // the whole unit
		t.Fatal(err)
	}
	// No borrowing: the pace frees 1024 IDs at each millisecond.
	if d := s.Backlog(100); d != time.Millisecond {
		t.Fatalf("Backlog(100) = %v; want 1ms", d)
	}
	if !(&collector{got: map[string]outcome{}}).append(s, context.Background(), 1, "a", 3000) {
		t.Fatal("not queued")
	}
	// 3100 IDs: three units and 28 of the fourth.
	if d := s.Backlog(100); d != 4*time.Millisecond {
		t.Fatalf("Backlog(100) behind 3000 = %v; want 4ms", d)
	}
}

// TestShareConcurrentUnique: Take, Append and the generator's own NextID
// from many goroutines, across many units (the clock ticking under them):
// every call gets exactly what it asked for (Append) or at most that
// (Take), increasing, and no ID is issued twice.
func TestShareConcurrentUnique(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Type: core.MinGranularity, MaxBorrow: 2 * time.Millisecond, Clock: clk})
	s, err := core.NewShare(g, core.ShareConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ticker(t, clk, 50*time.Microsecond)
	const workers, calls = 8, 300
	var mu sync.Mutex
	var all []core.ID
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var mine []core.ID
			for i := range calls {
				n := 1 + (i*7919+w*104729)%3000
				var ids []core.ID
				switch i % 3 {
				case 0:
					var err error
					if ids, err = s.AppendIDs(context.Background(), uint64(w%3), core.Central, nil, n); err != nil || len(ids) != n {
						t.Errorf("AppendIDs(%d): %d IDs, %v", n, len(ids), err)
						return
					}
				case 1:
					var err error
					if ids, _, err = s.Take(core.Central, nil, n); err != nil || len(ids) > n {
						t.Errorf("Take(%d): %d IDs, %v", n, len(ids), err)
						return
					}
				default:
					id, err := g.NextID(context.Background(), core.Central)
					if err != nil {
						t.Error(err)
						return
					}
					ids = []core.ID{id}
				}
				gentest.Increasing(t, ids)
				mine = append(mine, ids...)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	gentest.Unique(t, all)
	if ids, calls := s.Waiting(); ids != 0 || calls != 0 {
		t.Fatalf("Waiting() = %d, %d at the end", ids, calls)
	}
}

// TestShareRekeyMidCall: a waiting call whose first IDs came from one
// machine ID is not completed with another's (they need not increase): it
// fails with ErrFenced; a call with no IDs yet is served by the new one.
func TestShareRekeyMidCall(t *testing.T) {
	g, s, clk := shared(t, core.ShareConfig{})
	if _, _, err := s.Take(core.Central, nil, 24); err != nil {
		t.Fatal(err)
	}
	c := &collector{got: map[string]outcome{}}
	if !c.append(s, context.Background(), 1, "straddling", 3000) { // 1000 now, 2000 later
		t.Fatal("not queued")
	}
	if !c.append(s, context.Background(), 2, "fresh", 10) {
		t.Fatal("not queued")
	}
	if err := g.Control().Rekey(context.Background(), 9, nil); err != nil {
		t.Fatal(err)
	}
	for c.step(t, s, clk) {
	}
	waittest.Until(t, "both answers", func() bool { return c.n() >= 2 })
	if o, _ := c.get("straddling"); !errors.Is(o.err, core.ErrFenced) {
		t.Fatalf("straddling call: %d IDs, %v; want ErrFenced", len(o.ids), o.err)
	}
	o, _ := c.get("fresh")
	if o.err != nil && !errors.Is(o.err, core.ErrFenced) {
		t.Fatalf("fresh call: %v", o.err)
	}
	for _, id := range o.ids {
		if m := g.Codec().Explain(id).Machine; m != 9 {
			t.Fatalf("fresh call got an ID of machine %d", m)
		}
	}
}
