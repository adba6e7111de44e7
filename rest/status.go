package rest

import (
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/buildinfo"
	"github.com/vesta-go/vesta/segment"
)

// LeaseStatus is what GET /v1/status shows of the machine-ID lease
// (Config.Lease). The caller fills it from its lease; the durations are
// measured on the lease's clock at the moment of the call.
type LeaseStatus struct {
	// Provider names how the machine ID was obtained ("static", "redis",
	// "k8s", "iptable", ...).
	Provider string
	// State is "held" (a lease in Redis or etcd renewed in time), "fenced" (the lease
	// cannot be proven held: nothing is issued) or "none" (an ID nothing
	// can take away, or the lease was closed).
	State string
	// UntilRenewal is the time left before the next renewal is due; zero
	// without a lease in a store or when it is due now.
	UntilRenewal time.Duration
	// UntilDeadline is the time left before the generator is fenced unless
	// a renewal succeeds; zero without a lease in a store. Negative: past it.
	UntilDeadline time.Duration
	// HasDeadline tells that UntilDeadline and UntilRenewal mean something
	// (a lease in Redis or etcd); false for the providers with nothing to renew.
	HasDeadline bool
	// Quarantine is how far ahead of the clock the quarantine floor of a
	// newly taken machine ID still lies (its IDs' time fields stay above
	// it, as an earlier holder Redis forgot may have issued below); zero
	// when there is none or the clock has passed it.
	Quarantine time.Duration
	// Fences counts the times the generator was fenced.
	Fences uint64
	// RenewFailures counts failed renewals.
	RenewFailures uint64
	// Err says why the lease is not held; "" when it is.
	Err string
}

// bitField is where one field sits in the 64 bits of an ID.
type bitField struct {
	Name  string `json:"name"`  // version, type, method, time, machine or seq; sign (leaf)
	Shift uint   `json:"shift"` // the field's lowest bit
	Bits  uint   `json:"bits"`
}

// serverStatus is GET /v1/status: the server's state for the operator's page
// and for scripts, from the generator's Stats, the lease and the segment
// issuer.
type serverStatus struct {
	Now        string        `json:"now"` // the server's wall clock, RFC 3339
	Layout     string        `json:"layout"`
	Epoch      string        `json:"epoch"`
	Type       uint8         `json:"type"`
	TypeName   string        `json:"type_name"`
	Version    uint8         `json:"version"`
	Machine    uint16        `json:"machine"`
	Method     uint8         `json:"method"`
	MethodName string        `json:"method_name"`
	Fields     [2][]bitField `json:"fields"` // [t]: the layout of an ID of type t, highest bits first

	Ready         string  `json:"ready"`           // "ok" or why /readyz fails
	Issued        uint64  `json:"issued"`          // by the generator, every method
	Waits         uint64  `json:"waits"`           // sleeps: the sequence ran out beyond max_borrow
	Fenced        bool    `json:"fenced"`          // nothing is issued
	AheadMs       float64 `json:"ahead_ms"`        // the last issued unit ahead of the clock
	ClockOffsetMs float64 `json:"clock_offset_ms"` // wall clock minus the issuing clock
	Mark          *string `json:"mark"`            // the time guard's durable mark; null without a guard
	MarkAheadMs   float64 `json:"mark_ahead_ms"`   // how far the mark is ahead of the clock
	GuardFailed   bool    `json:"guard_failed"`    // the last save of the mark failed

	Lease   *leaseBody   `json:"lease"`   // null when the server was given no lease
	Segment *segmentBody `json:"segment"` // null without a segment store
	Mask    *maskStatus  `json:"mask"`    // null without a masking key (mask.go)

	// The process (status_process.go).
	Build       buildinfo.Info    `json:"build"`
	Started     string            `json:"started"`   // when the server was built, RFC 3339
	UptimeS     float64           `json:"uptime_s"`  // seconds since then
	SampleID    string            `json:"sample_id"` // an ID of this server's layout for now, seq 0: the page's placeholder
	Listeners   []listenerBody    `json:"listeners"`
	Connections *connectionsBody  `json:"connections,omitempty"` // the descriptor budget over every listener; absent without one
	Answers     answersBody       `json:"answers"`
	IDsByMethod map[string]uint64 `json:"ids_by_method"` // vesta_ids_issued_total by method
	Latency     latenciesBody     `json:"latency"`
	History     *historyBody      `json:"history,omitempty"` // with ?history=seconds
}

type leaseBody struct {
	Provider      string   `json:"provider"`
	State         string   `json:"state"`
	RenewalInMs   *float64 `json:"renewal_in_ms"`  // null without a lease in a store
	DeadlineInMs  *float64 `json:"deadline_in_ms"` // null without a lease in a store
	QuarantineMs  float64  `json:"quarantine_ms"`
	Fences        uint64   `json:"fences"`
	RenewFailures uint64   `json:"renew_failures"`
	Error         string   `json:"error,omitempty"`
}

type segmentBody struct {
	Status string        `json:"status"` // "ok" or "unavailable: why"
	Store  *storeBody    `json:"store,omitempty"`
	Tags   []segTagStats `json:"tags"`
}

