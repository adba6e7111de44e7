// Package segmentmetrics exports the Prometheus metrics of a segment
// issuer (package segment, which imports no third-party package):
//
//	vesta_segment_issued_total{tag}           numbers issued by this process
//	vesta_segment_ranges_fetched_total{tag}   ranges taken from the store
//	vesta_segment_step{tag}                   the current (dynamic) step
//	vesta_segment_buffer_remaining{tag}       numbers held in the double buffer
//	vesta_segment_store_errors_total{tag}     failed fetches
//	vesta_segment_store_seconds{op}           store call latency (next, tags)
//
// The per-tag values are read from Issuer.Stats at scrape time, for the
// tags of the store (so callers cannot add label values); the histogram is
// fed by the issuer's OnStore hook:
//
//	m, err := segmentmetrics.New(reg)
//	cfg.OnStore = m.OnStore
//	is, err := segment.Open(ctx, store, cfg)
//	m.Watch(is)
package segmentmetrics

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/segment"
)

// Metrics are one issuer's metrics; a nil *Metrics does nothing.
type Metrics struct {
	store *prometheus.HistogramVec

	mu sync.Mutex
	is *segment.Sequencer // set by Watch
}

var (
	descIssued    = prometheus.NewDesc("vesta_segment_issued_total", "Segment sequence numbers issued by this process, by tag.", []string{"tag"}, nil)
	descFetched   = prometheus.NewDesc("vesta_segment_ranges_fetched_total", "Ranges of numbers taken from the segment store, by tag.", []string{"tag"}, nil)
	descStep      = prometheus.NewDesc("vesta_segment_step", "The step of the tag's last fetch (dynamic, as Leaf's).", []string{"tag"}, nil)
	descRemaining = prometheus.NewDesc("vesta_segment_buffer_remaining", "Numbers held in the tag's double buffer, ready to issue.", []string{"tag"}, nil)
	descErrors    = prometheus.NewDesc("vesta_segment_store_errors_total", "Failed fetches of ranges from the segment store, by tag.", []string{"tag"}, nil)
)

// New registers the metrics with reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{store: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "vesta_segment_store_seconds",
		Help: "Latency of segment store calls, by op (next: reserve a range; tags: list the tags).",
		// From a local Redis to a store past its timeout.
		Buckets: []float64{100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1, 5},
	}, []string{"op"})}
	for _, c := range []prometheus.Collector{m.store, m} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("segmentmetrics: one issuer per registry: %w", err)
			}
			return nil, fmt.Errorf("segmentmetrics: %w", err)
		}
	}
	return m, nil
}

// OnStore observes one store call; give it to segment.Config.OnStore.
func (m *Metrics) OnStore(op, _ string, d time.Duration, _ error) {
	if m == nil {
		return
	}
	switch op {
	case "next", "tags", "create":
	default:
		op = "other" // the label space stays fixed
	}
	m.store.WithLabelValues(op).Observe(d.Seconds())
}

// Watch makes scrapes report is's tags.
func (m *Metrics) Watch(is *segment.Sequencer) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.is = is
	m.mu.Unlock()
}

// Describe is prometheus.Collector's.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIssued, descFetched, descStep, descRemaining, descErrors} {
		ch <- d
	}
}

// Collect is prometheus.Collector's: one series of each per tag.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	is := m.is
	m.mu.Unlock()
	if is == nil {
		return
	}
	for _, tag := range is.Tags() {
		st, ok := is.Stats(tag)
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(descIssued, prometheus.CounterValue, float64(st.Issued), tag)
		ch <- prometheus.MustNewConstMetric(descFetched, prometheus.CounterValue, float64(st.RangesFetched), tag)
		ch <- prometheus.MustNewConstMetric(descStep, prometheus.GaugeValue, float64(st.Step), tag)
		ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, float64(st.Remaining), tag)
		ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(st.StoreErrors), tag)
	}
}
