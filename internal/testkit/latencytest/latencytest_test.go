package latencytest_test

import (
	"sync/atomic"
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

// TestRun: b.N calls in all, spread over every caller, and the metrics
// named as BENCHMARKS.md reads them.
func TestRun(t *testing.T) {
	var calls [3]atomic.Int64
	var n int
	r := testing.Benchmark(func(b *testing.B) {
		for i := range calls {
			calls[i].Store(0)
		}
		n = b.N
		latencytest.Run(b, len(calls), func(caller int) error {
			calls[caller].Add(1)
			return nil
		}, 50, 99.9)
	})
	var sum int64
	for i := range calls {
		if c := calls[i].Load(); n >= len(calls) && c < int64(n/len(calls)) {
			t.Errorf("caller %d made %d calls of %d; want its share", i, c, n)
		}
		sum += calls[i].Load()
	}
	if sum != int64(n) {
		t.Errorf("%d calls; want b.N, %d", sum, n)
	}
	for _, m := range []string{"calls/s", "p50-µs", "p999-µs"} {
		if _, ok := r.Extra[m]; !ok {
			t.Errorf("metric %s not reported: %v", m, r.Extra)
		}
	}
}
