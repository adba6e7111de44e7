package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
)

// The holder of an ID: GET /v1/ids/{id}?holder=true adds, beside the
// explanation, the hold of the ID's machine whose interval contains the
// ID's instant, from the lease store's hold history (machineid's
// Lease.History; Config.Holders), or why none is known. Display and
// detection only: nothing decides anything on it.

// HoldHistory is one machine ID's hold history, as Config.Holders reads
// it: Match says which holds cover an instant.
type HoldHistory struct {
	// Store is "redis", "etcd", or "none" (a fixed ID, or no store).
	Store string
	// Match says which holds cover instant t (the start of an ID's time
	// unit), read at now.
	Match func(t, now time.Time) HolderMatch
	// Skipped notes the entries that could not be read.
	Skipped []string
}

// HolderMatch is what a history says of one instant.
type HolderMatch struct {
	// Holds cover the instant: one (the holder), none, or several (a
	// Conflict: two holders could both have issued then).
	Holds    []Hold
	Conflict bool
	// Inferred: the one hold matched only through the inferred end of
	// an unended hold.
	Inferred bool
	// Reason says why none (or several) matched.
	Reason string
}

// Hold is one hold of a machine ID: who held it, when, how it ended.
type Hold struct {
	Hold, Lease     string
	Self            bool
	Provider, Range string
	Host, Pod       string
	PID             int
	Version, Layout string
	Started, From   time.Time
	Renewed, Mark   time.Time
	Ended           time.Time
	End, EndKnown   string
	Note            string
	TTL, MaxBorrow  time.Duration
}

// HoldersFunc reads machine's hold history for Config.Holders, within ctx.
type HoldersFunc func(ctx context.Context, machine uint16) (HoldHistory, error)

// holdersTimeout bounds one history read; holdersFresh is how long a read
// serves every explain of the same machine ID (package coalesce), so
// that explains in a loop are not reads of the store the leases renew in.
const (
	holdersTimeout = 1500 * time.Millisecond
	holdersFresh   = time.Second
)

// holderBody is the holder object of GET /v1/ids/{id}?holder=true.
type holderBody struct {
	Known    bool       `json:"known"`
	Conflict bool       `json:"conflict"`
	Inferred bool       `json:"inferred"`
	Reason   string     `json:"reason"`
	Store    string     `json:"store"`
	Holds    []holdBody `json:"holds"`
	Skipped  []string   `json:"skipped"`
}

type holdBody struct {
	Hold     string `json:"hold"`
	Lease    string `json:"lease"`
	Self     bool   `json:"self"`
	Provider string `json:"provider"`
	Range    string `json:"range"`
	Host     string `json:"host"`
	Pod      string `json:"pod"`
	PID      int    `json:"pid"`
	Version  string `json:"version"`
	Layout   string `json:"layout"`
	Started  string `json:"started"`
	From     string `json:"from"`
	Renewed  string `json:"renewed"`
	Mark     string `json:"mark"`
	Ended    string `json:"ended"`
	End      string `json:"end"`
	EndKnown string `json:"end_known"`
	Note     string `json:"note"`
	TTLMs    int64  `json:"ttl_ms"`
}

// wantsHolder reads the holder parameter: "true" or "false".
func wantsHolder(c echo.Context) (bool, error) {
	v, ok, err := query(c, "holder")
	switch {
	case err != nil:
		return false, err
	case !ok || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	}
	return false, badParam("holder", "%q; want true or false", v)
}

// explainWithHolder answers GET /v1/ids/{id}?holder=true: the explanation
// and its holder object. A history the store cannot read is a 503.
func (s *Server) explainWithHolder(c echo.Context, e core.Explanation) error {
	hb := holderBody{Store: "none", Holds: []holdBody{}, Skipped: []string{}}
	if s.cfg.Holders == nil {
		hb.Reason = "this server keeps no hold history: its machine IDs are not leased from a store (fixed IDs keep no history)"
	} else {
		ctx := c.Request().Context()
		h, err := s.holders.Get(ctx, uint16(e.Machine), min(holdersTimeout, s.cfg.RequestTimeout), func(ctx context.Context) (HoldHistory, error) {
			return s.cfg.Holders(ctx, uint16(e.Machine))
		})
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return err
			}
			return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, retryAfter: 1,
				message: fmt.Sprintf("the hold history of machine %d cannot be read: %v", e.Machine, err), cause: err}
		}
		hb.Store = h.Store
		if h.Skipped != nil {
			hb.Skipped = h.Skipped
		}
		m := h.Match(e.Instant, time.Now())
		hb.Known, hb.Conflict, hb.Inferred, hb.Reason = len(m.Holds) == 1, m.Conflict, m.Inferred, m.Reason
		for _, x := range m.Holds {
			hb.Holds = append(hb.Holds, holdBody{Hold: x.Hold, Lease: x.Lease, Self: x.Self, Provider: x.Provider, Range: x.Range,
				Host: x.Host, Pod: x.Pod, PID: x.PID, Version: x.Version, Layout: x.Layout, Started: rfc3339(x.Started),
				From: rfc3339(x.From), Renewed: rfc3339(x.Renewed), Mark: rfc3339(x.Mark), Ended: rfc3339(x.Ended),
				End: x.End, EndKnown: x.EndKnown, Note: x.Note, TTLMs: x.TTL.Milliseconds()})
		}
		if m.Conflict {
			s.conflicts.Inc()
			s.log.Error("rest: an ID lies inside two holds of its machine ID: two holders could both have issued it",
				"id", e.ID, "machine", e.Machine, "reason", m.Reason)
		}
	}
	exp, err := json.Marshal(e)
	if err != nil {
		return err
	}
	hj, err := json.Marshal(hb)
	if err != nil {
		return err
	}
	body := append(append(append(exp[:len(exp)-1:len(exp)-1], `,"holder":`...), hj...), '}')
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSONBlob(http.StatusOK, body)
}

// newConflicts is vesta_hold_conflicts_total.
func newConflicts(reg prometheus.Registerer) (prometheus.Counter, error) {
	return register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "vesta_hold_conflicts_total",
		Help: "Explains with the holder that found an ID's instant inside two holds of its machine ID: a broken promise of uniqueness.",
	}))
}
