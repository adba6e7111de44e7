package rest

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
)

// fakeCounters is a read function over counters the test sets, read at
// the time the history passes (the test's clock: nothing sleeps).
type fakeCounters struct{ t tally }

func (f *fakeCounters) read(now time.Time) tally {
	t := f.t
	t.at = now
	return t
}

// TestHistorySamples: each reading after the baseline keeps what changed
// since the one before, by method too; a counter that went down counts
// none; the answer holds the seconds asked for, oldest first, then the
// partial sample up to the request.
func TestHistorySamples(t *testing.T) {
	f := &fakeCounters{}
	h := newHistory(f.read)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h.sample(t0) // the baseline
	for i := 1; i <= 5; i++ {
		f.t.total += uint64(100 * i)
		f.t.byMethod[2] += uint64(100 * i)
		f.t.hasMethod[2] = true
		f.t.seq += 7
		f.t.http4xx++
		f.t.rejected[1] += 2
		f.t.shed[0]++
		h.sample(t0.Add(time.Duration(i) * time.Second))
	}
	f.t.seq = 3 // a tag dropped: down, not negative
	f.t.total += 42
	f.t.byMethod[2] += 42
	h.sample(t0.Add(6 * time.Second))

	f.t.total += 9
	cur := f.read(t0.Add(6*time.Second + 250*time.Millisecond))
	b := h.body(3, cur)
	if got, want := b.IDs, []uint64{400, 500, 42, 9}; !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v (the last 3 s, then the partial)", got, want)
	}
	if got, want := b.IDsByMethod["rest"], []uint64{400, 500, 42, 0}; !slices.Equal(got, want) {
		t.Errorf("rest %v, want %v", got, want)
	}
	if _, ok := b.IDsByMethod["central"]; ok {
		t.Errorf("central shown with no series of it: %v", b.IDsByMethod)
	}
	if got, want := b.Seq, []uint64{7, 7, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("seq %v, want %v", got, want)
	}
	if got, want := b.Refused, []uint64{3, 3, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("refused %v, want %v", got, want)
	}
	if !b.Partial || b.SpanMs[3] != 250 || b.SpanMs[0] != 1000 || b.EndMs[3] != cur.at.UnixMilli() {
		t.Errorf("spans %v ends %v partial %v", b.SpanMs, b.EndMs, b.Partial)
	}
	all := h.body(historyLen, cur)
	sum := uint64(0)
	for _, n := range all.IDs {
		sum += n
	}
	if sum != f.t.total {
		t.Errorf("the samples add up to %d IDs, the counter says %d", sum, f.t.total)
	}
}

// TestHistoryBounded: past historyLen samples the oldest go, and the
// latency window keeps at most maxWindow readings, however fast it is
// sampled.
func TestHistoryBounded(t *testing.T) {
	f := &fakeCounters{}
	h := newHistory(f.read)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 3 * historyLen {
		f.t.total++
		h.sample(t0.Add(time.Duration(i) * 100 * time.Millisecond))
	}
	b := h.body(historyLen, f.read(t0.Add(time.Duration(3*historyLen)*100*time.Millisecond)))
	if len(b.IDs) != historyLen+1 || h.n != historyLen {
		t.Errorf("%d samples answered (%d held), want %d and the partial", len(b.IDs), h.n, historyLen)
	}
	if len(h.window) > maxWindow {
		t.Errorf("%d readings in the latency window, want at most %d", len(h.window), maxWindow)
	}
}

