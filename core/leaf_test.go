package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
)

// leafConfig is a leaf generator on a manual clock: Leaf's own behaviour,
// no borrowing ahead of the clock.
func leafConfig(clk core.Clock, machine core.MachineID) core.Config {
	return core.Config{Layout: core.Leaf, Type: core.MinGranularity, Machine: machine, Clock: clk}
}

// A leaf ID is Leaf's formula over the generator's clock, whatever the
// publish method: there are no method bits to differ in.
func TestLeafIDsAreLeafsFormula(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, leafConfig(clk, 1023))
	ms := uint64(t0.UnixMilli() - 1288834974657)
	for _, m := range []core.Method{core.Embedded, core.Central, core.REST} {
		id, err := g.NextID(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		seq := uint64(id) & 4095
		if want := core.ID(ms<<22 | 1023<<12 | seq); id != want {
			t.Fatalf("%s: %d; want Leaf's %d", m, id, want)
		}
		if e := g.Codec().Explain(id); e.Method != core.MethodUnknown || e.Machine != 1023 || !e.Instant.Equal(t0) {
			t.Fatalf("%s: explained as %+v", m, e)
		}
		if int64(id) < 0 {
			t.Fatalf("%d is negative as a Java long", id)
		}
	}
	if own := g.Own(core.REST); own.Type != uint64(core.MinGranularity) || own.Version != 0 {
		t.Fatalf("Own = %+v", own)
	}
}

// Leaf's ceiling is 4,096 IDs per ms per worker. With no borrowing the
// 4,097th waits, without spinning, for the next millisecond; nothing
// repeats.
func TestLeafExhaustionWaitsForNextMillisecond(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, leafConfig(clk, 7))
	first := next(t, g)
	e0 := g.Codec().Explain(first)
	ids, err := g.NextIDs(context.Background(), core.Embedded, int(4095-e0.Seq))
	if err != nil {
		t.Fatal(err)
	}
	ids = append([]core.ID{first}, ids...)
	if last := g.Codec().Explain(ids[len(ids)-1]); last.Time != e0.Time || last.Seq != 4095 {
		t.Fatalf("the unit ends at %+v; want seq 4095 of unit %d", last, e0.Time)
	}
	// A caller that may not wait gets nothing.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.NextID(done, core.Embedded); !errors.Is(err, context.Canceled) {
		t.Fatalf("past the ceiling without waiting: %v", err)
	}
	got := waitsWithoutSpinning(t, g, clk, core.Central)
	clk.Advance(time.Millisecond)
	id := <-got
	if e := g.Codec().Explain(id); e.Time != e0.Time+1 || e.Seq > 1 {
		t.Fatalf("after the wait got %+v; want unit %d seq 0 or 1", e, e0.Time+1)
	}
	gentest.Increasing(t, append(ids, id))
	gentest.Unique(t, append(ids, id))
	if s := g.Stats(); s.Waits != 1 {
		t.Fatalf("stats %+v; want 1 wait", s)
	}
}

// A leaf generator's mark records its layout, so a restart of the machine
// ID with the sorted layout (or back) is refused: the fields sit elsewhere
// and IDs of the two could be equal.
func TestLeafShapeRefusesAnotherLayout(t *testing.T) {
	clk := core.NewManualClock(t0)
	guard := core.NewMemGuard(time.Time{})
	cfg := leafConfig(clk, 3)
	cfg.Guard = guard
	g, err := core.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	next(t, g)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	sorted := core.Config{Type: core.MinGranularity, Machine: 3, Clock: clk, Guard: guard}
	if _, err := core.New(context.Background(), sorted); !errors.Is(err, core.ErrShape) {
		t.Fatalf("sorted after leaf on one machine ID: %v; want ErrShape", err)
	}
	if sh, _ := cfg.Shape(); sh.Layout != core.Leaf || sh.EpochMs != 1288834974657 || sh.Type != core.MinGranularity {
		t.Fatalf("shape %+v", sh)
	}
}

