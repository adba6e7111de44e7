package rest

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vesta-go/vesta/internal/connlimit"
)

// Connection caps (Config.MaxConns, MaxConnsPerPeer), as the central
// server has them, through package connlimit: the listener admits each
// connection, shedding one that has sent no request yet (bounded anyway
// by the header read timeout) or an idle keep-alive one, and the
// http.Server's ConnState hook tells the limiter which connections are
// mid-request. An HTTP/2 connection is active from its first request to
// its end: it is never shed.

// connLimits are the limiter and its metrics.
type connLimits struct {
	lim      *connlimit.Limiter
	rejected map[connlimit.Reason]prometheus.Counter
	shed     map[connlimit.Reason]prometheus.Counter
}

func newConnLimits(reg prometheus.Registerer, cfg Config) (*connLimits, error) {
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vesta_http_connections_rejected_total",
		Help: "HTTP connections closed on accept, by the cap reached (max_conns, max_conns_per_peer) while every open connection was mid-request.",
	}, []string{"reason"})
	shed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vesta_http_connections_shed_total",
		Help: "HTTP connections closed to make room for a new one, those without a request yet first, then idle ones, by the cap reached (max_conns, max_conns_per_peer).",
	}, []string{"reason"})
	var err error
	if rejected, err = register(reg, rejected); err != nil {
		return nil, err
	}
	if shed, err = register(reg, shed); err != nil {
		return nil, err
	}
	l := &connLimits{lim: connlimit.NewLimiter(cfg.MaxConns, cfg.MaxConnsPerPeer),
		rejected: map[connlimit.Reason]prometheus.Counter{}, shed: map[connlimit.Reason]prometheus.Counter{}}
	for _, r := range []connlimit.Reason{connlimit.MaxConns, connlimit.MaxConnsPerPeer} {
		l.rejected[r] = rejected.WithLabelValues(string(r))
		l.shed[r] = shed.WithLabelValues(string(r))
	}
	return l, nil
}

// listener wraps ln so that every connection it returns is admitted.
func (l *connLimits) listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, l: l}
}

type limitListener struct {
	net.Listener
	l *connLimits
}

// Accept returns the next connection admitted, closing those refused.
func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc, shed, refused := ll.l.lim.Admit(connlimit.PeerOf(nc.RemoteAddr()), func() { nc.Close() })
		if lc == nil {
			ll.l.rejected[refused].Inc()
			nc.Close()
			continue
		}
		if shed != "" {
			ll.l.shed[shed].Inc()
		}
		return &limitedConn{Conn: nc, lc: lc}, nil
	}
}

// limitedConn is an admitted connection; closing it gives its place back.
type limitedConn struct {
	net.Conn
	lc     *connlimit.Conn
	proven atomic.Bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.lc.Release()
	return err
}

// connState is the http.Server's ConnState hook: a connection whose
// first request has arrived is no longer fresh; between requests it is
// idle.
func (l *connLimits) connState(nc net.Conn, st http.ConnState) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		if c.proven.CompareAndSwap(false, true) {
			c.lc.Proven()
		} else {
			c.lc.SetBusy()
		}
	case http.StateIdle:
		c.lc.SetIdle(time.Now().UnixNano())
	case http.StateHijacked, http.StateClosed:
		c.lc.Release()
	}
}
