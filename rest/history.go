package rest

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/issuedmetric"
)

// The server keeps its own last minutes, so that the operator's page,
// opened after a busy hour, charts them at once: a browser only sees
// what happens while it is open. Once a second a goroutine of the Server
// reads the process's counters (the generator's, the segment issuer's and
// the registry's, through Gather: what /metrics shows, never its text)
// and keeps the difference from the last reading, for historyLen seconds.

const (
	// historyLen bounds the samples kept: 15 minutes at one a second,
	// about 80 bytes each.
	historyLen = 900
	// latencyWindow is how far back the latency percentiles reach.
	latencyWindow = time.Minute
	// maxWindow bounds the readings kept for the latency window.
	maxWindow = 2 * int(latencyWindow/time.Second)
	// sampleEvery is the sampler's period.
	sampleEvery = time.Second
)

// listenerNames are the listeners of `vesta serve`, as /v1/status names
// them, and the prefix of their metrics (connlimit.Names).
var listenerNames = [...]struct{ name, prefix string }{
	{"rpc", "vesta_rpc_"}, {"http", "vesta_http_"}, {"metrics", "vesta_metrics_"},
}

// The registry's families read; the issued counter by its method label.
const (
	famIssued      = issuedmetric.Name
	famHTTPAnswers = "vesta_http_requests_total"
	famRPCAnswers  = "vesta_rpc_requests_total"
	famHTTPLatency = "vesta_http_request_duration_seconds"
	famRPCLatency  = "vesta_rpc_request_duration_seconds"
	famRPCOpen     = "vesta_rpc_connections"
)

// methods are the publish methods counted by method, in their order.
var methods = [...]core.Method{core.Embedded, core.Central, core.REST}

// tally is one reading of the counters, each since the process started.
type tally struct {
	at        time.Time
	total     uint64                     // the generator's IDs, every method
	byMethod  [len(methods)]uint64       // vesta_ids_issued_total by method
	hasMethod [len(methods)]bool         // a series of that method exists
	seq       uint64                     // segment numbers, every tag
	http4xx   uint64                     // REST answers 400-499
	http5xx   uint64                     // REST answers 500-599
	rpcErrors uint64                     // RPC answers with an error code
	rejected  [len(listenerNames)]uint64 // connections closed on accept
	shed      [len(listenerNames)]uint64 // connections closed to make room
	rpcOpen   int64                      // -1: no RPC server in the registry
	httpLat   histo
	rpcLat    histo
}

// histo is a cumulative histogram, summed over its series.
type histo struct {
	count  uint64
	bounds []float64 // upper bounds, seconds, rising
	cum    []uint64  // cumulative counts at each bound
}

// sample is the difference between two tallies: what one second saw.
type sample struct {
	end       int64 // unix ms
	span      int64 // ms since the previous reading
	total     uint64
	byMethod  [len(methods)]uint64
	seq       uint64
	http4xx   uint64
	http5xx   uint64
	rpcErrors uint64
	refused   uint64
}

// history is the ring of the last samples and the tallies behind the
// latency window. Its clock is the caller's (sample takes the time), so
// that tests drive it without sleeping.
type history struct {
	read func(time.Time) tally

	mu      sync.Mutex
	ring    [historyLen]sample
	n, next int     // samples held; where the next one goes
	last    tally   // the latest reading
	window  []tally // readings of the last latencyWindow, oldest first
	methods [len(methods)]bool
}

func newHistory(read func(time.Time) tally) *history { return &history{read: read} }

// sample reads the counters at now and keeps what changed since the last
// reading; the first reading is the baseline.
func (h *history) sample(now time.Time) {
	t := h.read(now)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, ok := range t.hasMethod {
		h.methods[i] = h.methods[i] || ok
	}
	if !h.last.at.IsZero() && now.After(h.last.at) {
		h.ring[h.next] = diff(t, h.last)
		h.next = (h.next + 1) % historyLen
		h.n = min(h.n+1, historyLen)
	}
	h.last = t
	// Keep the readings of the window and the newest one before it, at
	// most maxWindow (sampled faster than once a second, the oldest go).
	h.window = append(h.window, t)
	cut := max(len(h.window)-maxWindow, 0)
	for cut+1 < len(h.window) && now.Sub(h.window[cut+1].at) >= latencyWindow {
		cut++
	}
	h.window = append(h.window[:0], h.window[cut:]...)
}