func TestLeafMakeRefuses(t *testing.T) {
	c := mustCodec(t, core.Leaf, time.Time{})
	ms := uint64(core.MinGranularity)
	for _, tc := range []struct {
		f     core.Fields
		field string
	}{
		{core.Fields{Type: ms, Seq: 4096}, "seq 4096"},
		{core.Fields{Type: ms, Time: 1 << 41}, "time 2199023255552"},
		{core.Fields{Type: ms, Machine: 1024}, "machine 1024"},
		{core.Fields{Type: ms, Version: 2}, "version 2"},
		{core.Fields{Type: 0}, "counts milliseconds only"},
	} {
		if _, err := c.Make(tc.f); !errors.Is(err, core.ErrOutOfRange) || !contains(err, tc.field) {
			t.Errorf("Make(%+v) = %v; want ErrOutOfRange naming %q", tc.f, err, tc.field)
		}
	}
	if _, err := c.TransTime(core.MaxPeak, 1); !errors.Is(err, core.ErrOutOfRange) {
		t.Errorf("TransTime(max-peak): %v", err)
	}
	last, err := c.TransTime(core.MinGranularity, 1<<41-1)
	if err != nil || last.Year() != 2080 {
		t.Errorf("last leaf instant %s, %v; want 2080", last, err)
	}
}

func contains(err error, s string) bool {
	return err != nil && len(s) > 0 && strings.Contains(err.Error(), s)
}

// leafServer is Leaf's SnowflakeIDGenImpl.get, ported line for line (its
// lastTimestamp, sequence and the wait for the next millisecond), on the
// same manual clock: the Leaf fleet a migration starts from.
type leafServer struct {
	clk           *core.ManualClock
	worker        int64
	last, seq     int64
	sequenceStart int64 // Leaf: RANDOM.nextInt(100); fixed here
}

func (l *leafServer) get() int64 {
	ts := l.clk.Now().UnixMilli()
	if ts == l.last {
		l.seq = (l.seq + 1) & 4095
		if l.seq == 0 {
			l.clk.Advance(time.Millisecond) // tilNextMillis
			ts = l.clk.Now().UnixMilli()
		}
	} else {
		l.seq = l.sequenceStart
	}
	l.last = ts
	return (ts-1288834974657)<<22 | l.worker<<12 | l.seq
}

// The two migrations the README documents, each against a ported Leaf:
// drained (Leaf stops, vesta starts on the same worker ID) continues above
// every ID Leaf issued; side by side (vesta on worker IDs Leaf does not
// use, both issuing in the same milliseconds) never repeats one.
func TestLeafMigration(t *testing.T) {
	for _, tc := range []struct {
		name             string
		leafW, vestaW    int64
		drained          bool
		rounds, perRound int
	}{
		{"drained, same worker", 5, 5, true, 0, 0},
		{"side by side, other workers", 5, 900, false, 200, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := core.NewManualClock(t0)
			leaf := &leafServer{clk: clk, worker: tc.leafW, sequenceStart: 17}
			seen := map[int64]string{}
			var leafMax int64
			add := func(id int64, who string) {
				if prev, ok := seen[id]; ok {
					t.Fatalf("ID %d issued by %s and %s", id, prev, who)
				}
				seen[id] = who
			}
			for range 5000 { // past one millisecond's 4,096
				id := leaf.get()
				add(id, "leaf")
				leafMax = max(leafMax, id)
			}
			if tc.drained {
				// Leaf stopped; vesta starts a millisecond on, as any
				// restart does (a clock behind Leaf's last millisecond is
				// the operator's to check, as for Leaf itself).
				clk.Advance(time.Millisecond)
			}
			g := newGen(t, leafConfig(clk, core.MachineID(tc.vestaW)))
			if tc.drained {
				for range 5 {
					ids, err := g.NextIDs(context.Background(), core.REST, 1000)
					if err != nil {
						t.Fatal(err)
					}
					for _, id := range ids {
						add(int64(id), "vesta")
						if int64(id) <= leafMax {
							t.Fatalf("vesta's %d is not above Leaf's last %d", id, leafMax)
						}
					}
					clk.Advance(time.Millisecond)
				}
				return
			}
			for r := range tc.rounds {
				for range tc.perRound {
					add(leaf.get(), "leaf")
				}
				ids, err := g.NextIDs(context.Background(), core.Central, tc.perRound)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					add(int64(id), "vesta")
				}
				if r%7 == 0 {
					clk.Advance(time.Millisecond)
				}
			}
		})
	}
}
