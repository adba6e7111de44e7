// Package ceilingmetric holds the metrics of calls at the sequence's
// ceiling, which the servers (central, rest) and the client register
// under the same names, help and buckets, labelled with the publish method
// of the IDs waited for, so that any of them can share a registry. Alert
// rules are written on these names: do not rename.
package ceilingmetric

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// Buckets of the wait histogram: from a fraction of a millisecond (a
// paced batch) to a few seconds (a unit of max-peak and its borrowing).
var Buckets = []float64{1e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// Metrics counts the calls of one method at the ceiling. A nil *Metrics
// counts nothing.
type Metrics struct {
	waits prometheus.Counter
	wait  prometheus.Observer
}

// New registers (or finds, when already registered) the ceiling metrics in
// reg and returns those of method. A nil reg returns nil.
func New(reg prometheus.Registerer, method string) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	waits := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: WaitsName,
		Help: "Calls that waited, or were told to retry, because the ID sequence had run out (its ceiling), by publish method.",
	}, []string{"method"})
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    WaitSecondsName,
		Help:    "How long calls waited at the ID sequence's ceiling, by publish method.",
		Buckets: Buckets,
	}, []string{"method"})
	var err error
	if waits, err = register(reg, waits); err != nil {
		return nil, err
	}
	if wait, err = register(reg, wait); err != nil {
		return nil, err
	}
	return &Metrics{waits: waits.WithLabelValues(method), wait: wait.WithLabelValues(method)}, nil
}

// Waited counts a call that waited d at the ceiling.
func (m *Metrics) Waited(d time.Duration) {
	if m != nil {
		m.waits.Inc()
		m.wait.Observe(d.Seconds())
	}
}

// Retried counts a call that was told to retry instead of waiting.
func (m *Metrics) Retried() {
	if m != nil {
		m.waits.Inc()
	}
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
	_, err := register(reg, prometheus.Collector(g))
	return err
}

// register registers c, or returns the collector already registered under
// its name with the same description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("ceilingmetric: %w", err)
	}
	return c, nil
}
