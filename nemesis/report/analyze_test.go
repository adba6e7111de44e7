package report_test

import (
	"math"
	"testing"
	"time"

	"github.com/vesta-go/vesta/nemesis/report"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// shares builds a run of 100 ms buckets over [0, dur) for the kinds,
// each bucket 100 calls of which share(kind, since start) are answered
// (negative: no calls at all).
func shares(dur time.Duration, kinds []string, share func(kind string, t time.Duration) float64) report.Run {
	const step = 100 * time.Millisecond
	r := report.Run{Name: "synthetic", Seed: 1, Start: t0, End: at(dur), Step: step}
	for t := time.Duration(0); t < dur; t += step {
		for _, k := range kinds {
			s := share(k, t)
			if s < 0 {
				continue
			}
			ok := int64(math.Round(100 * s))
			r.Buckets = append(r.Buckets, report.Bucket{At: at(t), Kind: k, OK: ok, Err: 100 - ok, Values: ok})
		}
	}
	return r
}

func TestAnalyzeFaults(t *testing.T) {
	sec := func(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
	between := func(t time.Duration, a, b float64) bool { return t >= sec(a) && t < sec(b) }
	// levels answers, within each span, its share of every kind's calls,
	// and all of them outside the spans.
	type span struct{ from, to, share float64 }
	levels := func(spans ...span) func(string, time.Duration) float64 {
		return func(_ string, t time.Duration) float64 {
			for _, s := range spans {
				if between(t, s.from, s.to) {
					return s.share
				}
			}
			return 1
		}
	}
	tests := []struct {
		name      string
		kinds     []string
		share     func(string, time.Duration) float64
		fault     report.Fault
		window    time.Duration
		recovered bool
		recovery  time.Duration
	}{{
		// Down from 5.0 s to 7.0 s, limping (90%) to 7.3 s, then up.
		name:      "outage 2.0 s, recovery 1.3 s",
		kinds:     []string{"rest", "rpc"},
		share:     levels(span{5, 7, 0}, span{7, 7.3, 0.9}),
		fault:     report.Fault{Kind: "kill", Target: "server A", Start: at(sec(5)), End: at(sec(6))},
		window:    sec(2),
		recovered: true, recovery: sec(1.3),
	}, {
		// A paused server: its callers' calls hang, so no bucket at all.
		name:      "no calls count as down",
		kinds:     []string{"client"},
		share:     levels(span{3, 4.5, -1}),
		fault:     report.Fault{Kind: "pause", Start: at(sec(3)), End: at(sec(4))},
		window:    sec(1.5),
		recovered: true, recovery: sec(0.5),
	}, {
		// Only rpc is affected; rest failing elsewhere is not its doing.
		name:  "only the affected kinds count",
		kinds: []string{"rest", "rpc"},
		share: func(k string, t time.Duration) float64 {
			if k == "rest" && between(t, 2, 9) {
				return 0
			}
			if k == "rpc" && between(t, 2, 2.4) {
				return 0.2
			}
			return 1
		},
		fault:     report.Fault{Kind: "partition", Start: at(sec(2)), End: at(sec(2.2)), Kinds: []string{"rpc"}},
		window:    sec(0.4),
		recovered: true, recovery: sec(0.2),
	}, {
		// 50% is not down, 98% is not up.
		name:      "thresholds",
		kinds:     []string{"rest"},
		share:     levels(span{1, 1.5, 0.49}, span{1.5, 2, 0.5}, span{2, 3, 0.98}),
		fault:     report.Fault{Kind: "disk", Start: at(sec(1)), End: at(sec(1))},
		window:    sec(0.5),
		recovered: true, recovery: sec(2),
	}, {
		name:   "never recovers",
		kinds:  []string{"seq-redis"},
		share:  levels(span{4, 10, 0.3}), // to the run's end
		fault:  report.Fault{Kind: "flushall", Start: at(sec(4)), End: at(sec(4))},
		window: sec(6),
	}, {
		// Up again only in the last 0.9 s: not a second, so not recovered.
		name:   "a run too short to be stable",
		kinds:  []string{"rest"},
		share:  levels(span{4, 9.1, 0}),
		fault:  report.Fault{Kind: "kill", Start: at(sec(4)), End: at(sec(4))},
		window: sec(5.1),
	}, {
		// The window stops at End + Tail.
		name:      "the window ends a tail after the heal",
		kinds:     []string{"rest"},
		share:     levels(span{10, 100, 0}),
		fault:     report.Fault{Kind: "partition", Start: at(sec(10)), End: at(sec(20))},
		window:    sec(70),
		recovered: true, recovery: sec(80),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dur := 10 * time.Second
			if tt.recovery > 60*time.Second {
				dur = 120 * time.Second
			}
			r := shares(dur, tt.kinds, tt.share)
			r.Faults = []report.Fault{tt.fault}
			a := report.Analyze(r)
			if len(a.Faults) != 1 {
				t.Fatalf("%d faults, want 1", len(a.Faults))
			}
			f := a.Faults[0]
			if !f.Measured {
				t.Fatal("not measured")
			}
			if f.Window != tt.window {
				t.Errorf("window %v, want %v", f.Window, tt.window)
			}
			if f.Recovered != tt.recovered || f.Recovery != tt.recovery {
				t.Errorf("recovered %v after %v, want %v after %v", f.Recovered, f.Recovery, tt.recovered, tt.recovery)
			}
			if want := map[bool]int{false: 1, true: 0}[tt.recovered]; a.Unrecovered != want {
				t.Errorf("unrecovered %d, want %d", a.Unrecovered, want)
			}
		})
	}
}

func TestAnalyzeNextFaultEndsWindow(t *testing.T) {
	r := shares(20*time.Second, []string{"rest"}, func(_ string, t time.Duration) float64 {
		if t >= 2*time.Second && t < 8*time.Second {
			return 0
		}
		return 1
	})
	r.Faults = []report.Fault{
		{Kind: "kill", Start: at(2 * time.Second), End: at(2 * time.Second)},
		{Kind: "pause", Start: at(5 * time.Second), End: at(6 * time.Second)},
	}
	a := report.Analyze(r)
	if w := a.Faults[0].Window; w != 3*time.Second {
		t.Errorf("first window %v, want 3s: cut at the next fault's start", w)
	}
	if !a.Faults[0].Overlapped || a.Faults[1].Overlapped {
		t.Errorf("overlapped %v %v, want true false", a.Faults[0].Overlapped, a.Faults[1].Overlapped)
	}
	if w, rec := a.Faults[1].Window, a.Faults[1].Recovery; w != 3*time.Second || rec != 2*time.Second {
		t.Errorf("second window %v recovery %v, want 3s 2s", w, rec)
	}
}

func TestAnalyzeUnmeasured(t *testing.T) {
	r := shares(time.Second, []string{"rest"}, func(string, time.Duration) float64 { return 1 })
	r.Faults = []report.Fault{{Kind: "kill", Start: at(0), End: at(0), Kinds: []string{"seq-redis"}}}
	a := report.Analyze(r)
	if f := a.Faults[0]; f.Measured || a.Unrecovered != 0 {
		t.Errorf("measured %v unrecovered %d, want false 0: no caller of its kind ran", f.Measured, a.Unrecovered)
	}
}

func TestAvailability(t *testing.T) {
	step := time.Second
	r := report.Run{Start: t0, End: at(4 * step), Step: step, Buckets: []report.Bucket{
		{At: at(0), Kind: "rest", OK: 90, Err: 10, Values: 90},
		{At: at(step), Kind: "rest", OK: 100, Values: 100},
		{At: at(0), Kind: "embedded", OK: 300, Values: 3000},
		{At: at(2 * step), Kind: "embedded", OK: 100, Err: 100, Values: 1000},
		{At: at(3 * step), Kind: "rpc", Err: 5},
		{At: at(9 * step), Kind: "rpc", OK: 1000}, // after End: dropped
	}}
	a := report.Analyze(r)
	tests := []struct {
		kind        string
		ok, err     int64
		avail, tput float64
	}{
		{"embedded", 400, 100, 0.8, 1000},
		{"rest", 190, 10, 0.95, 47.5},
		{"rpc", 0, 5, 0, 0},
		{"all", 590, 115, 590.0 / 705, 1047.5},
	}
	got := append(a.Kinds, a.Overall)
	if len(got) != len(tests) {
		t.Fatalf("kinds %v, want %d", got, len(tests))
	}
	for i, tt := range tests {
		k := got[i]
		if k.Kind != tt.kind || k.OK != tt.ok || k.Err != tt.err {
			t.Errorf("%d: %+v, want %s %d ok %d err", i, k, tt.kind, tt.ok, tt.err)
		}
		if av := k.Availability(); math.Abs(av-tt.avail) > 1e-12 {
			t.Errorf("%s availability %v, want %v", k.Kind, av, tt.avail)
		}
		if tp := k.Throughput(a.Duration); math.Abs(tp-tt.tput) > 1e-9 {
			t.Errorf("%s throughput %v, want %v", k.Kind, tp, tt.tput)
		}
	}
	if av := (report.KindStats{}).Availability(); !math.IsNaN(av) {
		t.Errorf("availability without calls %v, want NaN", av)
	}
}

// A fault of every kind waits on every kind but the spare ones: a
// standby's callers, down whenever it holds nothing, neither open its
// window nor keep it from recovering.
func TestAnalyzeSpare(t *testing.T) {
	r := shares(10*time.Second, []string{"rest-A", "rest-S1"}, func(k string, _ time.Duration) float64 {
		if k == "rest-S1" {
			return 0
		}
		return 1
	})
	r.Faults = []report.Fault{{Kind: "flushall", Target: "redis master m1", Start: at(2 * time.Second), End: at(2 * time.Second)}}
	if f := report.Analyze(r).Faults[0]; f.Recovered || f.Window == 0 {
		t.Fatalf("without Spare: window %v, recovered %v; want the standby's callers to count", f.Window, f.Recovered)
	}
	r.Spare = []string{"rest-S1"}
	f := report.Analyze(r).Faults[0]
	if !f.Recovered || f.Window != 0 || len(f.Kinds) != 1 || f.Kinds[0] != "rest-A" {
		t.Errorf("with Spare: kinds %v, window %v, recovered %v; want rest-A only, no window, recovered", f.Kinds, f.Window, f.Recovered)
	}
	// Named by the fault (one on the standby), too.
	r.Faults[0].Kinds = []string{"rest-A", "rest-S1"}
	f = report.Analyze(r).Faults[0]
	if !f.Recovered || f.Window != 0 || len(f.Kinds) != 1 {
		t.Errorf("named: kinds %v, window %v, recovered %v; want rest-A only, no window, recovered", f.Kinds, f.Window, f.Recovered)
	}
}
