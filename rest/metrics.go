package rest

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/issuedmetric"
	"github.com/vesta-go/vesta/internal/promreg"
)

// unmatched labels requests that matched no route, so that scanners
// cannot blow up the label space.
const unmatched = "unmatched"

// metrics are the server's Prometheus collectors. Label values are
// resolved once per route (and once per route and status) so the hot path
// does no label hashing.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	issued   *atomic.Uint64           // vesta_ids_issued_total{method="rest"}
	routes   map[string]*routeMetrics // by route path; read-only once built
}

type routeMetrics struct {
	route    string
	duration prometheus.Observer
	requests *prometheus.CounterVec
	byCode   [len(commonCodes)]atomic.Pointer[prometheus.Counter] // made on first use
}

// commonCodes are the statuses the server answers; their counters are
// kept once made, any other status is looked up on use.
var commonCodes = [...]int{200, 400, 401, 403, 404, 405, 413, 415, 421, 500, 503}

func (m *routeMetrics) observe(status int, seconds float64) {
	m.duration.Observe(seconds)
	for i, code := range commonCodes {
		if code != status {
			continue
		}
		c := m.byCode[i].Load()
		if c == nil {
			made := m.requests.WithLabelValues(m.route, strconv.Itoa(status))
			m.byCode[i].CompareAndSwap(nil, &made)
			c = m.byCode[i].Load()
		}
		(*c).Inc()
		return
	}
	m.requests.WithLabelValues(m.route, strconv.Itoa(status)).Inc()
}

func newMetrics(reg prometheus.Registerer, routes []string) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vesta_http_requests_total",
		Help: "HTTP requests of the REST server, by route and status code.",
	}, []string{"route", "code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "vesta_http_request_duration_seconds",
		Help: "Time the REST server took to answer, by route.",
		// From a loopback round trip to the default request timeout.
		Buckets: []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1, 5},
	}, []string{"route"})
	var err error
	if requests, err = promreg.Register(reg, requests); err != nil {
		return nil, fmt.Errorf("rest: registering metrics: %w", err)
	}
	if duration, err = promreg.Register(reg, duration); err != nil {
		return nil, fmt.Errorf("rest: registering metrics: %w", err)
	}
	issued, err := issuedmetric.New(reg) // shared with the central server
	if err != nil {
		return nil, fmt.Errorf("rest: registering metrics: %w", err)
	}
	m := &metrics{requests: requests, duration: duration, issued: issued.Of(core.REST),
		routes: make(map[string]*routeMetrics, len(routes)+1)}
	for _, r := range append(routes, unmatched) {
		m.routes[r] = &routeMetrics{route: r, duration: duration.WithLabelValues(r), requests: requests}
	}
	return m, nil
}

// route returns the metrics of a route path; paths that are no route
// share the unmatched series.
func (m *metrics) route(path string) *routeMetrics {
	if r, ok := m.routes[path]; ok {
		return r
	}
	return m.routes[unmatched]
}
