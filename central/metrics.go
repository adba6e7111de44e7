package central

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/holdmetric"
	"github.com/vesta-go/vesta/internal/issuedmetric"
	"github.com/vesta-go/vesta/internal/promreg"
)

// Label values. Procedures outside wire.Procedures() count as "unknown", so a
// caller cannot create label values; codes are "ok" or a api.Code.
const (
	labelUnknown = "unknown"
	labelOK      = "ok"
)

// procIndex maps a procedure name to its metrics slot; unknown names get
// the last one.
func procIndex(m string) int {
	for i, k := range wire.Procedures() {
		if m == k {
			return i
		}
	}
	return len(wire.Procedures())
}

func codeIndex(e *api.Error) int {
	if e == nil {
		return 0
	}
	for i, c := range api.Codes() {
		if e.Code == c {
			return i + 1
		}
	}
	return len(api.Codes()) // Internal is last
}

// metrics are the server's Prometheus metrics, with every labelled child
// resolved up front so that counting a call costs no map lookup. A nil
// *metrics counts nothing.
type metrics struct {
	requests [][]prometheus.Counter // [procedure][code]
	duration []prometheus.Observer  // [procedure]
	conns    prometheus.Gauge
	issued   *atomic.Uint64 // vesta_ids_issued_total{method="central"}
	// conflicts counts Vesta.Holder answers that found an ID inside two
	// holds: vesta_hold_conflicts_total, shared with the REST server.
	conflicts prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vesta_rpc_requests_total",
		Help: "MessagePack-RPC requests answered, by procedure and result code (ok or an error code).",
	}, []string{"procedure", "code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "vesta_rpc_request_duration_seconds",
		Help:    "Time from decoding a MessagePack-RPC request to queueing its response, by procedure.",
		Buckets: []float64{1e-6, 5e-6, 25e-6, 1e-4, 5e-4, 1e-3, 5e-3, 0.025, 0.1, 0.5, 1, 5},
	}, []string{"procedure"})
	conns := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vesta_rpc_connections",
		Help: "Open MessagePack-RPC connections.",
	})
	issued, err := issuedmetric.New(reg) // shared with the REST server
	if err != nil {
		return nil, fmt.Errorf("central: metrics: %w", err)
	}

	// Two servers may share a registry: reuse what is already registered.
	requests, errRequests := promreg.Register(reg, requests)
	duration, errDuration := promreg.Register(reg, duration)
	conns, errConns := promreg.Register(reg, conns)
	if err := errors.Join(errRequests, errDuration, errConns); err != nil {
		return nil, fmt.Errorf("central: metrics: %w", err)
	}

	conflicts, err := holdmetric.Conflicts(reg)
	if err != nil {
		return nil, fmt.Errorf("central: metrics: %w", err)
	}
	m := &metrics{conns: conns, issued: issued.Of(core.Central), conflicts: conflicts}
	for _, name := range append(wire.Procedures(), labelUnknown) {
		row := []prometheus.Counter{requests.WithLabelValues(name, labelOK)}
		for _, c := range api.Codes() {
			row = append(row, requests.WithLabelValues(name, string(c)))
		}
		m.requests = append(m.requests, row)
		m.duration = append(m.duration, duration.WithLabelValues(name))
	}
	return m, nil
}
