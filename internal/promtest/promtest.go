package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Value returns the first series of metric name in g whose labels include
// the given pairs (label, value, label, value, ...): a gauge's or a
// counter's value, a histogram's sample count. found is false when no series
// matches.
func Value(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) (v float64, found bool) {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				match := false
				for _, lp := range m.GetLabel() {
					match = match || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !match {
					continue series
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}
