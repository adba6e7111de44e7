package ceilingmetric_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/ceilingmetric"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
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
