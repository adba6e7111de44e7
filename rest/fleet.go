package rest

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vesta-go/vesta/internal/buildinfo"
)

// FleetView is what GET /v1/fleet shows (Config.Fleet): the servers that
// share this one's lease store, as their member records there say. It is
// for display only; nothing decides anything on it.
type FleetView struct {
	// Store is "redis", "etcd" or "none" (a fixed machine ID: no store to
	// list from).
	Store string
	// Prefix is the lease keys' prefix; "" without a store.
	Prefix string
	// Members are sorted by machine ID, this server's own entry (Self)
	// among them.
	Members []FleetMember
	// Skipped notes the records in the store that could not be read.
	Skipped []string
}

// FleetFunc reads the fleet for Config.Fleet, within ctx.
type FleetFunc func(ctx context.Context) (FleetView, error)

// FleetMember is one server of a FleetView.
type FleetMember struct {
	Machine uint16
	Self    bool // this server
	// State is "held" or "fenced" ("none" for a fixed ID).
	State string
	// Provider gave the machine ID; Range is "server" or "embedded".
	Provider, Range string
	Version         string // its build: "v0.1.0 (1a2b3c4d5e6f)"
	Host            string
	PID             int
	RPC, HTTP       string // the listener addresses it advertised; "" for none
	// Started is when it took its first lease; Renewed and Expires are its
	// lease's last renewal and expiry. Zero is unknown (shown as "").
	Started, Renewed, Expires time.Time
}

// fleetTimeout bounds the store read of one GET /v1/fleet: a store that
// does not answer costs the page a second, not the request timeout.
const fleetTimeout = 1500 * time.Millisecond

// fleetFresh is how long one store read serves every GET /v1/fleet
// (package coalesce: one read at a time, the others wait for it): the
// read lists the whole machine-ID range (1,024 keys on Redis) from the
// store the leases renew in, so callers in a loop must not turn into
// reads of it. The page asks every 5 s.
const fleetFresh = time.Second

// fleetBody is GET /v1/fleet.
type fleetBody struct {
	Now     string       `json:"now"`
	Store   string       `json:"store"`
	Prefix  string       `json:"prefix"`
	Members []memberBody `json:"members"`
	Skipped []string     `json:"skipped"`
	Error   string       `json:"error"`
}

type memberBody struct {
	Machine  uint16 `json:"machine"`
	Self     bool   `json:"self"`
	State    string `json:"state"`
	Version  string `json:"version"`
	Host     string `json:"host"`
	RPC      string `json:"rpc"`
	HTTP     string `json:"http"`
	Started  string `json:"started"`
	Renewed  string `json:"renewed"`
	Expires  string `json:"expires"`
	Provider string `json:"provider"`
	Range    string `json:"range"`
	PID      int    `json:"pid"`
}

// GET /v1/fleet
func (s *Server) apiFleet(c echo.Context) error {
	var v FleetView
	var err error
	if s.cfg.Fleet != nil {
		v, err = s.fleet.Get(c.Request().Context(), struct{}{}, min(fleetTimeout, s.cfg.RequestTimeout), s.cfg.Fleet)
	} else {
		v = FleetView{Store: "none"}
	}
	if len(v.Members) == 0 {
		v.Members = []FleetMember{s.selfMember()}
	}
	if v.Store == "" {
		v.Store = "none"
	}
	b := fleetBody{Now: time.Now().UTC().Format(time.RFC3339Nano), Store: v.Store, Prefix: v.Prefix,
		Members: make([]memberBody, 0, len(v.Members)), Skipped: v.Skipped}
	if b.Skipped == nil {
		b.Skipped = []string{}
	}
	if err != nil {
		b.Error = err.Error()
	}
	for _, m := range v.Members {
		b.Members = append(b.Members, memberBody{Machine: m.Machine, Self: m.Self, State: m.State, Version: m.Version,
			Host: m.Host, RPC: m.RPC, HTTP: m.HTTP, Started: rfc3339(m.Started), Renewed: rfc3339(m.Renewed),
			Expires: rfc3339(m.Expires), Provider: m.Provider, Range: m.Range, PID: m.PID})
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, b)
}

// selfMember is this server as it knows itself, for a Config without
// Fleet or a view without members.
func (s *Server) selfMember() FleetMember {
	host, _ := os.Hostname()
	m := FleetMember{Machine: uint16(s.gen.Machine()), Self: true, State: "none", Version: buildinfo.Read().String(),
		Host: host, PID: os.Getpid(), Range: "server"} // REST issues from the server range
	if s.cfg.Lease != nil {
		l := s.cfg.Lease()
		m.State, m.Provider = l.State, l.Provider
	}
	if a := s.Addr(); a != nil {
		m.HTTP = a.String()
	}
	return m
}

// rfc3339 is t in RFC 3339 with nanoseconds, UTC; "" for the zero time.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
