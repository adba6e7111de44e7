package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
)

// BenchmarkNextID: NextID through the client against a real central server
// on loopback, at 1, 16 and 64 calling goroutines, without prefetch (every
// call a round trip, pipelined over the connections) and with a prefetch
// buffer of 10000 IDs (most calls take a buffered ID). Reports calls/s and
// the p50 and p99 latency of a call.
func BenchmarkNextID(b *testing.B) {
	for _, prefetch := range []int{0, 10000} {
		for _, callers := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("prefetch=%d/callers=%d", prefetch, callers), func(b *testing.B) {
				srv := startCentral(b, 1000, central.Config{})
				cfg := client.DefaultConfig(srv.addr)
				cfg.Fallback = false
				cfg.Timeout = 5 * time.Second
				cfg.Prefetch = prefetch
				c := newClient(b, cfg)
				ctx := context.Background()
				if _, err := c.NextID(ctx); err != nil { // dial outside the timing
					b.Fatal(err)
				}
				latencies(b, callers, func() error {
					_, err := c.NextID(ctx)
					return err
				})
			})
		}
	}
}

// latencies runs b.N calls of call spread over callers goroutines and
// reports calls/s, p50 and p99.
func latencies(b *testing.B, callers int, call func() error) {
	const maxLatency = int64(10 * time.Second)
	hists := make([]*hdrhistogram.Histogram, callers)
	for i := range hists {
		hists[i] = hdrhistogram.New(1, maxLatency, 3)
	}
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i, h := range hists {
		n := b.N/callers + min(1, max(0, b.N%callers-i))
		wg.Go(func() {
			for range n {
				t := time.Now()
				if err := call(); err != nil {
					b.Error(err)
					return
				}
				h.RecordValue(int64(time.Since(t)))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for _, h := range hists[1:] {
		hists[0].Merge(h)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(hists[0].ValueAtQuantile(50))/1e3, "p50-µs")
	b.ReportMetric(float64(hists[0].ValueAtQuantile(99))/1e3, "p99-µs")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkNextIDs1000 compares NextIDs(ctx, 1000) through the prefetch
// buffer with its anchor, a plain loop that makes a slice and appends 1000
// uint64 to it (the least any call returning 1000 fresh IDs must do), as
// sub-benchmarks of one benchmark: run it with -count N and take the median
// of the per-round ratios client ÷ append. Both report ns/id. The server
// borrows up to 24h ahead, so the sequence ceiling (1µs per ID) never
// paces the client: what is measured is the client's cost.
func BenchmarkNextIDs1000(b *testing.B) {
	const n = 1000
	b.Run("append", func(b *testing.B) {
		var sink []uint64
		for b.Loop() {
			out := make([]uint64, 0, n)
			for i := range uint64(n) {
				out = append(out, i)
			}
			sink = out
		}
		_ = sink
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/id")
	})
	b.Run("client", func(b *testing.B) {
		srv := startCentralGen(b, core.Config{Machine: 1000, MaxBorrow: 24 * time.Hour}, central.Config{})
		cfg := client.DefaultConfig(srv.addr)
		cfg.Fallback = false
		cfg.Timeout = 5 * time.Second
		cfg.Prefetch = 1 << 20
		c := newClient(b, cfg)
		ctx := context.Background()
		if _, err := c.NextIDs(ctx, n); err != nil { // dial outside the timing
			b.Fatal(err)
		}
		for b.Loop() {
			ids, err := c.NextIDs(ctx, n)
			if err != nil || len(ids) != n {
				b.Fatal(len(ids), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/id")
	})
}
