package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/holdmetric"
)

// The holder of an ID: GET /v1/ids/{id}?holder=true adds, beside the
// explanation, the hold of the ID's machine whose span contains the ID's
// instant, or why none is known (Config.Holders, package api's Holders,
// shared with the central server's Vesta.Holder).

// holdersTimeout bounds one history read.
const holdersTimeout = 1500 * time.Millisecond

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
	ctx := c.Request().Context()
	h, err := s.cfg.Holders.Of(ctx, e, min(holdersTimeout, s.cfg.RequestTimeout), time.Now())
	var ae *api.Error
	switch {
	case errors.As(err, &ae) && ae.Code == api.InvalidArgument:
		return paramError(err)
	case errors.As(err, &ae):
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, retryAfter: 1, message: ae.Message, cause: err}
	case err != nil:
		return err
	}
	hb := holderBody{Known: h.Known, Conflict: h.Conflict, Inferred: h.Inferred, Reason: h.Reason, Store: h.Store,
		Holds: []holdBody{}, Skipped: h.Skipped}
	for _, x := range h.Holds {
		hb.Holds = append(hb.Holds, holdBody{Hold: x.Hold, Lease: x.Lease, Self: x.Self, Provider: x.Provider, Range: x.Range,
			Host: x.Host, Pod: x.Pod, PID: x.PID, Version: x.Version, Layout: x.Layout, Started: rfc3339(x.Started),
			From: rfc3339(x.From), Renewed: rfc3339(x.Renewed), Mark: rfc3339(x.Mark), Ended: rfc3339(x.Ended),
			End: x.End, EndKnown: x.EndKnown, Note: x.Note, TTLMs: x.TTL.Milliseconds()})
	}
	if h.Conflict {
		s.conflicts.Inc()
		s.log.Error("rest: an ID lies inside two holds of its machine ID: two holders could both have issued it",
			"id", e.ID, "machine", e.Machine, "reason", h.Reason)
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

// newConflicts is vesta_hold_conflicts_total, shared with the central
// server of the same registry.
func newConflicts(reg prometheus.Registerer) (prometheus.Counter, error) {
	c, err := holdmetric.Conflicts(reg)
	if err != nil {
		return nil, fmt.Errorf("rest: registering metrics: %w", err)
	}
	return c, nil
}
