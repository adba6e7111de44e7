// Package latencytest records call latencies for the benchmarks and load
// tests of the product module and reports exact percentiles from the sorted
// samples. It replaces an HDR histogram there so that the histogram library
// stays out of the product's go.mod (the load generator, tools/vesta-bench, keeps
// it in its own module); a benchmark's samples fit in memory.
package latencytest

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Recorder holds latencies. It is not safe for concurrent use: give each
// goroutine its own and Merge them when it is done. The zero Recorder is
// empty and ready.
type Recorder struct {
	d      []time.Duration
	sorted bool
}

// Record adds one latency.
func (r *Recorder) Record(d time.Duration) {
	r.d = append(r.d, d)
	r.sorted = false
}

// Merge adds o's latencies.
func (r *Recorder) Merge(o *Recorder) {
	r.d = append(r.d, o.d...)
	r.sorted = false
}

// Reset drops every latency.
func (r *Recorder) Reset() { r.d, r.sorted = r.d[:0], true }

// Count is how many latencies were recorded.
func (r *Recorder) Count() int { return len(r.d) }

// Quantile is the latency at percentile q (0-100, nearest rank): 50 is the
// median, 100 the maximum; 0 when empty.
func (r *Recorder) Quantile(q float64) time.Duration {
	if len(r.d) == 0 {
		return 0
	}
	if !r.sorted {
		slices.Sort(r.d)
		r.sorted = true
	}
	i := int(math.Ceil(q/100*float64(len(r.d)))) - 1
	return r.d[min(max(i, 0), len(r.d)-1)]
}

// Max is the largest latency; 0 when empty.
func (r *Recorder) Max() time.Duration { return r.Quantile(100) }

// Run splits b.N calls of call over callers goroutines (call gets its
// caller's index, 0 to callers-1), records each call's latency and
// reports calls/s and, in µs, the latency at each percentile of qs (50,
// 99, 99.9 are p50-µs, p99-µs, p999-µs); ns/op is reported as 0, as
// calls/s says it, and better. A call that fails ends its caller with
// b.Error.
func Run(b *testing.B, callers int, call func(caller int) error, qs ...float64) {
	hists := make([]Recorder, callers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := range hists {
		h := &hists[i]
		n := b.N / callers
		if i < b.N%callers {
			n++
		}
		wg.Go(func() {
			for range n {
				t := time.Now()
				if err := call(i); err != nil {
					b.Error(err)
					return
				}
				h.Record(time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	var all Recorder
	for i := range hists {
		all.Merge(&hists[i])
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	for _, q := range qs {
		name := "p" + strings.ReplaceAll(strconv.FormatFloat(q, 'f', -1, 64), ".", "") + "-µs"
		b.ReportMetric(float64(all.Quantile(q))/1e3, name)
	}
	b.ReportMetric(0, "ns/op")
}
