package rest

import (
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/buildinfo"
)

// Listener is one listener of the process, as GET /v1/status shows it
// (Config.Listeners).
type Listener struct {
	// Name is "rpc" (the central server), "http" (this one) or "metrics"
	// (metrics.listen).
	Name string
	// Addr is the address it listens on, host:port.
	Addr string
}

// StoreInfo names a store without its secrets (Config.SegmentStore).
type StoreInfo struct {
	// Kind is the store's kind: "mysql", "redis"; "" is none.
	Kind string
	// Addr is where it is: host:port (several comma-separated), with the
	// database or key prefix; never a password.
	Addr string
}

type listenerBody struct {
	Name     string `json:"name"`
	Addr     string `json:"addr"`
	Open     *int64 `json:"open,omitempty"` // connections open; absent when not known (metrics)
	Rejected uint64 `json:"rejected"`       // closed on accept at a cap
	Shed     uint64 `json:"shed"`           // closed by the server to make room
}

type connectionsBody struct {
	Open   int `json:"open"`   // over every listener
	Budget int `json:"budget"` // the descriptor budget they share
}

type answersBody struct {
	HTTP4xx   uint64 `json:"http_4xx"`   // REST answers 400-499
	HTTP5xx   uint64 `json:"http_5xx"`   // REST answers 500-599
	RPCErrors uint64 `json:"rpc_errors"` // RPC answers with an error code
}

type latenciesBody struct {
	HTTP latencyBody `json:"http"`
	RPC  latencyBody `json:"rpc"`
}

type storeBody struct {
	Kind string `json:"kind"`
	Addr string `json:"addr"`
}

// historyParam reads ?history=: how many seconds of history to send, 0
// (none, the default) to historyLen.
func historyParam(c echo.Context) (int, error) {
	v, ok, err := query(c, "history")
	if err != nil || !ok {
		return 0, err
	}
	n, err := parseUint("history", v)
	if err != nil {
		return 0, err
	}
	if n > historyLen {
		return 0, badParam("history", "%d seconds; want 0 to %d", n, historyLen)
	}
	return int(n), nil
}

// processStatus fills what /v1/status tells of the process: the build,
// the listeners and their refusals, the answers, the IDs by method (read
// now, as /metrics would show them), the latencies of the last minute and,
// asked for, the history.
func (s *Server) processStatus(b *serverStatus, now time.Time, hist int) {
	b.Build = buildinfo.Read()
	b.Started = s.started.UTC().Format(time.RFC3339Nano)
	b.UptimeS = now.Sub(s.started).Seconds()
	b.SampleID = s.sampleID(now)
	t := s.tally(now)
	httpL, rpcL := s.hist.latency(t)
	b.Latency = latenciesBody{HTTP: httpL, RPC: rpcL}
	b.Answers = answersBody{HTTP4xx: t.http4xx, HTTP5xx: t.http5xx, RPCErrors: t.rpcErrors}
	b.IDsByMethod = map[string]uint64{}
	for i, m := range methods {
		if t.hasMethod[i] {
			b.IDsByMethod[m.String()] = t.byMethod[i]
		}
	}
	if bu := s.cfg.Budget; bu != nil {
		b.Connections = &connectionsBody{Open: bu.Len(), Budget: bu.Max()}
	}
	ls := s.cfg.Listeners
	if ls == nil {
		if a := s.Addr(); a != nil {
			ls = []Listener{{Name: "http", Addr: a.String()}}
		}
	}
	b.Listeners = []listenerBody{}
	for _, l := range ls {
		lb := listenerBody{Name: l.Name, Addr: l.Addr}
		for i, n := range listenerNames {
			if n.name == l.Name {
				lb.Rejected, lb.Shed = t.rejected[i], t.shed[i]
			}
		}
		switch l.Name {
		case "http":
			open := int64(s.limits.Len())
			lb.Open = &open
		case "rpc":
			if t.rpcOpen >= 0 {
				lb.Open = &t.rpcOpen
			}
		}
		b.Listeners = append(b.Listeners, lb)
	}
	if hist > 0 {
		h := s.hist.body(hist, t)
		b.History = &h
	}
}

// sampleID is an ID this server could issue at now (seq 0): an example
// that explains to now, in the server's own layout. "" past the layout's
// range.
func (s *Server) sampleID(now time.Time) string {
	f := s.gen.Own(core.REST)
	units, err := s.codec.Units(s.gen.Type(), now)
	if err != nil {
		return ""
	}
	f.Time = units
	id, err := s.codec.Make(f)
	if err != nil {
		return ""
	}
	return id.String()
}
