package prommetrics

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/ceilingmetric"
	"github.com/vesta-go/vesta/internal/promreg"
	"github.com/vesta-go/vesta/latency"
	"github.com/vesta-go/vesta/machineid"
)

// RegisterLease registers l's metrics on reg, labelled range="embedded"
// or "server" (the name of its machine-ID range) so that a server and a
// client's fallback in one process do not collide. Leases of one range on
// one registry share the series: the counters and the renewals' histogram
// add up, the gauges follow the lease registered last that is still open.
func RegisterLease(reg prometheus.Registerer, l *machineid.Lease) error {
	st := l.Stats()
	c, err := promreg.Register(reg, newLeaseCollector(st.Range))
	if err != nil {
		return fmt.Errorf("prommetrics: the lease's metrics: %w", err)
	}
	c.mu.Lock()
	c.leases = append(c.leases, l)
	c.mu.Unlock()
	return nil
}

// leaseCollector is a registry's vesta_machine_* of one range.
type leaseCollector struct {
	state, machine, renew, failures, fences, skew, quarantine *prometheus.Desc

	mu     sync.Mutex
	leases []*machineid.Lease
	// done holds what leases closed and dropped since had counted.
	done struct {
		renew            latency.Snapshot
		failures, fences uint64
	}
}

func newLeaseCollector(rangeName string) *leaseCollector {
	labels := prometheus.Labels{"range": rangeName}
	d := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, labels)
	}
	return &leaseCollector{
		state:      d("vesta_machine_lease_state", "1 for the lease's current state: held (issuing), fenced (lease not proven, issuing stopped) or none (a fixed ID: no lease in a store).", "state"),
		machine:    d("vesta_machine_id", "The machine ID in use."),
		renew:      d("vesta_machine_lease_renew_seconds", "Latency of lease renewals that reached the store (Redis or etcd)."),
		failures:   d("vesta_machine_lease_renew_failures_total", "Lease renewals that failed (the store unreachable, not confirmed, or the lease no longer ours)."),
		fences:     d("vesta_machine_lease_fences_total", "Times issuing was fenced because the lease could not be proven held."),
		skew:       d("vesta_machine_clock_skew_seconds", "Local clock minus Redis TIME, measured when leasing and at every renewal."),
		quarantine: d("vesta_machine_quarantine_seconds", "Seconds left before a newly claimed machine ID may issue: the quarantine of a Redis claim that may follow a holder whose lease Redis lost."),
	}
}

func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.machine, c.renew, c.failures, c.fences, c.skew, c.quarantine} {
		ch <- d
	}
}

func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.leases) == 0 {
		return
	}
	stats := make([]machineid.Stats, len(c.leases))
	cur := len(c.leases) - 1 // the last open lease, else the last
	for i, l := range c.leases {
		stats[i] = l.Stats()
	}
	for i := len(stats) - 1; i >= 0; i-- {
		if !stats[i].Closed {
			cur = i
			break
		}
	}
	renew, failures, fences := c.done.renew, c.done.failures, c.done.fences
	keep := c.leases[:0]
	for i, st := range stats {
		renew = renew.Add(st.Renewals)
		failures += st.RenewFailures
		fences += st.Fences
		if st.Closed && i != cur { // it counts no more: keep its counts, not the lease
			c.done.renew = c.done.renew.Add(st.Renewals)
			c.done.failures += st.RenewFailures
			c.done.fences += st.Fences
			continue
		}
		keep = append(keep, c.leases[i])
	}
	clear(c.leases[len(keep):])
	c.leases = keep

	st := stats[cur]
	for _, s := range []machineid.State{machineid.StateNone, machineid.StateHeld, machineid.StateFenced} {
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, b2f(s == st.State), s.String())
	}
	ch <- prometheus.MustNewConstMetric(c.machine, prometheus.GaugeValue, float64(st.Machine))
	count, sum, buckets := ceilingmetric.Histogram(renew)
	ch <- prometheus.MustNewConstHistogram(c.renew, count, sum, buckets)
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(failures))
	ch <- prometheus.MustNewConstMetric(c.fences, prometheus.CounterValue, float64(fences))
	ch <- prometheus.MustNewConstMetric(c.skew, prometheus.GaugeValue, st.ClockSkew.Seconds())
	ch <- prometheus.MustNewConstMetric(c.quarantine, prometheus.GaugeValue, st.Quarantine.Seconds())
}
