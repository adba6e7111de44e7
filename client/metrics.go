package client

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/ceilingmetric"
	"github.com/vesta-go/vesta/internal/issuedmetric"
)

// metrics are the client's Prometheus collectors. They always exist (so the
// code needs no nil checks) and are registered only with a Registerer.
type metrics struct {
	calls    *prometheus.CounterVec // server, result
	breaker  *prometheus.GaugeVec   // server: 0 closed, 1 half-open, 2 open
	method   prometheus.Gauge       // the last IDs' core.Method: 1 central, 0 embedded (the fallback)
	buffered prometheus.Gauge
	fallback []prometheus.Collector // the fallback's machine ID and readiness; none without it
	// fallbackIDs counts the fallback's IDs in vesta_ids_issued_total{method="embedded"},
	// shared with any issuer of the Registerer; nil when the fallback's
	// own Registerer counts them (embed.Config.Registerer), or without
	// a fallback.
	fallbackIDs *atomic.Uint64
	// ceil counts the calls that waited at the ceiling, under the names
	// the servers share (method="central": the IDs waited for); nil
	// without a Registerer.
	ceil *ceilingmetric.Metrics
}

// Results of calls_total besides the wire error codes: ok, timeout (the
// attempt's deadline passed), network (dial, TLS or a broken connection),
// rejected (the breaker was open), protocol (a malformed reply), busy
// (Vesta.TakeIDs gave fewer IDs than asked: the server's sequence is at
// its ceiling; a success for the breaker), shape (the server's IDs are
// shaped unlike the first server's: refused, ErrServerShape).
const (
	resultOK       = "ok"
	resultBusy     = "busy"
	resultTimeout  = "timeout"
	resultNetwork  = "network"
	resultRejected = "rejected"
	resultProtocol = "protocol"
	resultCanceled = "canceled"
	resultShape    = "shape"
)

// newMetrics makes the collectors; fb is nil without the fallback.
func newMetrics(reg prometheus.Registerer, fb *fallback) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vesta_client_calls_total",
			Help: "Calls to central servers by server and result (ok, busy, a wire error code, timeout, network, rejected, protocol, canceled, shape).",
		}, []string{"server", "result"}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vesta_client_breaker_state",
			Help: "Circuit breaker state per server: 0 closed, 1 half-open, 2 open.",
		}, []string{"server"}),
		method: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vesta_client_method",
			Help: "The publish method of the IDs handed out last (core.Method): 1 central (from the servers), 0 embedded (from the fallback).",
		}),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vesta_client_prefetch_buffered",
			Help: "Prefetched central IDs ready to hand out.",
		}),
	}
	m.method.Set(float64(core.Central))
	if fb != nil {
		m.fallback = fb.gauges()
	}
	if reg == nil {
		return m, nil
	}
	var done []prometheus.Collector
	undo := func() {
		for _, c := range done { // only ours: another's may share the names
			reg.Unregister(c)
		}
	}
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			undo()
			return nil, err
		}
		done = append(done, c)
	}
	// Shared with a server or an embedded issuer on the same Registerer,
	// so left registered at Close.
	var err error
	if m.ceil, err = ceilingmetric.New(reg, ceilingmetric.Central); err != nil {
		undo()
		return nil, err
	}
	if fb != nil && !fb.counted {
		issued, err := issuedmetric.New(reg)
		if err != nil {
			undo()
			return nil, err
		}
		m.fallbackIDs = issued.Of(core.Embedded)
	}
	return m, nil
}

func (m *metrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.calls, m.breaker, m.method, m.buffered}, m.fallback...)
}

// unregister removes the collectors again, so a closed client leaves the
// Registerer free for a new one.
func (m *metrics) unregister(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	for _, c := range m.collectors() {
		reg.Unregister(c)
	}
}

// breakerValue maps gobreaker's states to the gauge's documented values
// (they coincide today, but the gauge's contract must not depend on that).
func breakerValue(s gobreaker.State) float64 {
	switch s {
	case gobreaker.StateHalfOpen:
		return 1
	case gobreaker.StateOpen:
		return 2
	default:
		return 0
	}
}
