package rest

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vesta-go/vesta/internal/connlimit"
)

// The listener policy (package connlimit), as the central server has it:
// the caps (Config.MaxConns, MaxConnsPerPeer, IPv6 peers by PeerPrefixV6)
// with shedding of silent, idle and stalled connections, the process's
// descriptor budget (Config.Budget), the first request's deadline
// (RequestTimeout), HTTP/2 streams counted under the caps, and answers
// held for peers that do not read bounded by MaxUnsentBytes. The
// http.Server comes from the limiter, so that the metrics listener of
// `vesta serve` follows the same rules.

// newLimiter returns the policy of cfg (with its defaults).
func newLimiter(reg prometheus.Registerer, cfg Config) (*connlimit.Limiter, error) {
	m, err := connlimit.NewMetrics(reg, connlimit.Names{
		Rejected: "vesta_http_connections_rejected_total", Shed: "vesta_http_connections_shed_total",
		Streams: "vesta_http_streams_rejected_total", Unsent: "vesta_http_unsent_bytes", Protocol: "HTTP",
	})
	if err != nil {
		return nil, err
	}
	return connlimit.NewLimiter(connlimit.Config{
		MaxConns: cfg.MaxConns, MaxConnsPerPeer: cfg.MaxConnsPerPeer, PeerPrefixV6: cfg.PeerPrefixV6,
		MaxUnsentBytes: int64(cfg.MaxUnsentBytes), FirstRequest: cfg.RequestTimeout, Budget: cfg.Budget,
		Metrics: m, Logger: cfg.Logger, Name: "rest",
	}), nil
}
