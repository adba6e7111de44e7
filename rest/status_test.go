package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/buildinfo"
	"github.com/vesta-go/vesta/rest"
)

type statusResp struct {
	Layout   string `json:"layout"`
	Epoch    string `json:"epoch"`
	Type     uint8  `json:"type"`
	TypeName string `json:"type_name"`
	Version  uint8  `json:"version"`
	Machine  uint16 `json:"machine"`
	Fields   [2][]struct {
		Name  string `json:"name"`
		Shift uint   `json:"shift"`
		Bits  uint   `json:"bits"`
	} `json:"fields"`
	Ready       string   `json:"ready"`
	Issued      uint64   `json:"issued"`
	Fenced      bool     `json:"fenced"`
	Mark        *string  `json:"mark"`
	MarkAheadMs float64  `json:"mark_ahead_ms"`
	AheadMs     float64  `json:"ahead_ms"`
	Lease       *leaseJS `json:"lease"`
	Segment     *struct {
		Status string `json:"status"`
		Tags   []struct {
			Tag    string `json:"tag"`
			Issued int64  `json:"issued"`
		} `json:"tags"`
	} `json:"segment"`
}

type leaseJS struct {
	Provider     string   `json:"provider"`
	State        string   `json:"state"`
	RenewalInMs  *float64 `json:"renewal_in_ms"`
	DeadlineInMs *float64 `json:"deadline_in_ms"`
	QuarantineMs float64  `json:"quarantine_ms"`
	Fences       uint64   `json:"fences"`
	Error        string   `json:"error"`
}

// TestStatus: /v1/status reports the generator's Stats, the lease the
// server was given and nothing it was not, behind the token.
func TestStatus(t *testing.T) {
	clock := core.NewManualClock(start2024)
	guard := core.NewMemGuard(time.Time{})
	gen, _ := newGen(t, core.Config{Layout: core.Vesta, Machine: 1022, Version: 1, Clock: clock, Guard: guard})
	lease := rest.LeaseStatus{Provider: "redis", State: "held", HasDeadline: true,
		UntilRenewal: 2500 * time.Millisecond, UntilDeadline: 9 * time.Second, Quarantine: 1500 * time.Millisecond, Fences: 2}
	s := newServer(t, gen, rest.Config{Token: token, Lease: func() rest.LeaseStatus { return lease }})

	if r := get(t, s.Handler(), "/v1/status"); r.Status != http.StatusUnauthorized {
		t.Fatalf("/v1/status without the token = %d, want 401", r.Status)
	}
	if _, err := gen.NextIDs(context.Background(), core.REST, 7); err != nil {
		t.Fatal(err)
	}
	var st statusResp
	r := doHandler(s, authed(req(http.MethodGet, "/v1/status", "", "")))
	if r.Status != http.StatusOK {
		t.Fatalf("/v1/status = %d %s", r.Status, r.Body)
	}
	decode(t, r.Body, &st)
	stats := gen.Stats()
	if st.Layout != "vesta" || st.Machine != 1022 || st.Version != 1 || st.Type != 0 || st.TypeName != "max-peak" ||
		st.Epoch != core.VestaEpoch.Format(time.RFC3339Nano) {
		t.Errorf("format %+v", st)
	}
	if st.Issued != 7 || st.Issued != stats.Issued || st.Fenced || st.Ready != "ok" {
		t.Errorf("issued %d fenced %v ready %q; Stats say %d issued", st.Issued, st.Fenced, st.Ready, stats.Issued)
	}
	if st.Mark == nil || *st.Mark != stats.Mark.Format(time.RFC3339Nano) || st.MarkAheadMs <= 0 ||
		st.MarkAheadMs != float64(stats.MarkAhead)/1e6 {
		t.Errorf("mark %v ahead %v ms; Stats say %s ahead %s", st.Mark, st.MarkAheadMs, stats.Mark, stats.MarkAhead)
	}
	l := st.Lease
	if l == nil || l.Provider != "redis" || l.State != "held" || l.RenewalInMs == nil || *l.RenewalInMs != 2500 ||
		l.DeadlineInMs == nil || *l.DeadlineInMs != 9000 || l.QuarantineMs != 1500 || l.Fences != 2 || l.Error != "" {
		t.Errorf("lease %+v", l)
	}
	if st.Segment != nil {
		t.Errorf("segment %+v without a store", st.Segment)
	}

	// Fenced: the lease says why, and so does readiness.
	lease = rest.LeaseStatus{Provider: "redis", State: "fenced", HasDeadline: true, UntilDeadline: -time.Second, Err: errLease.Error()}
	gen.Control().Fence(errLease)
	decode(t, doHandler(s, authed(req(http.MethodGet, "/v1/status", "", ""))).Body, &st)
	if !st.Fenced || st.Ready == "ok" || st.Lease.State != "fenced" || st.Lease.Error != errLease.Error() || *st.Lease.DeadlineInMs != -1000 {
		t.Errorf("fenced: %+v lease %+v", st, st.Lease)
	}
}

