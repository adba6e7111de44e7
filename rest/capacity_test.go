package rest_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/capacity"
	"github.com/vesta-go/vesta/rest"
)

// TestCapacity: GET /v1/capacity answers Config.Capacity's report, within
// its bound on the store read; without one, what the generator alone
// tells (the time field, the sequence's counters).
func TestCapacity(t *testing.T) {
	gen, _ := newGen(t, core.Config{Type: core.MinGranularity})
	var r capacity.Report
	bare := newServer(t, gen, rest.Config{})
	resp := get(t, bare.Handler(), "/v1/capacity")
	wantAnswer(t, resp, http.StatusOK, "application/json")
	decode(t, resp.Body, &r)
	if r.Time.Layout != "sorted" || r.Time.Type != "min-granularity" || r.Time.Years < 30 || r.Sequence.Share != -1 || r.Sequence.PerUnit != 1024 || r.Segments != nil {
		t.Fatalf("without Config.Capacity: %+v", r)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}

	var bounded bool
	s := newServer(t, gen, rest.Config{Capacity: func(ctx context.Context) capacity.Report {
		_, bounded = ctx.Deadline()
		return capacity.Report{Status: capacity.Critical, Machine: capacity.Machine{Provider: "redis", Pools: []capacity.Pool{{Range: "server", IDs: "924-1023", Held: 100, Total: 100}}}}
	}})
	decode(t, get(t, s.Handler(), "/v1/capacity").Body, &r)
	if !bounded || r.Status != capacity.Critical || len(r.Machine.Pools) != 1 || r.Machine.Pools[0].Held != 100 {
		t.Fatalf("with Config.Capacity: %+v (read bounded: %t)", r, bounded)
	}
}
