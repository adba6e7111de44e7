package prommetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
)

// GeneratorCollector exports a generator's Stats. It reads them when
// scraped, so issuing pays nothing for it.
type GeneratorCollector struct {
	gen                                                   *core.Generator
	waits, ahead, offset, mark, guardFailed, fenced, info *prometheus.Desc
}

// NewGeneratorCollector returns a collector of gen's metrics:
// sequence-exhaustion waits, time borrowed ahead of the clock, wall-clock
// offset (steps of the wall clock show here, since issuing runs on the
// monotonic clock), the time guard's durable mark and health, and whether
// issuing is fenced. The IDs issued are not among them: they are
// vesta_ids_issued_total{method}, counted by whoever publishes them
// (RegisterIssuer counts an issuer's embedded IDs; the servers, theirs).
func NewGeneratorCollector(gen *core.Generator) *GeneratorCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("vesta_generator_"+name, help, labels, nil)
	}
	return &GeneratorCollector{
		gen:         gen,
		waits:       d("sequence_waits_total", "Times a caller slept because the sequence ran out beyond max_borrow."),
		ahead:       d("ahead_seconds", "How far the last issued time unit is ahead of the clock (borrowed time)."),
		offset:      d("clock_offset_seconds", "Wall clock minus the issuing (monotonic-anchored) clock: wall-clock steps since start."),
		mark:        d("time_guard_mark_timestamp_seconds", "The time guard's durable mark (Unix seconds); 0 without a guard."),
		guardFailed: d("time_guard_failed", "1 while saving the time guard's mark fails."),
		fenced:      d("fenced", "1 while issuing is fenced (lease lost or changing)."),
		info:        d("info", "The generator's ID format and machine ID.", "layout", "type", "version", "machine"),
	}
}

// Describe implements prometheus.Collector.
func (c *GeneratorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.waits, c.ahead, c.offset, c.mark, c.guardFailed, c.fenced, c.info} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *GeneratorCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.gen.Stats()
	var mark float64
	if !s.Mark.IsZero() {
		mark = float64(s.Mark.UnixMilli()) / 1e3
	}
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(s.Waits))
	ch <- prometheus.MustNewConstMetric(c.ahead, prometheus.GaugeValue, s.Ahead.Seconds())
	ch <- prometheus.MustNewConstMetric(c.offset, prometheus.GaugeValue, s.ClockOffset.Seconds())
	ch <- prometheus.MustNewConstMetric(c.mark, prometheus.GaugeValue, mark)
	ch <- prometheus.MustNewConstMetric(c.guardFailed, prometheus.GaugeValue, b2f(s.GuardFailed))
	ch <- prometheus.MustNewConstMetric(c.fenced, prometheus.GaugeValue, b2f(s.Fenced))
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1,
		c.gen.Layout().String(), c.gen.Type().String(), strconv.Itoa(int(c.gen.Version())), c.gen.Machine().String())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