// TestStatusWithoutLeaseOrGuard: a static lease has no deadline, an
// embedded server no lease, a generator without a guard no mark.
func TestStatusWithoutLeaseOrGuard(t *testing.T) {
	gen, _ := vestaGen(t)
	var st statusResp
	decode(t, get(t, newServer(t, gen, rest.Config{}).Handler(), "/v1/status").Body, &st)
	if st.Lease != nil || st.Mark != nil || st.MarkAheadMs != 0 {
		t.Errorf("no lease, no guard: lease %+v mark %v ahead %v", st.Lease, st.Mark, st.MarkAheadMs)
	}
	static := newServer(t, gen, rest.Config{Lease: func() rest.LeaseStatus { return rest.LeaseStatus{Provider: "static", State: "none"} }})
	decode(t, get(t, static.Handler(), "/v1/status").Body, &st)
	if st.Lease == nil || st.Lease.Provider != "static" || st.Lease.RenewalInMs != nil || st.Lease.DeadlineInMs != nil {
		t.Errorf("static lease %+v", st.Lease)
	}
}

// TestStatusFields: the bit fields given for each layout and type are what
// Explain decodes: every bit of an ID sits in exactly one field, and
// reading the fields off an ID by shift and width gives Explain's values.
func TestStatusFields(t *testing.T) {
	for _, cfg := range []core.Config{{Layout: core.Sorted}, {Layout: core.Vesta}, {Layout: core.Leaf, Type: core.MinGranularity}} {
		layout := cfg.Layout
		t.Run(layout.String(), func(t *testing.T) {
			cfg.Machine = 5
			gen, _ := newGen(t, cfg)
			var st statusResp
			decode(t, get(t, newServer(t, gen, rest.Config{}).Handler(), "/v1/status").Body, &st)
			for typ, fields := range st.Fields {
				covered := uint64(0)
				for _, f := range fields {
					mask := (uint64(1)<<f.Bits - 1) << f.Shift
					if covered&mask != 0 || f.Name == "unused" {
						t.Fatalf("type %d: field %+v overlaps or is unused", typ, f)
					}
					covered |= mask
				}
				if covered != ^uint64(0) {
					t.Fatalf("type %d: fields cover %#x, not all 64 bits", typ, covered)
				}
				for _, id := range []uint64{0x0123456789abcdef, 0xfedcba9876543210, 1<<63 | 1<<62 | 12345} {
					id = id&^(1<<62) | uint64(typ)<<62
					e := gen.Codec().Explain(core.ID(id))
					want := map[string]uint64{"version": uint64(e.Version), "type": uint64(e.Type), "method": uint64(e.Method),
						"time": e.Time, "machine": uint64(e.Machine), "seq": e.Seq, "sign": uint64(e.Version)}
					for _, f := range fields {
						if got := id >> f.Shift & (1<<f.Bits - 1); got != want[f.Name] {
							t.Errorf("type %d, id %d: %s = %d by the fields, Explain says %d", typ, id, f.Name, got, want[f.Name])
						}
					}
				}
			}
		})
	}
}

// TestStatusSegment: with a segment store, its state and tags.
func TestStatusSegment(t *testing.T) {
	s, _, _ := seqServer(t, "orders")
	if r := get(t, s.Handler(), "/v1/seq/orders?count=3"); r.Status != http.StatusOK {
		t.Fatalf("seq = %d %s", r.Status, r.Body)
	}
	var st statusResp
	decode(t, get(t, s.Handler(), "/v1/status").Body, &st)
	if st.Segment == nil || st.Segment.Status != "ok" || fmt.Sprint(st.Segment.Tags) != "[{orders 3}]" {
		t.Errorf("segment %+v", st.Segment)
	}
}

