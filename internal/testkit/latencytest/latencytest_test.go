package latencytest_test

import (
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/latencytest"
)

func TestQuantiles(t *testing.T) {
	var a, b latencytest.Recorder
	if a.Quantile(50) != 0 || a.Max() != 0 {
		t.Fatalf("empty: %v %v; want 0", a.Quantile(50), a.Max())
	}
	for i := 100; i >= 51; i-- { // unsorted on purpose
		a.Record(time.Duration(i))
	}
	for i := 1; i <= 50; i++ {
		b.Record(time.Duration(i))
	}
	a.Merge(&b)
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {1, 1}, {50, 50}, {50.5, 51}, {99, 99}, {99.9, 100}, {100, 100}} {
		if got := a.Quantile(tc.q); got != tc.want {
			t.Errorf("Quantile(%v) = %v; want %v", tc.q, got, tc.want)
		}
	}
	if a.Count() != 100 || a.Max() != 100 {
		t.Errorf("count %d, max %v; want 100, 100", a.Count(), a.Max())
	}
	a.Record(1000)
	if a.Max() != 1000 {
		t.Errorf("max after a record: %v; want 1000", a.Max())
	}
	a.Reset()
	if a.Count() != 0 || a.Max() != 0 {
		t.Errorf("after Reset: %d, %v", a.Count(), a.Max())
	}
}