// diff is what changed from the reading p to t.
func diff(t, p tally) sample {
	s := sample{end: t.at.UnixMilli(), span: t.at.Sub(p.at).Milliseconds(),
		total: delta(t.total, p.total), seq: delta(t.seq, p.seq),
		http4xx: delta(t.http4xx, p.http4xx), http5xx: delta(t.http5xx, p.http5xx),
		rpcErrors: delta(t.rpcErrors, p.rpcErrors)}
	for i := range methods {
		s.byMethod[i] = delta(t.byMethod[i], p.byMethod[i])
	}
	for i := range listenerNames {
		s.refused += delta(t.rejected[i], p.rejected[i]) + delta(t.shed[i], p.shed[i])
	}
	return s
}

// delta is a counter's growth; a counter that went down (a tag dropped,
// a series reset) counts as none.
func delta(now, before uint64) uint64 {
	if now < before {
		return 0
	}
	return now - before
}

// run samples every period until stop is closed, then closes done.
func (h *history) run(period time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			h.sample(now)
		}
	}
}

// historyBody is the "history" field of /v1/status: column by column, the
// samples of the last seconds asked, oldest first. A sample counts what
// happened in the span_ms before its end_ms.
type historyBody struct {
	EndMs       []int64             `json:"end_ms"`
	SpanMs      []int64             `json:"span_ms"`
	IDs         []uint64            `json:"ids"`
	IDsByMethod map[string][]uint64 `json:"ids_by_method"`
	Seq         []uint64            `json:"seq"`
	HTTP4xx     []uint64            `json:"http_4xx"`
	HTTP5xx     []uint64            `json:"http_5xx"`
	RPCErrors   []uint64            `json:"rpc_errors"`
	Refused     []uint64            `json:"refused_conns"`
	// Partial: the last sample runs from the last reading to the request,
	// not a whole second; the next answer has it again, whole.
	Partial bool `json:"partial"`
}

// body returns the samples that ended within the last secs seconds
// before cur, a reading taken for the request, and then, partial, what
// changed from the last sample to cur: IDs issued a moment ago show at
// once.
func (h *history) body(secs int, cur tally) historyBody {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := historyBody{IDsByMethod: map[string][]uint64{}}
	var picked []sample
	for i := range h.n {
		s := h.ring[(h.next-h.n+i+historyLen)%historyLen]
		if s.end > cur.at.UnixMilli()-int64(secs)*1000 {
			picked = append(picked, s)
		}
	}
	if !h.last.at.IsZero() && cur.at.Sub(h.last.at) >= time.Millisecond {
		picked = append(picked, diff(cur, h.last))
		b.Partial = true
	}
	col := func() []uint64 { return make([]uint64, 0, len(picked)) }
	b.EndMs, b.SpanMs = make([]int64, 0, len(picked)), make([]int64, 0, len(picked))
	b.IDs, b.Seq, b.HTTP4xx, b.HTTP5xx, b.RPCErrors, b.Refused = col(), col(), col(), col(), col(), col()
	for i, m := range methods {
		if h.methods[i] {
			b.IDsByMethod[m.String()] = col()
		}
	}
	for _, s := range picked {
		b.EndMs, b.SpanMs = append(b.EndMs, s.end), append(b.SpanMs, s.span)
		b.IDs, b.Seq = append(b.IDs, s.total), append(b.Seq, s.seq)
		b.HTTP4xx, b.HTTP5xx = append(b.HTTP4xx, s.http4xx), append(b.HTTP5xx, s.http5xx)
		b.RPCErrors, b.Refused = append(b.RPCErrors, s.rpcErrors), append(b.Refused, s.refused)
		for i, m := range methods {
			if h.methods[i] {
				b.IDsByMethod[m.String()] = append(b.IDsByMethod[m.String()], s.byMethod[i])
			}
		}
	}
	return b
}

// latencyBody is one server's request durations over the last minute,
// as histogram_quantile reads its histogram: within a bucket, linear.
type latencyBody struct {
	Count   uint64  `json:"count"` // requests in the window
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	WindowS float64 `json:"window_s"` // the window's length
}

// latency returns the REST and RPC servers' latencies from the oldest
// reading of the window (a minute before the latest, less just after
// start) to cur, a reading taken for the request.
func (h *history) latency(cur tally) (httpL, rpcL latencyBody) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.window) == 0 {
		return latencyBody{}, latencyBody{}
	}
	first := h.window[0]
	w := cur.at.Sub(first.at).Seconds()
	return quantiles(cur.httpLat, first.httpLat, w), quantiles(cur.rpcLat, first.rpcLat, w)
}

