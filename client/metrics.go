package client

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/vesta-go/vesta/internal/ceilingmetric"
)

// metrics are the client's Prometheus collectors. They always exist (so the
// code needs no nil checks) and are registered only with a Registerer.
type metrics struct {
	calls       *prometheus.CounterVec // server, result
	breaker     *prometheus.GaugeVec   // server: 0 closed, 1 half-open, 2 open
	fallbackIDs prometheus.Counter
	mode        prometheus.Gauge // 1 central, 0 fallback
	buffered    prometheus.Gauge
	fallback    []prometheus.Collector // the fallback's machine ID and readiness; none without it
	// ceil counts the calls that waited at the ceiling, under the names
	// the servers and the embedded issuer share (mode="client"); nil
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
		fallbackIDs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vesta_client_fallback_ids_total",
			Help: "IDs issued by the embedded fallback because no server answered.",
		}),
		mode: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vesta_client_mode",
			Help: "1 while IDs come from central servers, 0 while they come from the embedded fallback.",
		}),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vesta_client_prefetch_buffered",
			Help: "Prefetched central IDs ready to hand out.",
		}),
	}
	m.mode.Set(1)
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
	if m.ceil, err = ceilingmetric.New(reg, ceilingmetric.Client); err != nil {
		undo()
		return nil, err
	}
	return m, nil
}

func (m *metrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.calls, m.breaker, m.fallbackIDs, m.mode, m.buffered}, m.fallback...)
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