// TestHistoryLatencyWindow: the percentiles cover the last minute only:
// slow requests of two minutes ago no longer count.
func TestHistoryLatencyWindow(t *testing.T) {
	f := &fakeCounters{}
	bounds := []float64{0.001, 0.01, 0.1, 1}
	f.t.httpLat = histo{bounds: bounds, cum: make([]uint64, 4)}
	h := newHistory(f.read)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h.sample(t0)
	observe := func(x *histo, secs float64, n uint64) {
		x.cum = append([]uint64(nil), x.cum...)
		for i, b := range x.bounds {
			if secs <= b {
				x.cum[i] += n
			}
		}
		x.count += n
	}
	observe(&f.t.httpLat, 0.5, 1000) // slow, at first
	for i := 1; i <= 60; i++ {
		h.sample(t0.Add(time.Duration(i) * time.Second))
	}
	httpL, rpcL := h.latency(f.read(t0.Add(61 * time.Second)))
	if httpL.Count != 1000 || httpL.P50Ms < 100 || rpcL.Count != 0 || rpcL.P50Ms != 0 {
		t.Errorf("within the minute: http %+v rpc %+v", httpL, rpcL)
	}
	for i := 61; i <= 130; i++ {
		observe(&f.t.httpLat, 0.0005, 10) // fast since
		h.sample(t0.Add(time.Duration(i) * time.Second))
	}
	httpL, _ = h.latency(f.read(t0.Add(130 * time.Second)))
	if httpL.Count != 600 || httpL.P99Ms > 1 || httpL.WindowS != 60 {
		t.Errorf("a minute later: %+v, want 600 fast requests over 60 s", httpL)
	}
}

// TestQuantile: histogram_quantile's reading, linear within a bucket.
func TestQuantile(t *testing.T) {
	x := histo{count: 100, bounds: []float64{1, 2, 4}, cum: []uint64{50, 90, 100}}
	for _, c := range []struct{ q, want float64 }{
		{0.25, 0.5}, {0.5, 1}, {0.7, 1.5}, {0.95, 3}, {1, 4},
	} {
		if got := x.quantile(c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q%v = %v, want %v", c.q, got, c.want)
		}
	}
	inf := histo{count: 10, bounds: []float64{1}, cum: []uint64{0}} // all past the last bound
	if got := inf.quantile(0.5); got != 1 {
		t.Errorf("past the bounds: %v, want the last bound", got)
	}
	if got := (histo{}).quantile(0.5); got != 0 {
		t.Errorf("empty: %v", got)
	}
}

// TestReadRegistry: the families are read by their labels.
func TestReadRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	issued := prometheus.NewCounterVec(prometheus.CounterOpts{Name: famIssued, Help: "h"}, []string{"method"})
	answers := prometheus.NewCounterVec(prometheus.CounterOpts{Name: famHTTPAnswers, Help: "h"}, []string{"route", "code"})
	rpc := prometheus.NewCounterVec(prometheus.CounterOpts{Name: famRPCAnswers, Help: "h"}, []string{"procedure", "code"})
	shed := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vesta_rpc_connections_shed_total", Help: "h"}, []string{"reason"})
	open := prometheus.NewGauge(prometheus.GaugeOpts{Name: famRPCOpen, Help: "h"})
	reg.MustRegister(issued, answers, rpc, shed, open)
	issued.WithLabelValues("central").Add(5)
	issued.WithLabelValues("rest").Add(3)
	answers.WithLabelValues("/v1/id", "200").Add(9)
	answers.WithLabelValues("/v1/id", "404").Add(2)
	answers.WithLabelValues("/v1/id", "503").Add(1)
	rpc.WithLabelValues("genId", "ok").Add(4)
	rpc.WithLabelValues("genId", "unavailable").Add(6)
	shed.WithLabelValues("max_conns").Add(8)
	open.Set(11)
	var got tally
	readRegistry(reg, &got)
	if got.byMethod[1] != 5 || got.byMethod[2] != 3 || !got.hasMethod[1] || got.hasMethod[0] ||
		got.http4xx != 2 || got.http5xx != 1 || got.rpcErrors != 6 || got.shed[0] != 8 || got.rpcOpen != 11 {
		t.Errorf("read %+v", got)
	}
	if methods[1] != core.Central || listenerNames[0].name != "rpc" {
		t.Fatal("the test's indexes are out of date")
	}
}