func quantiles(now, before histo, window float64) latencyBody {
	d := now
	if len(before.cum) == len(now.cum) && before.count <= now.count {
		d.cum = make([]uint64, len(now.cum))
		for i := range now.cum {
			d.cum[i] = delta(now.cum[i], before.cum[i])
		}
		d.count = now.count - before.count
	}
	return latencyBody{Count: d.count, P50Ms: d.quantile(0.5) * 1e3, P99Ms: d.quantile(0.99) * 1e3, WindowS: window}
}

// quantile is histogram_quantile's estimate in seconds; 0 without
// observations. Past the last finite bound it is that bound.
func (x histo) quantile(q float64) float64 {
	if x.count == 0 || len(x.bounds) == 0 {
		return 0
	}
	rank := q * float64(x.count)
	lower, below := 0.0, uint64(0)
	for i, ub := range x.bounds {
		if float64(x.cum[i]) >= rank {
			in := x.cum[i] - below
			if in == 0 {
				return ub
			}
			return lower + (ub-lower)*(rank-float64(below))/float64(in)
		}
		lower, below = ub, x.cum[i]
	}
	return x.bounds[len(x.bounds)-1]
}

// readRegistry adds to t what g holds of the families above.
func readRegistry(g prometheus.Gatherer, t *tally) {
	t.rpcOpen = -1
	if g == nil {
		return
	}
	fams, _ := g.Gather() // a failing collector leaves the others
	for _, f := range fams {
		name := f.GetName()
		switch name {
		case famIssued:
			for _, m := range f.Metric {
				for _, lp := range m.Label {
					if lp.GetName() != "method" {
						continue
					}
					meth, err := core.ParseMethod(lp.GetValue())
					if err != nil {
						continue
					}
					for i, mm := range methods {
						if mm == meth {
							t.byMethod[i] += uint64(m.GetCounter().GetValue())
							t.hasMethod[i] = true
						}
					}
				}
			}
		case famHTTPAnswers:
			for _, m := range f.Metric {
				code, _ := strconv.Atoi(label(m, "code"))
				n := uint64(m.GetCounter().GetValue())
				switch {
				case code >= 500 && code < 600:
					t.http5xx += n
				case code >= 400 && code < 500:
					t.http4xx += n
				}
			}
		case famRPCAnswers:
			for _, m := range f.Metric {
				if label(m, "code") != "ok" {
					t.rpcErrors += uint64(m.GetCounter().GetValue())
				}
			}
		case famHTTPLatency:
			t.httpLat = sumHisto(f)
		case famRPCLatency:
			t.rpcLat = sumHisto(f)
		case famRPCOpen:
			for _, m := range f.Metric {
				t.rpcOpen = int64(m.GetGauge().GetValue())
			}
		default:
			for i, l := range listenerNames {
				for _, m := range f.Metric {
					switch name {
					case l.prefix + "connections_rejected_total":
						t.rejected[i] += uint64(m.GetCounter().GetValue())
					case l.prefix + "connections_shed_total":
						t.shed[i] += uint64(m.GetCounter().GetValue())
					}
				}
			}
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.Label {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// sumHisto adds up the series of a histogram family (every route or
// method); series of other bounds than the first are left out.
func sumHisto(f *dto.MetricFamily) histo {
	var x histo
	for _, m := range f.Metric {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		var bounds []float64
		for _, b := range h.Bucket {
			if !math.IsInf(b.GetUpperBound(), 1) {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
		if x.bounds == nil {
			x.bounds, x.cum = bounds, make([]uint64, len(bounds))
		} else if !slices.Equal(x.bounds, bounds) {
			continue
		}
		for i := range bounds {
			x.cum[i] += h.Bucket[i].GetCumulativeCount()
		}
		x.count += h.GetSampleCount()
	}
	return x
}

// startHistory takes the baseline reading and starts the sampler, which
// the Server owns: stopHistory ends it and waits.
func (s *Server) startHistory() {
	s.started = time.Now()
	s.hist = newHistory(s.tally)
	s.hist.sample(s.started)
	s.histStop, s.histDone = make(chan struct{}), make(chan struct{})
	go s.hist.run(sampleEvery, s.histStop, s.histDone)
}

// stopHistory stops the sampler and waits for it; idempotent.
func (s *Server) stopHistory() {
	s.histOnce.Do(func() { close(s.histStop) })
	<-s.histDone
}

// tally reads the counters the history keeps.
func (s *Server) tally(now time.Time) tally {
	t := tally{at: now, total: s.gen.Stats().Issued}
	if ss, ok := s.cfg.Sequences.(segmentStats); ok {
		for _, tag := range ss.Tags() {
			if x, ok := ss.Stats(tag); ok && x.Issued > 0 {
				t.seq += uint64(x.Issued)
			}
		}
	}
	readRegistry(s.gatherer, &t)
	return t
}
