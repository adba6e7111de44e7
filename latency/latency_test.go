package latency_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/latency"
)

// TestBuckets: a duration counts in the first bucket whose bound is at
// least it (Prometheus's le), one above every bound in the last.
func TestBuckets(t *testing.T) {
	h := latency.New(time.Millisecond, 10*time.Millisecond)
	for _, d := range []time.Duration{0, time.Millisecond, time.Millisecond + 1, 10 * time.Millisecond, time.Second} {
		h.Observe(d)
	}
	s := h.Snapshot()
	if want := []uint64{2, 2, 1}; !slices.Equal(s.Counts, want) {
		t.Errorf("counts %v; want %v", s.Counts, want)
	}
	if want := 1012*time.Millisecond + 1; s.Sum != want || s.Count() != 5 {
		t.Errorf("sum %s, count %d; want %s, 5", s.Sum, s.Count(), want)
	}
}

// TestConcurrent: every observation of concurrent callers counts.
func TestConcurrent(t *testing.T) {
	h := latency.New(latency.CeilingBounds...)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Observe(time.Duration(g*1000+i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	if n := h.Snapshot().Count(); n != 8000 {
		t.Errorf("count %d; want 8000", n)
	}
}

func TestAdd(t *testing.T) {
	a, b := latency.New(time.Second), latency.New(time.Second)
	a.Observe(time.Millisecond)
	b.Observe(2 * time.Second)
	sum := latency.Snapshot{}.Add(a.Snapshot()).Add(b.Snapshot())
	if !slices.Equal(sum.Counts, []uint64{1, 1}) || sum.Sum != 2001*time.Millisecond {
		t.Errorf("sum %+v", sum)
	}
	defer func() {
		if recover() == nil {
			t.Error("adding snapshots of different bounds did not panic")
		}
	}()
	sum.Add(latency.New(time.Minute).Snapshot())
}

func Example() {
	h := latency.New(time.Millisecond, 10*time.Millisecond, 100*time.Millisecond)
	for _, d := range []time.Duration{300 * time.Microsecond, 4 * time.Millisecond, 7 * time.Millisecond, time.Second} {
		h.Observe(d)
	}
	s := h.Snapshot()
	for i, b := range s.Bounds {
		fmt.Printf("<= %s: %d\n", b, s.Counts[i])
	}
	fmt.Printf("above: %d; %d in all, %s\n", s.Counts[len(s.Bounds)], s.Count(), s.Sum)
	// Output:
	// <= 1ms: 1
	// <= 10ms: 2
	// <= 100ms: 0
	// above: 1; 4 in all, 1.0113s
}
