package capacity

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeTimeout bounds the pools' read of one scrape.
const scrapeTimeout = 2 * time.Second

// collector is a Tracker's vesta_capacity_* series, read from a Report at
// each scrape.
type collector struct {
	t                                                        *Tracker
	timeLeft, ids, held, refused, exhausted, borrow, tagLeft *prometheus.Desc
}

// Collector returns t's metrics, for a registry.
func (t *Tracker) Collector() prometheus.Collector {
	return &collector{
		t: t,
		timeLeft: prometheus.NewDesc("vesta_capacity_time_left_seconds",
			"Seconds until the last unit of the layout's time field at the configured epoch: no ID is issued past it.", nil, nil),
		ids: prometheus.NewDesc("vesta_capacity_machine_ids",
			"Machine IDs a lease range hands out.", []string{"range"}, nil),
		held: prometheus.NewDesc("vesta_capacity_machine_ids_held",
			"Machine IDs of a lease range held now (live member records in the lease store); absent while the store cannot be read.", []string{"range"}, nil),
		refused: prometheus.NewDesc("vesta_capacity_machine_id_claims_refused_total",
			"Claims of this server's lease that found every machine ID of its range held.", []string{"range"}, nil),
		exhausted: prometheus.NewDesc("vesta_capacity_sequence_exhausted_seconds_total",
			"Time units whose ID sequence ran out, times the unit: its rate is the share of time spent at the sequence's ceiling.", nil, nil),
		borrow: prometheus.NewDesc("vesta_capacity_borrow_in_use_ratio",
			"How far issuing runs ahead of the clock, over max_borrow (0 without borrowing).", nil, nil),
		tagLeft: prometheus.NewDesc("vesta_capacity_segment_numbers_left",
			"Numbers a segment tag can still issue before the bound of max_id's type, as of this server's last fetch.", []string{"tag"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.timeLeft, c.ids, c.held, c.refused, c.exhausted, c.borrow, c.tagLeft} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	r := c.t.Report(ctx)
	ch <- prometheus.MustNewConstMetric(c.timeLeft, prometheus.GaugeValue, r.Time.Left)
	for _, p := range r.Machine.Pools {
		ch <- prometheus.MustNewConstMetric(c.ids, prometheus.GaugeValue, float64(p.Total), p.Range)
		if p.Held >= 0 {
			ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(p.Held), p.Range)
		}
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(p.Refused), p.Range)
	}
	ch <- prometheus.MustNewConstMetric(c.exhausted, prometheus.CounterValue, float64(r.Sequence.Exhausted)*r.Sequence.Unit)
	ch <- prometheus.MustNewConstMetric(c.borrow, prometheus.GaugeValue, r.Sequence.BorrowShare)
	for _, tg := range r.Segments {
		ch <- prometheus.MustNewConstMetric(c.tagLeft, prometheus.GaugeValue, float64(tg.Left), tg.Tag)
	}
}
