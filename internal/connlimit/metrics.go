package connlimit

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/promreg"
)

// Names name a listener's metrics, written out in full by each server so
// that its code names what it exports.
type Names struct {
	// Rejected counts connections refused at accept, by reason
	// (vesta_rpc_connections_rejected_total).
	Rejected string
	// Shed counts connections closed to make room or to bound unread
	// answers, by reason (vesta_rpc_connections_shed_total).
	Shed string
	// Streams counts HTTP/2 streams refused past the caps, by reason; ""
	// for a listener without HTTP/2.
	Streams string
	// Unsent is the gauge of the bytes held (Hold).
	Unsent string
	// Protocol is what the help texts call the connections: "HTTP".
	Protocol string
}

// Metrics are a listener's counters of refused and shed connections, by
// Reason, every label value resolved up front. A nil *Metrics counts
// nothing.
type Metrics struct {
	rejected, shed, streams map[Reason]prometheus.Counter

	reg    prometheus.Registerer
	unsent string
}

// NewMetrics registers a listener's counters on reg, with the label
// reason, under the names n gives; the Unsent gauge is registered by
// NewLimiter. Counters already registered under those names (two servers
// on one registry) are reused. A nil reg returns nil.
func NewMetrics(reg prometheus.Registerer, n Names) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Metrics{reg: reg, unsent: n.Unsent}
	var err error
	vec := func(name, help string, reasons ...Reason) map[Reason]prometheus.Counter {
		v, e := promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"reason"}))
		if e != nil {
			err = errors.Join(err, fmt.Errorf("connlimit: registering %s: %w", name, e))
			return nil
		}
		out := make(map[Reason]prometheus.Counter, len(reasons))
		for _, r := range reasons {
			out[r] = v.WithLabelValues(string(r))
		}
		return out
	}
	m.rejected = vec(n.Rejected, n.Protocol+
		" connections closed on accept, by the cap reached (max_conns, max_conns_per_peer, fd_budget: the process's file descriptors) while no open connection could be shed.", caps...)
	m.shed = vec(n.Shed, n.Protocol+
		" connections closed by the server to make room or to bound unread answers, by reason: at a cap (max_conns, max_conns_per_peer, fd_budget) silent ones first, then idle, then stalled ones; past max_unsent_bytes or a peer's share (max_unsent_bytes_per_peer) those whose answers waited longest.", reasons...)
	if n.Streams != "" {
		m.streams = vec(n.Streams, n.Protocol+
			"/2 streams answered 503 at once, by the cap reached (max_conns, max_conns_per_peer): each stream beyond a connection's first takes a place.", MaxConns, MaxConnsPerPeer)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// watch registers the Unsent gauge of l, the bytes it holds (Hold). A
// second limiter on the same names (two servers on one registry) is not
// shown.
func (m *Metrics) watch(l *Limiter) {
	if m == nil || m.unsent == "" {
		return
	}
	_ = m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: m.unsent,
		Help: "Bytes of answers held for peers in writes the kernel has not taken yet (peers that do not read them), bounded by max_unsent_bytes.",
	}, func() float64 { return float64(l.Unsent()) }))
}

func (m *Metrics) refuse(r Reason) {
	if m != nil {
		m.rejected[r].Inc()
	}
}

func (m *Metrics) countShed(r Reason) {
	if m != nil && r != "" {
		m.shed[r].Inc()
	}
}

func (m *Metrics) refuseStream(r Reason) {
	if m != nil && m.streams != nil {
		m.streams[r].Inc()
	}
}

// Register registers b's gauges on reg: vesta_connections_budget (the
// cap) and vesta_connections_open (the connections counted, over every
// listener).
func (b *Budget) Register(reg prometheus.Registerer) error {
	return errors.Join(
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vesta_connections_budget",
			Help: "The connections every listener together may hold: the file-descriptor limit (RLIMIT_NOFILE) less those open at start and a reserve for the time guard, the lease and the segment stores.",
		}, func() float64 { return float64(b.Max()) })),
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vesta_connections_open",
			Help: "Connections open, over every listener, counted against vesta_connections_budget.",
		}, func() float64 { return float64(b.Len()) })),
	)
}
