package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
	"github.com/vesta-go/vesta/internal/testkit/floortest"
	"github.com/vesta-go/vesta/internal/testkit/latencytest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
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
				c := benchClient(b, startCentral(b, 1000, central.Config{}).addr, prefetch)
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

// benchClient is a client of the server at addr without a fallback, with
// a prefetch buffer of prefetch IDs (0: none).
func benchClient(b *testing.B, addr string, prefetch int) *client.Client {
	cfg := clienttest.Direct(addr)
	cfg.Prefetch = prefetch
	return newClient(b, cfg)
}

// latencies runs b.N calls of call spread over callers goroutines and
// reports calls/s, p50 and p99.
func latencies(b *testing.B, callers int, call func() error) {
	latencytest.Run(b, callers, func(int) error { return call() }, 50, 99)
}

// BenchmarkNextIDs1000: NextIDs(ctx, 1000) served from the prefetch buffer
// beside its anchors, as sub-benchmarks of one benchmark (run it with
// -count N and take the median of the per-round ratios):
//
//   - append: a plain loop appending 1000 uint64 to a slice it reuses (the
//     least work per ID there is);
//   - append-new: the same loop into a new slice each time (what any call
//     returning 1000 IDs in a slice of their own must at least do);
//   - client: NextIDs(1000) from a full buffer. The server borrows up to
//     24h ahead, so the sequence ceiling does not pace the refills, and the
//     timer stops while the buffer refills, so what is measured is the
//     client's own work on a call: its lock, its copy, its allocation;
//   - client-append: AppendIDs(ctx, buf[:0], 1000) into a reused slice,
//     likewise.
//
// Each reports ns/id.
func BenchmarkNextIDs1000(b *testing.B) {
	const n = 1000
	b.Run("append", func(b *testing.B) { floortest.Fill(b, n, false) })
	b.Run("append-new", func(b *testing.B) { floortest.Fill(b, n, true) })
	for _, reuse := range []bool{false, true} {
		name := "client"
		if reuse {
			name = "client-append"
		}
		b.Run(name, func(b *testing.B) {
			const prefetch = 1 << 20
			srv := startCentralGen(b, core.Config{Machine: 1000, MaxBorrow: 24 * time.Hour}, central.Config{})
			c := benchClient(b, srv.addr, prefetch)
			ctx := context.Background()
			full := func() {
				b.StopTimer()
				waittest.Until(b, "a full buffer", func() bool { return c.Stats().Buffered == prefetch })
				b.StartTimer()
			}
			full()
			buf := make([]core.ID, 0, n)
			taken := 0
			for b.Loop() {
				var err error
				if reuse {
					buf, err = c.AppendIDs(ctx, buf[:0], n)
				} else {
					buf, err = c.NextIDs(ctx, n)
				}
				if err != nil || len(buf) != n {
					b.Fatal(len(buf), err)
				}
				// The call that took the buffer below half started a
				// refill: wait for it outside the timing.
				if taken += n; prefetch-taken < prefetch/2 {
					full()
					taken = 0
				}
			}
			floortest.PerID(b, n)
		})
	}
}
