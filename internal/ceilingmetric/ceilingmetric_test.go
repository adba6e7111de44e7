package ceilingmetric_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vesta-go/vesta/internal/ceilingmetric"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/latency"
)

// TestSharedRegistry: every method registers into one registry, twice over,
// and counts under its own label.
func TestSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	var ms []*ceilingmetric.Metrics
	for _, method := range []string{ceilingmetric.Central, ceilingmetric.REST, ceilingmetric.Central} {
		m, err := ceilingmetric.New(reg, method)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	ms[0].Waited(3 * time.Millisecond)
	ms[2].Retried()
	ms[1].Retried()
	if v, _ := promtest.Value(t, reg, ceilingmetric.WaitsName, "method", "central"); v != 2 {
		t.Fatalf("central waits %v; want 2", v)
	}
	if v, _ := promtest.Value(t, reg, ceilingmetric.WaitsName, "method", "rest"); v != 1 {
		t.Fatalf("rest waits %v; want 1", v)
	}
	for range 2 {
		if err := ceilingmetric.RegisterWaitingIDs(reg, func() float64 { return 42 }); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok := promtest.Value(t, reg, ceilingmetric.WaitingIDsName); !ok || v != 42 {
		t.Fatalf("waiting IDs %v, %v", v, ok)
	}
	var none *ceilingmetric.Metrics
	none.Waited(time.Second) // a nil *Metrics counts nothing
	none.Retried()
	if m, err := ceilingmetric.New(nil, ceilingmetric.Central); m != nil || err != nil {
		t.Fatalf("New(nil) = %v, %v", m, err)
	}
}

// TestSourcesAddUp: a source added beside a server's Metrics (a client's
// Stats, through package prommetrics) adds to the same series, with the
// buckets Prometheus's own histogram would write.
func TestSourcesAddUp(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := ceilingmetric.New(reg, ceilingmetric.Central)
	if err != nil {
		t.Fatal(err)
	}
	m.Waited(2 * time.Millisecond)
	client := latency.New(latency.CeilingBounds...)
	client.Observe(3 * time.Second)
	client.Observe(time.Minute)
	if err := ceilingmetric.AddSource(reg, ceilingmetric.Central, func() ceilingmetric.Reading {
		s := client.Snapshot()
		return ceilingmetric.Reading{Waits: s.Count(), Wait: s}
	}); err != nil {
		t.Fatal(err)
	}
	want := `# HELP vesta_ceiling_wait_seconds How long calls waited at the ID sequence's ceiling, by publish method.
# TYPE vesta_ceiling_wait_seconds histogram
vesta_ceiling_wait_seconds_bucket{method="central",le="0.0001"} 0
vesta_ceiling_wait_seconds_bucket{method="central",le="0.0005"} 0
vesta_ceiling_wait_seconds_bucket{method="central",le="0.001"} 0
vesta_ceiling_wait_seconds_bucket{method="central",le="0.0025"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="0.005"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="0.01"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="0.025"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="0.05"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="0.1"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="0.25"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="0.5"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="1"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="2.5"} 1
vesta_ceiling_wait_seconds_bucket{method="central",le="5"} 2
vesta_ceiling_wait_seconds_bucket{method="central",le="+Inf"} 3
vesta_ceiling_wait_seconds_sum{method="central"} 63.002
vesta_ceiling_wait_seconds_count{method="central"} 3
# HELP vesta_ceiling_waits_total Calls that waited, or were told to retry, because the ID sequence had run out (its ceiling), by publish method.
# TYPE vesta_ceiling_waits_total counter
vesta_ceiling_waits_total{method="central"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
