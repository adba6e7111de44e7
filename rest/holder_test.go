package rest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/rest"
)

const (
	holderKeys = "conflict,holds,inferred,known,reason,skipped,store"
	holdKeys   = "end,end_known,ended,from,hold,host,layout,lease,mark,note,pid,pod,provider,range,renewed,self,started,ttl_ms,version"
)

// TestExplainWithHolder: ?holder=true adds the holder object beside the
// explanation: the one hold that covers the ID's instant, or a conflict
// of two, counted in vesta_hold_conflicts_total; the store is read once
// for many explains of one machine ID.
func TestExplainWithHolder(t *testing.T) {
	gen, _ := vestaGen(t)
	ids, err := gen.NextIDs(context.Background(), core.REST, 2)
	if err != nil {
		t.Fatal(err)
	}
	instant := gen.Codec().Explain(ids[0]).Instant
	a := api.Hold{Hold: "AAAA", Lease: "redis token AAAA…", Provider: "redis", Range: "server", Host: "node-a", PID: 7,
		Version: "v1", Started: instant.Add(-time.Minute), From: instant.Add(-time.Minute), Renewed: instant, TTL: 15 * time.Second}
	b := a
	b.Hold, b.Host = "BBBB", "node-b"
	var reads, conflict atomic.Int32
	reg := prometheus.NewRegistry()
	s := newServer(t, gen, rest.Config{Registerer: reg, Holders: api.NewHolders(func(ctx context.Context, machine uint16) (api.HoldHistory, error) {
		reads.Add(1)
		if machine != 1022 {
			return api.HoldHistory{}, errors.New("wrong machine")
		}
		return api.HoldHistory{Store: "redis", Match: func(at, now time.Time) api.HolderMatch {
			if !at.Equal(instant) {
				return api.HolderMatch{Reason: "nothing then"}
			}
			if conflict.Load() == 1 {
				return api.HolderMatch{Holds: []api.Hold{a, b}, Conflict: true, Reason: "2 holds of machine 1022 cover it"}
			}
			return api.HolderMatch{Holds: []api.Hold{a}}
		}}, nil
	})})
	c := callers(t, s)[1]
	r := c.do(t, req(http.MethodGet, "/v1/ids/"+ids[0].String()+"?holder=true", "", ""))
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var body map[string]any
	decode(t, r.Body, &body)
	h, ok := body["holder"].(map[string]any)
	if !ok || body["machine"] == nil {
		t.Fatalf("no holder object beside the explanation: %s", r.Body)
	}
	if got := keysOf(h); got != holderKeys {
		t.Fatalf("holder keys %s; want %s", got, holderKeys)
	}
	holds := h["holds"].([]any)
	if h["known"] != true || h["conflict"] != false || len(holds) != 1 {
		t.Fatalf("holder %v; want hold AAAA alone", h)
	}
	if got := keysOf(holds[0].(map[string]any)); got != holdKeys {
		t.Fatalf("hold keys %s; want %s", got, holdKeys)
	}
	if hh := holds[0].(map[string]any); hh["hold"] != "AAAA" || hh["host"] != "node-a" || fmt.Sprint(hh["ttl_ms"]) != "15000" {
		t.Fatalf("hold %v", hh)
	}
	if n := testutil.ToFloat64(mustCounter(t, reg)); n != 0 {
		t.Fatalf("vesta_hold_conflicts_total %v before a conflict", n)
	}
	conflict.Store(1)
	time.Sleep(1100 * time.Millisecond) // past the coalesced read's freshness
	r = c.do(t, req(http.MethodGet, "/v1/ids/"+ids[0].String()+"?holder=true", "", ""))
	decode(t, r.Body, &body)
	h = body["holder"].(map[string]any)
	if h["conflict"] != true || h["known"] != false || len(h["holds"].([]any)) != 2 || !strings.Contains(h["reason"].(string), "2 holds") {
		t.Fatalf("holder %v; want a conflict of two", h)
	}
	if n := testutil.ToFloat64(mustCounter(t, reg)); n != 1 {
		t.Fatalf("vesta_hold_conflicts_total %v; want 1", n)
	}
	before := reads.Load()
	for range 20 {
		if r := c.do(t, req(http.MethodGet, "/v1/ids/"+ids[1].String()+"?holder=true", "", "")); r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	if n := reads.Load() - before; n > 1 {
		t.Fatalf("20 explains of one machine ID read the store %d times; want at most 1", n)
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "vesta_hold_conflicts_total" {
			c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
			c.Add(mf.GetMetric()[0].GetCounter().GetValue())
			return c
		}
	}
	t.Fatal("vesta_hold_conflicts_total is not registered")
	return nil
}

// TestExplainWithHolderBadInput: a holder parameter that is not true or
// false is a 400 naming it; a history the store cannot read is a 503
// naming the machine; a server without a history says so in a 200.
func TestExplainWithHolderBadInput(t *testing.T) {
	gen, _ := vestaGen(t)
	id, err := gen.NextID(context.Background(), core.REST)
	if err != nil {
		t.Fatal(err)
	}
	down := newServer(t, gen, rest.Config{Holders: api.NewHolders(func(context.Context, uint16) (api.HoldHistory, error) {
		return api.HoldHistory{}, errors.New("redis [127.0.0.1:1]: connection refused")
	})})
	none := newServer(t, gen, rest.Config{})
	for _, tc := range []struct {
		name   string
		s      *rest.Server
		id     string // "" is an ID gen issued
		query  string
		status int
		want   string
	}{
		{"holder not a bool", none, "", "?holder=yes", http.StatusBadRequest, "holder: \\\"yes\\\"; want true or false"},
		{"holder twice", none, "", "?holder=true&holder=false", http.StatusBadRequest, "holder: given 2 times"},
		{"no history here", none, "", "?holder=true", http.StatusOK, "keeps no hold history"},
		{"store down", down, "", "?holder=true", http.StatusServiceUnavailable, "the hold history of machine 1022 cannot be read"},
		{"not asked", down, "", "?holder=false", http.StatusOK, `"machine":1022`},
		// 2^62-1: a time field of all ones, decades after now: another
		// layout's or epoch's ID, refused before the store is read.
		{"id after now", down, "4611686018427387903", "?holder=true", http.StatusBadRequest, "after now: not an ID of this server's layout"},
		{"id after now, no history", none, "4611686018427387903", "?holder=true", http.StatusBadRequest, "after now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			path := "/v1/ids/" + id.String()
			if tc.id != "" {
				path = "/v1/ids/" + tc.id
			}
			tc.s.Handler().ServeHTTP(rec, req(http.MethodGet, path+tc.query, "", ""))
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				t.Fatalf("%d %s; want %d and %q", rec.Code, rec.Body, tc.status, tc.want)
			}
		})
	}
}
