package prommetrics

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/ceilingmetric"
	"github.com/vesta-go/vesta/internal/issuedmetric"
	"github.com/vesta-go/vesta/internal/promreg"
)

// ErrClientRegistered: RegisterClient on a registry where another client,
// still open, registered its metrics. Wrap reg with
// prometheus.WrapRegistererWith and a label per client.
var ErrClientRegistered = errors.New("prommetrics: another open client's metrics are registered there")

// RegisterClient registers a Go client's metrics on reg: its own
// (vesta_client_*), its waits at the servers' ceiling
// (vesta_ceiling_*{method="central"}, the IDs waited for, shared with a
// central server on reg) and, unless NoFallback, its fallback's IDs
// (vesta_ids_issued_total{method="embedded"}) and lease
// (vesta_machine_*{range="embedded"}). Once the client is closed its
// vesta_client_* series go and reg takes another client's; its counts in
// the shared series stay.
func RegisterClient(reg prometheus.Registerer, c *client.Client) error {
	cc, err := promreg.Register(reg, newClientCollector())
	if err != nil {
		return fmt.Errorf("prommetrics: the client's metrics: %w", err)
	}
	cc.mu.Lock()
	if cc.c != nil && !cc.c.Stats().Closed {
		cc.mu.Unlock()
		return ErrClientRegistered
	}
	prev := cc.c
	cc.c = c
	cc.mu.Unlock()
	undo := func(err error) error {
		cc.mu.Lock()
		cc.c = prev
		cc.mu.Unlock()
		return fmt.Errorf("prommetrics: the client's metrics: %w", err)
	}
	if err := ceilingmetric.AddSource(reg, ceilingmetric.Central, func() ceilingmetric.Reading {
		w := c.Stats().CeilingWaits
		return ceilingmetric.Reading{Waits: w.Count(), Wait: w}
	}); err != nil {
		return undo(err)
	}
	if l := c.FallbackLease(); l != nil {
		issued, err := issuedmetric.New(reg)
		if err == nil {
			err = RegisterLease(reg, l)
		}
		if err != nil {
			return undo(err)
		}
		issued.Read(core.Embedded, func() uint64 { return c.Stats().FallbackIssued })
	}
	return nil
}

// clientCollector is a registry's vesta_client_*: of one client at a time.
type clientCollector struct {
	calls, breaker, method, buffered, fbMachine, fbReady *prometheus.Desc

	mu sync.Mutex
	c  *client.Client
}

func newClientCollector() *clientCollector {
	return &clientCollector{
		calls: prometheus.NewDesc("vesta_client_calls_total",
			"Calls to central servers by server and result (ok, busy, a wire error code, timeout, network, rejected, protocol, canceled, shape).",
			[]string{"server", "result"}, nil),
		breaker: prometheus.NewDesc("vesta_client_breaker_state",
			"Circuit breaker state per server: 0 closed, 1 half-open, 2 open.", []string{"server"}, nil),
		method: prometheus.NewDesc("vesta_client_method",
			"The publish method of the IDs handed out last (core.Method): 1 central (from the servers), 0 embedded (from the fallback).", nil, nil),
		buffered: prometheus.NewDesc("vesta_client_prefetch_buffered", "Prefetched central IDs ready to hand out.", nil, nil),
		fbMachine: prometheus.NewDesc("vesta_client_fallback_machine_id",
			"The machine ID of the client's embedded fallback, held from the client's start.", nil, nil),
		fbReady: prometheus.NewDesc("vesta_client_fallback_ready",
			"1 once the client's embedded fallback may issue, 0 while it is opened in the background (a fresh Redis lease's takeover quarantine) or when its opening failed.", nil, nil),
	}
}

func (cc *clientCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cc.calls, cc.breaker, cc.method, cc.buffered, cc.fbMachine, cc.fbReady} {
		ch <- d
	}
}

func (cc *clientCollector) Collect(ch chan<- prometheus.Metric) {
	cc.mu.Lock()
	c := cc.c
	cc.mu.Unlock()
	if c == nil {
		return
	}
	st := c.Stats()
	if st.Closed {
		return
	}
	for _, s := range st.Servers {
		// ok and busy from the start, as a working server answers; the
		// other results once they occur.
		for _, r := range []string{"ok", "busy"} {
			ch <- prometheus.MustNewConstMetric(cc.calls, prometheus.CounterValue, float64(s.Calls[r]), s.Addr, r)
		}
		for _, r := range slices.Sorted(maps.Keys(s.Calls)) {
			if r != "ok" && r != "busy" {
				ch <- prometheus.MustNewConstMetric(cc.calls, prometheus.CounterValue, float64(s.Calls[r]), s.Addr, r)
			}
		}
		ch <- prometheus.MustNewConstMetric(cc.breaker, prometheus.GaugeValue, float64(s.Breaker), s.Addr)
	}
	ch <- prometheus.MustNewConstMetric(cc.method, prometheus.GaugeValue, float64(st.Method))
	ch <- prometheus.MustNewConstMetric(cc.buffered, prometheus.GaugeValue, float64(st.Buffered))
	if st.Fallback.Enabled {
		ch <- prometheus.MustNewConstMetric(cc.fbMachine, prometheus.GaugeValue, float64(st.Fallback.Machine))
		ch <- prometheus.MustNewConstMetric(cc.fbReady, prometheus.GaugeValue, b2f(st.Fallback.Ready))
	}
}
