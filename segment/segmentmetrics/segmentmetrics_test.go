package segmentmetrics_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/segmentmetrics"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := segmentmetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := segment.NewMemStore()
	if err := store.Create(ctx, segment.TagInfo{Tag: "orders", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	cfg := segment.DefaultConfig()
	cfg.RefreshTags = -1
	cfg.Preload = []string{"orders"}
	cfg.OnStore = m.OnStore
	is, err := segment.Open(ctx, store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	m.Watch(is)
	if _, err := is.NextN(ctx, "orders", 5); err != nil {
		t.Fatal(err)
	}
	// Unknown tags add no series.
	if _, err := is.Next(ctx, "nope"); err == nil {
		t.Fatal("unknown tag issued")
	}
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"vesta_segment_issued_total", 5},
		{"vesta_segment_step", 100},
	} {
		if v, ok := promtest.Value(t, reg, tc.name, "tag", "orders"); !ok || v != tc.want {
			t.Errorf("%s{tag=orders} = %v, %v; want %v", tc.name, v, ok, tc.want)
		}
	}
	if v, ok := promtest.Value(t, reg, "vesta_segment_ranges_fetched_total", "tag", "orders"); !ok || v < 1 {
		t.Errorf("ranges fetched = %v, %v; want >= 1", v, ok)
	}
	if v, ok := promtest.Value(t, reg, "vesta_segment_buffer_remaining", "tag", "orders"); !ok || v < 95 {
		t.Errorf("buffer remaining = %v, %v; want >= 95", v, ok)
	}
	if _, ok := promtest.Value(t, reg, "vesta_segment_issued_total", "tag", "nope"); ok {
		t.Error("a series for an unknown tag")
	}
	if v, ok := promtest.Value(t, reg, "vesta_segment_store_seconds", "op", "next"); !ok || v < 1 {
		t.Errorf("store_seconds{op=next} count = %v, %v; want >= 1", v, ok)
	}
	if _, err := segmentmetrics.New(reg); err == nil {
		t.Error("a second issuer on one registry was accepted")
	}
}