type segTagStats struct {
	Tag            string  `json:"tag"`
	Issued         int64   `json:"issued"`
	Remaining      int64   `json:"remaining"`
	Step           int64   `json:"step"`
	RangesFetched  int64   `json:"ranges_fetched"`
	StoreErrors    int64   `json:"store_errors"`
	StoreLatencyMs float64 `json:"store_latency_ms"`
	Waits          int64   `json:"waits"`
	LastError      string  `json:"last_error,omitempty"`
}

// segmentStats is what a Sequences may also offer for /v1/status;
// *segment.Sequencer does.
type segmentStats interface {
	Tags() []string
	Stats(tag string) (segment.Stats, bool)
}

// layoutFields derives the bit fields of the generator's layout and type
// from its codec, by decoding single bits: what Explain (and so `vesta
// explain`) reads is what the page draws, with no second copy of the
// layout here.
func layoutFields(codec core.Codec, t core.Type) []bitField {
	leaf := codec.Layout() == core.Leaf // no type, version or method bits
	typeBit := core.ID(t) << 62
	if leaf {
		typeBit = 0 // bit 62 is time
	}
	var out []bitField
	for b := 63; b >= 0; b-- {
		e := codec.Explain(typeBit | core.ID(1)<<uint(b))
		name := ""
		switch {
		case leaf && b == 63:
			name = "sign"
		case b == 62 && !leaf:
			name = "type"
		case e.Version != 0:
			name = "version"
		case e.Method != 0 && e.Method != core.MethodUnknown:
			name = "method"
		case e.Time != 0:
			name = "time"
		case e.Machine != 0:
			name = "machine"
		case e.Seq != 0:
			name = "seq"
		default:
			name = "unused"
		}
		if n := len(out); n > 0 && out[n-1].Name == name {
			out[n-1].Shift, out[n-1].Bits = uint(b), out[n-1].Bits+1
			continue
		}
		out = append(out, bitField{Name: name, Shift: uint(b), Bits: 1})
	}
	return out
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// GET /v1/status[?history=seconds]
func (s *Server) apiStatus(c echo.Context) error {
	hist, err := historyParam(c)
	if err != nil {
		return err
	}
	st := s.gen.Stats()
	now := time.Now()
	b := serverStatus{
		Now:    now.UTC().Format(time.RFC3339Nano),
		Layout: s.gen.Layout().String(), Epoch: s.codec.Epoch().Format(time.RFC3339Nano),
		Type: uint8(s.gen.Type()), TypeName: s.gen.Type().String(), Version: s.gen.Version(),
		Machine: uint16(s.gen.Machine()), Method: uint8(core.REST), MethodName: core.REST.String(),
		Fields: [2][]bitField{layoutFields(s.codec, core.MaxPeak), layoutFields(s.codec, core.MinGranularity)},
		Ready:  "ok", Issued: st.Issued, Waits: st.Waits, Fenced: st.Fenced,
		AheadMs: durMs(st.Ahead), ClockOffsetMs: durMs(st.ClockOffset), GuardFailed: st.GuardFailed,
	}
	if err := s.readiness(); err != nil {
		b.Ready = err.message
	}
	if !st.Mark.IsZero() {
		m := st.Mark.UTC().Format(time.RFC3339Nano)
		b.Mark = &m
		b.MarkAheadMs = durMs(st.MarkAhead)
	}
	if s.cfg.Lease != nil {
		l := s.cfg.Lease()
		lb := &leaseBody{Provider: l.Provider, State: l.State, QuarantineMs: durMs(l.Quarantine),
			Fences: l.Fences, RenewFailures: l.RenewFailures, Error: l.Err}
		if l.HasDeadline {
			r, d := durMs(l.UntilRenewal), durMs(l.UntilDeadline)
			lb.RenewalInMs, lb.DeadlineInMs = &r, &d
		}
		b.Lease = lb
	}
	if s.cfg.Sequences != nil {
		sb := &segmentBody{Status: s.segmentStatus(), Tags: []segTagStats{}}
		if k := s.cfg.SegmentStore; k.Kind != "" {
			sb.Store = &storeBody{Kind: k.Kind, Addr: k.Addr}
		}
		if ss, ok := s.cfg.Sequences.(segmentStats); ok {
			tags := ss.Tags()
			sort.Strings(tags)
			for _, tag := range tags {
				x, ok := ss.Stats(tag)
				if !ok {
					continue
				}
				ts := segTagStats{Tag: tag, Issued: x.Issued, Remaining: x.Remaining, Step: x.Step,
					RangesFetched: x.RangesFetched, StoreErrors: x.StoreErrors,
					StoreLatencyMs: durMs(x.StoreLatency), Waits: x.Waits}
				if x.LastError != nil {
					ts.LastError = x.LastError.Error()
				}
				sb.Tags = append(sb.Tags, ts)
			}
		}
		b.Segment = sb
	}
	b.Mask = s.maskStatus()
	s.processStatus(&b, now, hist) // status_process.go
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, b)
}

// readiness is /readyz's verdict: nil when ready, else the 503 it answers.
func (s *Server) readiness() *apiError {
	if s.draining.Load() {
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, message: "shutting down"}
	}
	if err := s.gen.Ready(); err != nil {
		return notReady(err)
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			return notReady(err)
		}
	}
	return nil
}
