// Package ceilingmetric holds the metrics of calls at the sequence's
// ceiling, which the servers (central, rest) and the client share under
// the same names, help and buckets, labelled with the publish method of
// the IDs waited for: one collector per registry adds up every source of a
// method, so that any of them can share a registry. The servers count
// with a Metrics (New); a client counts in its own Stats, which package
// prommetrics adds as a source (AddSource). Alert rules are written on
// these names: do not rename.
package ceilingmetric

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/promreg"
	"github.com/vesta-go/vesta/latency"
)

// The metric names.
const (
	WaitsName       = "vesta_ceiling_waits_total"
	WaitSecondsName = "vesta_ceiling_wait_seconds"
	WaitingIDsName  = "vesta_rpc_waiting_ids"
)

// The publish methods, the values of the label "method" (core.Method's
// names). A client waits for central IDs: its calls count as central, in
// its own process's registry.
const (
	Central = "central"
	REST    = "rest"
)

// Reading is what a source counted: the calls that waited or were told to
// retry (Waits), and how long the ones that waited waited (Wait, in
// latency.CeilingBounds).
type Reading struct {
	Waits uint64
	Wait  latency.Snapshot
}

// Metrics counts the calls of one method at the ceiling. A nil *Metrics
// counts nothing.
type Metrics struct {
	waits atomic.Uint64
	wait  *latency.Histogram
}

// New registers (or finds, when already registered) the ceiling metrics in
// reg and returns a source of method's. A nil reg returns nil.
func New(reg prometheus.Registerer, method string) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Metrics{wait: latency.New(latency.CeilingBounds...)}
	if err := AddSource(reg, method, m.read); err != nil {
		return nil, err
	}
	return m, nil
}

// Waited counts a call that waited d at the ceiling.
func (m *Metrics) Waited(d time.Duration) {
	if m != nil {
		m.waits.Add(1)
		m.wait.Observe(d)
	}
}

// Retried counts a call that was told to retry instead of waiting.
func (m *Metrics) Retried() {
	if m != nil {
		m.waits.Add(1)
	}
}

func (m *Metrics) read() Reading { return Reading{Waits: m.waits.Load(), Wait: m.wait.Snapshot()} }

// AddSource adds read to the counts of method in reg's ceiling metrics,
// registering them unless they are: read is called at every scrape, for
// as long as reg lives, so its counts must never go down.
func AddSource(reg prometheus.Registerer, method string, read func() Reading) error {
	h, err := promreg.Register(reg, &hub{})
	if err != nil {
		return fmt.Errorf("ceilingmetric: %w", err)
	}
	h.mu.Lock()
	h.sources = append(h.sources, source{method, read})
	h.mu.Unlock()
	return nil
}

var (
	descWaits = prometheus.NewDesc(WaitsName,
		"Calls that waited, or were told to retry, because the ID sequence had run out (its ceiling), by publish method.",
		[]string{"method"}, nil)
	descWait = prometheus.NewDesc(WaitSecondsName,
		"How long calls waited at the ID sequence's ceiling, by publish method.",
		[]string{"method"}, nil)
)

// hub is a registry's ceiling metrics: the sum of its sources per method.
type hub struct {
	mu      sync.Mutex
	sources []source
}

type source struct {
	method string
	read   func() Reading
}

func (h *hub) Describe(ch chan<- *prometheus.Desc) { ch <- descWaits; ch <- descWait }

func (h *hub) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	sources := slices.Clone(h.sources)
	h.mu.Unlock()
	sums := map[string]Reading{}
	var methods []string
	for _, s := range sources {
		r := s.read()
		sum, ok := sums[s.method]
		if !ok {
			methods = append(methods, s.method)
		}
		sum.Waits += r.Waits
		sum.Wait = sum.Wait.Add(r.Wait)
		sums[s.method] = sum
	}
	for _, method := range methods {
		r := sums[method]
		ch <- prometheus.MustNewConstMetric(descWaits, prometheus.CounterValue, float64(r.Waits), method)
		count, sum, buckets := Histogram(r.Wait)
		ch <- prometheus.MustNewConstHistogram(descWait, count, sum, buckets, method)
	}
}

// Histogram is a latency.Snapshot as a Prometheus histogram: the count,
// the sum in seconds and the cumulative count per upper bound in seconds.
func Histogram(s latency.Snapshot) (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, len(s.Bounds))
	for i, b := range s.Bounds {
		count += s.Counts[i]
		// One division, rounded once: the bound as Prometheus's own
		// buckets write it (0.0025, not 0.0025000000000000005).
		buckets[float64(b)/float64(time.Second)] = count
	}
	if len(s.Counts) > len(s.Bounds) {
		count += s.Counts[len(s.Bounds)]
	}
	return count, s.Sum.Seconds(), buckets
}

// RegisterWaitingIDs registers the gauge of IDs owed to waiting calls of
// the RPC server, read from ids. When one is registered already (two
// servers in one registry, as in tests), that one stays.
func RegisterWaitingIDs(reg prometheus.Registerer, ids func() float64) error {
	if reg == nil {
		return nil
	}
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: WaitingIDsName,
		Help: "IDs owed to MessagePack-RPC calls that wait at the ID sequence's ceiling, server-wide.",
	}, ids)
	if _, err := promreg.Register(reg, prometheus.Collector(g)); err != nil {
		return fmt.Errorf("ceilingmetric: %w", err)
	}
	return nil
}