// authed adds the test token to r.
func authed(r *http.Request) *http.Request {
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// TestStatusAfterBurst: right after 130,000 IDs, /v1/status shows them at
// once, by method and in its history (the partial sample up to the
// request included), with the build, the listeners, the answers, the
// latency and an example ID of the server's own layout for now.
func TestStatusAfterBurst(t *testing.T) {
	gen, _ := vestaGen(t)
	reg := prometheus.NewRegistry()
	s := newServer(t, gen, rest.Config{Registerer: reg, Listeners: []rest.Listener{
		{Name: "rpc", Addr: "127.0.0.1:7070"}, {Name: "http", Addr: "127.0.0.1:7080"}}})
	h := s.Handler()
	for range 13 {
		if r := get(t, h, "/v1/ids?count=10000"); r.Status != http.StatusOK {
			t.Fatalf("/v1/ids: %d %s", r.Status, r.Body)
		}
	}
	if r := get(t, h, "/v1/ids/x"); r.Status != http.StatusBadRequest {
		t.Fatalf("/v1/ids/x: %d", r.Status)
	}
	var st struct {
		Build struct {
			Version   string `json:"version"`
			GoVersion string `json:"go_version"`
		} `json:"build"`
		Started   time.Time `json:"started"`
		UptimeS   float64   `json:"uptime_s"`
		SampleID  string    `json:"sample_id"`
		Listeners []struct {
			Name, Addr string
			Open       *int64
		} `json:"listeners"`
		Answers struct {
			HTTP4xx uint64 `json:"http_4xx"`
			HTTP5xx uint64 `json:"http_5xx"`
		} `json:"answers"`
		IDsByMethod map[string]uint64 `json:"ids_by_method"`
		Latency     struct {
			HTTP struct {
				Count uint64  `json:"count"`
				P50   float64 `json:"p50_ms"`
				P99   float64 `json:"p99_ms"`
			} `json:"http"`
		} `json:"latency"`
		History struct {
			IDs         []uint64            `json:"ids"`
			IDsByMethod map[string][]uint64 `json:"ids_by_method"`
			HTTP4xx     []uint64            `json:"http_4xx"`
			Partial     bool                `json:"partial"`
		} `json:"history"`
	}
	decode(t, get(t, h, "/v1/status?history=900").Body, &st)
	if want := buildinfo.Read(); st.Build.Version != want.Version || st.Build.GoVersion != want.GoVersion {
		t.Errorf("build %+v, want %+v", st.Build, want)
	}
	if time.Since(st.Started) > time.Minute || st.UptimeS < 0 || st.UptimeS > 60 {
		t.Errorf("started %s, up %v s", st.Started, st.UptimeS)
	}
	if st.IDsByMethod["rest"] != 130000 {
		t.Errorf("ids_by_method %v, want rest 130000", st.IDsByMethod)
	}
	sum := func(xs []uint64) (n uint64) {
		for _, x := range xs {
			n += x
		}
		return n
	}
	if n := sum(st.History.IDs); n != 130000 || !st.History.Partial || sum(st.History.IDsByMethod["rest"]) != 130000 {
		t.Errorf("the history holds %d IDs (%d rest, partial %v), want the 130000 issued",
			n, sum(st.History.IDsByMethod["rest"]), st.History.Partial)
	}
	if st.Answers.HTTP4xx != 1 || st.Answers.HTTP5xx != 0 || sum(st.History.HTTP4xx) != 1 {
		t.Errorf("answers %+v, history 4xx %v; want the one 400", st.Answers, st.History.HTTP4xx)
	}
	if l := st.Latency.HTTP; l.Count < 14 || l.P50 <= 0 || l.P99 < l.P50 {
		t.Errorf("latency %+v, want the 14 requests", l)
	}
	if len(st.Listeners) != 2 || st.Listeners[1].Name != "http" || st.Listeners[1].Open == nil || st.Listeners[0].Open != nil {
		t.Errorf("listeners %+v", st.Listeners)
	}
	n, err := strconv.ParseUint(st.SampleID, 10, 64)
	if err != nil {
		t.Fatalf("sample_id %q: %v", st.SampleID, err)
	}
	if e := gen.Codec().Explain(core.ID(n)); e.Machine != 1022 || e.Method != core.REST || time.Since(e.Instant).Abs() > 5*time.Second {
		t.Errorf("sample_id %s explains to %+v, want machine 1022, rest, now", st.SampleID, e)
	}

	wantJSONError(t, get(t, h, "/v1/status?history=901"), http.StatusBadRequest, "invalid_argument", "history")
	wantJSONError(t, get(t, h, "/v1/status?history=x"), http.StatusBadRequest, "invalid_argument", "history")
}

// TestPageSelfContained: the page loads nothing from elsewhere (no URL
// of another host: no CDN, no font) and never parses a string as HTML:
// the fleet's hosts and versions come from a store any member writes.
func TestPageSelfContained(t *testing.T) {
	gen, _ := vestaGen(t)
	r := get(t, newServer(t, gen, rest.Config{}).Handler(), "/")
	if r.Status != http.StatusOK {
		t.Fatalf("GET / = %d", r.Status)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "http://", "https://", "@import", "url("} {
		if strings.Contains(r.Body, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
}
