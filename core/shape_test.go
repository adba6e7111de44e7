package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
)

// ledger records every ID issued across generators, as numbers: two
// configurations of one machine ID must never issue the same 64 bits.
type ledger map[core.ID]string

func (l ledger) add(tb testing.TB, who string, ids []core.ID) {
	tb.Helper()
	for _, id := range ids {
		if prev, ok := l[id]; ok {
			tb.Fatalf("ID %d issued by %s and by %s", id, prev, who)
		}
		l[id] = who
	}
}

// issueFor issues IDs over span of the manual clock, in steps.
func issueFor(tb testing.TB, g *core.Generator, clk *core.ManualClock, span time.Duration) []core.ID {
	tb.Helper()
	var out []core.ID
	for t := time.Duration(0); t < span; t += 250 * time.Millisecond {
		ids, err := g.NextIDs(context.Background(), core.Embedded, 3000)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, ids...)
		clk.Advance(250 * time.Millisecond)
	}
	return out
}

// advanceWhileWaiting moves clk forward by step whenever a goroutine sleeps
// on it, until the test ends: the clock moves only while New waits.
func advanceWhileWaiting(t *testing.T, clk *core.ManualClock, step time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for clk.BlockUntil(ctx, 1) == nil {
			clk.Advance(step)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func shapedCfg(clk core.Clock, g core.GuardStore, layout core.Layout, typ core.Type, epoch time.Time) core.Config {
	cfg := guarded(clk, g)
	cfg.Layout, cfg.Type, cfg.Epoch, cfg.Machine = layout, typ, epoch, 7
	return cfg
}

func TestFileGuardRecordsTheShape(t *testing.T) {
	dir := t.TempDir()
	clk := core.NewManualClock(t0)
	fg, err := core.OpenFileGuard(dir, 7)
	if err != nil {
		t.Fatal(err)
	}
	epoch := t0.Add(-24 * time.Hour)
	g, err := core.New(context.Background(), shapedCfg(clk, fg, core.Vesta, core.MinGranularity, epoch))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	fg.Close()
	b, err := os.ReadFile(fg.Path())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["layout"] != "vesta" || m["type"] != 1.0 || m["epoch_unix_ms"] != float64(epoch.UnixMilli()) || m["version"] != 0.0 {
		t.Fatalf("mark file %s; want layout, type, epoch and version recorded", b)
	}
}

// A mark file written before shapes were recorded reads as the loading
// generator's own shape, and gains the shape at the first save.
func TestLegacyMarkFileIsSameShape(t *testing.T) {
	dir := t.TempDir()
	fg := fileGuard(t, dir, 7)
	legacy := `{"machine":7,"mark_unix_ms":` + itoa(t0.Add(time.Second).UnixMilli()) + `,"mark":"x"}`
	if err := os.WriteFile(fg.Path(), []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := core.NewManualClock(t0)
	g := newGen(t, shapedCfg(clk, fg, core.Vesta, core.MaxPeak, time.Time{}))
	id, err := g.NextID(context.Background(), core.Embedded)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Codec().Explain(id).Time; got < markUnit(t, g, t0.Add(time.Second)) {
		t.Fatalf("first unit %d below the legacy mark", got)
	}
	b, _ := os.ReadFile(fg.Path())
	if !strings.Contains(string(b), `"layout":"vesta"`) {
		t.Fatalf("after a save the file is %s; want the shape recorded", b)
	}
}

// A mark file as the previous release wrote it (the type a number) still
// loads: the stored format did not change when core.Type learnt its text
// form for configuration files.
func TestMarkFileOfThePreviousReleaseLoads(t *testing.T) {
	dir := t.TempDir()
	fg := fileGuard(t, dir, 7)
	mark := t0.Add(time.Second)
	old := `{"machine":7,"mark_unix_ms":` + itoa(mark.UnixMilli()) + `,"mark":"x","layout":"vesta","type":0,"epoch_unix_ms":` +
		itoa(core.VestaEpoch.UnixMilli()) + `,"version":0}`
	if err := os.WriteFile(fg.Path(), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	g := newGen(t, shapedCfg(core.NewManualClock(t0), fg, core.Vesta, core.MaxPeak, time.Time{}))
	id, err := g.NextID(context.Background(), core.Embedded)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Codec().Explain(id).Time; got < markUnit(t, g, mark) {
		t.Fatalf("first unit %d below the mark", got)
	}
}

func TestShapeRules(t *testing.T) {
	e1 := t0.Add(-30 * 24 * time.Hour)
	mark := t0.Add(time.Second)
	old := core.Shape{Layout: core.Sorted, Type: core.MaxPeak, EpochMs: e1.UnixMilli()}
	for _, tc := range []struct {
		name      string
		layout    core.Layout
		typ       core.Type
		epoch     time.Time
		wait      time.Duration // MaxStartupWait
		wantErr   []error
		wantInMsg []string
		startAt   time.Time // the first ID's unit starts at or after this
	}{
		{name: "another layout", layout: core.Vesta, epoch: e1, wait: time.Hour,
			wantErr: []error{core.ErrShape}, wantInMsg: []string{"layout sorted", "layout vesta"}},
		{name: "another layout and type", layout: core.Vesta, typ: core.MinGranularity, epoch: e1, wait: time.Hour,
			wantErr: []error{core.ErrShape}, wantInMsg: []string{"layout sorted", "layout vesta"}},
		{name: "later epoch beyond the wait", epoch: e1.Add(time.Hour), wait: 10 * time.Second,
			wantErr: []error{core.ErrShape, core.ErrClockBehind}, wantInMsg: []string{e1.Format(time.RFC3339), e1.Add(time.Hour).Format(time.RFC3339)}},
		{name: "later epoch waited for", epoch: e1.Add(time.Minute), wait: 2 * time.Minute, startAt: mark.Add(time.Minute)},
		{name: "earlier epoch", epoch: e1.Add(-time.Hour), startAt: mark},
		{name: "another type", typ: core.MinGranularity, epoch: e1, startAt: mark},
		{name: "same shape", epoch: e1, startAt: mark},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := core.NewManualClock(t0)
			store := core.NewMemGuard(mark)
			store.SetShape(old)
			cfg := shapedCfg(clk, store, tc.layout, tc.typ, tc.epoch)
			cfg.MaxStartupWait = tc.wait
			if tc.wait > 0 {
				advanceWhileWaiting(t, clk, time.Second)
			}
			g, err := core.New(context.Background(), cfg)
			if len(tc.wantErr) > 0 {
				for _, want := range tc.wantErr {
					if !errors.Is(err, want) {
						t.Fatalf("New: %v; want %v", err, want)
					}
				}
				for _, s := range tc.wantInMsg {
					if !strings.Contains(err.Error(), s) {
						t.Fatalf("New: %v; want it to name %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer g.Close()
			id, err := g.NextID(context.Background(), core.Embedded)
			if err != nil {
				t.Fatal(err)
			}
			if u := g.Codec().Explain(id).Time; u < markUnit(t, g, tc.startAt) {
				t.Fatalf("first ID at unit %d; want at or after %s (unit %d)", u, tc.startAt, markUnit(t, g, tc.startAt))
			}
			if sh, ok := store.Shape(); !ok || sh != g.Control().Shape() {
				t.Fatalf("the store records %v; want the new shape %v", sh, g.Control().Shape())
			}
		})
	}
}

// TestEpochChangeLedger restarts one machine ID with the epoch moved
// later and then earlier, on one file guard and one fake clock, keeping a
// ledger of every ID: no 64-bit value may repeat.
func TestEpochChangeLedger(t *testing.T) {
	dir := t.TempDir()
	clk := core.NewManualClock(t0)
	led := ledger{}
	e1 := t0.Add(-10 * 24 * time.Hour)
	run := func(name string, epoch time.Time, wait time.Duration) []core.ID {
		fg, err := core.OpenFileGuard(dir, 7)
		if err != nil {
			t.Fatal(err)
		}
		defer fg.Close()
		cfg := shapedCfg(clk, fg, core.Sorted, core.MaxPeak, epoch)
		cfg.MaxStartupWait = wait
		start := clk.Now()
		g, err := core.New(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: started after %s on the fake clock", name, clk.Now().Sub(start))
		ids := issueFor(t, g, clk, 2*time.Second)
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		led.add(t, name, ids)
		return ids
	}
	first := run("epoch e1", e1, 0)
	// A later epoch by one second: the same instant gives time fields one
	// second smaller, which e1 issued. It starts above every e1 ID,
	// borrowing that second (MaxBorrow 1s), so without waiting.
	later := run("epoch e1+1s", e1.Add(time.Second), 0)
	if later[0] <= first[len(first)-1] {
		t.Fatalf("the later epoch's first ID %d is not above the old last %d", later[0], first[len(first)-1])
	}
	// An earlier epoch starts at once, above every old ID.
	before := clk.Now()
	earlier := run("epoch e1-1h", e1.Add(-time.Hour), 0)
	if earlier[0] <= later[len(later)-1] {
		t.Fatalf("the earlier epoch's first ID %d is not above the old last %d", earlier[0], later[len(later)-1])
	}
	if d := clk.Now().Sub(before); d > 3*time.Second {
		t.Fatalf("the earlier epoch waited %s", d)
	}
	t.Logf("ledger of %d IDs across three configurations: no duplicate", len(led))
}

func TestRekeyOntoAnotherLayoutIsRefused(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, shapedCfg(clk, core.NewMemGuard(time.Time{}), core.Sorted, core.MaxPeak, time.Time{}))
	other := core.NewMemGuard(t0)
	other.SetShape(core.Shape{Layout: core.Vesta, EpochMs: core.VestaEpoch.UnixMilli()})
	err := g.Control().Rekey(context.Background(), 8, other)
	if !errtest.Wraps(err, core.ErrShape, "machine 8") {
		t.Fatalf("Rekey onto a Vesta-layout mark: %v; want ErrShape naming machine 8", err)
	}
}

func TestConfigReadyAt(t *testing.T) {
	for _, tc := range []struct {
		typ    core.Type
		borrow time.Duration
		mark   time.Time
		want   time.Time
	}{
		{core.MaxPeak, 0, t0.Add(1500 * time.Millisecond), t0.Add(2 * time.Second)},
		{core.MaxPeak, 1500 * time.Millisecond, t0.Add(1500 * time.Millisecond), t0.Add(time.Second)},
		{core.MinGranularity, time.Second, t0.Add(1500*time.Millisecond + time.Microsecond), t0.Add(501 * time.Millisecond)},
	} {
		cfg := core.Config{Type: tc.typ, MaxBorrow: tc.borrow}
		if got := cfg.ReadyAt(tc.mark); !got.Equal(tc.want) {
			t.Errorf("ReadyAt(%s) with %s borrow %s = %s; want %s", tc.mark, tc.typ, tc.borrow, got, tc.want)
		}
		// A generator started at that clock reading on that mark does not wait.
		clk := core.NewManualClock(tc.want)
		cfg.Clock, cfg.Guard = clk, core.NewMemGuard(tc.mark)
		if _, err := core.New(context.Background(), cfg); err != nil {
			t.Errorf("New at ReadyAt: %v", err)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
