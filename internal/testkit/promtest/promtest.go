package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value returns the first series of metric name in g whose labels include
// the given pairs (label, value, label, value, ...): a gauge's or a
// counter's value, a histogram's sample count. found is false when no series
// matches.
func Value(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) (v float64, found bool) {
	tb.Helper()
	for _, s := range Series(tb, g, name, labels...) {
		return s.Value, true
	}
	return 0, false
}

// ValueOr is Value, or absent when no series matches: a count a test
// compares, where a missing series must not pass for zero (absent -1).
func ValueOr(tb testing.TB, g prometheus.Gatherer, absent float64, name string, labels ...string) float64 {
	tb.Helper()
	if v, ok := Value(tb, g, name, labels...); ok {
		return v
	}
	return absent
}

// Histogram returns the sample count and sum of the first series of
// histogram name in g whose labels include the given pairs; zeros when no
// series matches.
func Histogram(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) (count uint64, sum float64) {
	tb.Helper()
	for _, m := range metrics(tb, g, name, labels) {
		if h := m.GetHistogram(); h != nil {
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

// Sample is one series of a metric: its labels and its value (a
// histogram's sample count).
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Series returns every series of metric name in g whose labels include the
// given pairs, in the registry's order.
func Series(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) []Sample {
	tb.Helper()
	var out []Sample
	for _, m := range metrics(tb, g, name, labels) {
		s := Sample{Labels: map[string]string{}}
		for _, lp := range m.GetLabel() {
			s.Labels[lp.GetName()] = lp.GetValue()
		}
		switch {
		case m.Gauge != nil:
			s.Value = m.GetGauge().GetValue()
		case m.Counter != nil:
			s.Value = m.GetCounter().GetValue()
		case m.Histogram != nil:
			s.Value = float64(m.GetHistogram().GetSampleCount())
		default:
			continue
		}
		out = append(out, s)
	}
	return out
}

// metrics gathers g, failing tb on an error, and returns the series of name
// whose labels include the pairs.
func metrics(tb testing.TB, g prometheus.Gatherer, name string, labels []string) []*dto.Metric {
	tb.Helper()
	if len(labels)%2 != 0 {
		tb.Fatalf("promtest: labels %q are not pairs", labels)
	}
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatalf("promtest: gathering %s: %v", name, err)
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if has(m, labels) {
				out = append(out, m)
			}
		}
	}
	return out
}

// has reports whether m carries every label pair.
func has(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
