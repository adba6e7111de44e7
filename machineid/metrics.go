package machineid

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a lease's Prometheus series, labelled range="embedded" or
// "server" (the name of the lease's machine-ID range) so that a server and
// a client's fallback in one process do not collide. A nil *metrics
// records nothing.
type metrics struct {
	state    *prometheus.GaugeVec
	machine  prometheus.Gauge
	renew    prometheus.Histogram
	failures prometheus.Counter
	fences   prometheus.Counter
	skew     prometheus.Gauge
	quar     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, rangeName string) *metrics {
	if reg == nil {
		return nil
	}
	labels := prometheus.Labels{"range": rangeName}
	m := &metrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vesta_machine_lease_state", ConstLabels: labels,
			Help: "1 for the lease's current state: held (issuing), fenced (lease not proven, issuing stopped) or none (a fixed ID: no lease in a store).",
		}, []string{"state"}),
		machine: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vesta_machine_id", ConstLabels: labels,
			Help: "The machine ID in use.",
		}),
		renew: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vesta_machine_lease_renew_seconds", ConstLabels: labels,
			Help:    "Latency of lease renewals that reached the store (Redis or etcd).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms to 4s
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vesta_machine_lease_renew_failures_total", ConstLabels: labels,
			Help: "Lease renewals that failed (the store unreachable, not confirmed, or the lease no longer ours).",
		}),
		fences: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vesta_machine_lease_fences_total", ConstLabels: labels,
			Help: "Times issuing was fenced because the lease could not be proven held.",
		}),
		skew: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vesta_machine_clock_skew_seconds", ConstLabels: labels,
			Help: "Local clock minus Redis TIME, measured when leasing and at every renewal.",
		}),
		quar: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vesta_machine_quarantine_seconds", ConstLabels: labels,
			Help: "Seconds left before a newly claimed machine ID may issue: the quarantine of a Redis claim that may follow a holder whose lease Redis lost.",
		}),
	}
	m.state = register(reg, m.state)
	m.quar = register(reg, m.quar)
	m.machine = register(reg, m.machine)
	m.renew = register(reg, m.renew)
	m.failures = register(reg, m.failures)
	m.fences = register(reg, m.fences)
	m.skew = register(reg, m.skew)
	return m
}

// register registers c, or returns the collector already registered under
// its name (a second lease of the same range in one process).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old
			}
		}
	}
	return c
}

func (m *metrics) setState(s State) {
	if m == nil {
		return
	}
	for _, st := range []State{StateNone, StateHeld, StateFenced} {
		v := 0.0
		if st == s {
			v = 1
		}
		m.state.WithLabelValues(st.String()).Set(v)
	}
}

func (m *metrics) setMachine(id int) {
	if m != nil {
		m.machine.Set(float64(id))
	}
}

func (m *metrics) observeRenew(d time.Duration) {
	if m != nil {
		m.renew.Observe(d.Seconds())
	}
}

func (m *metrics) renewFailed() {
	if m != nil {
		m.failures.Inc()
	}
}

func (m *metrics) fenced() {
	if m != nil {
		m.fences.Inc()
	}
}

func (m *metrics) setSkew(d time.Duration) {
	if m != nil {
		m.skew.Set(d.Seconds())
	}
}

func (m *metrics) setQuarantine(d time.Duration) {
	if m != nil {
		m.quar.Set(d.Seconds())
	}
}
