package core

import (
	"context"
	"sync"
	"testing"
	"time"
)

// The generator's CPU cost is measured with a MaxBorrow large enough that
// the sequence ceiling never makes a caller wait (otherwise every benchmark
// would measure 1µs per ID: the ceiling of max-peak). BenchmarkSustained
// measures the ceiling itself.
func benchGen(b *testing.B) *Generator { return benchGenOf(b, DefaultConfig()) }

func benchGenOf(b *testing.B, cfg Config) *Generator {
	b.Helper()
	cfg.MaxBorrow = 24 * time.Hour
	g, err := New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	return g
}

// mutexGen is the same generator behind a plain sync.Mutex: the comparison
// docs/design/generator.md#one-atomic-state-word reports before choosing atomics (an atomic add on NextID's
// fast path, compare-and-swap elsewhere).
type mutexGen struct {
	g     *Generator
	mu    sync.Mutex
	state uint64
}

func (m *mutexGen) next(method Method) (ID, error) {
	g := m.g
	m.mu.Lock()
	now, err := g.nowUnit()
	if err != nil {
		m.mu.Unlock()
		return 0, err
	}
	start := m.state + 1
	if now > start>>g.sb {
		start = now<<g.sb | g.randSeq()
	}
	bound := min(max(now+g.borrow+1, m.state>>g.sb+1)<<g.sb, g.endPk)
	if start >= bound {
		m.mu.Unlock()
		return 0, ErrEndOfTime // never reached with the benchmark's MaxBorrow
	}
	m.state = start
	m.mu.Unlock()
	return ID(g.cur.Load().base[method] | (start>>g.sb)<<g.shifts.time | (start&g.seqMask)<<g.shifts.seq), nil
}

var sink ID

func BenchmarkNextID(b *testing.B) {
	ctx := context.Background()
	b.Run("atomic", func(b *testing.B) {
		g := benchGen(b)
		for b.Loop() {
			id, err := g.NextID(ctx, Embedded)
			if err != nil {
				b.Fatal(err)
			}
			sink = id
		}
	})
	b.Run("mutex", func(b *testing.B) {
		m := &mutexGen{g: benchGen(b)}
		for b.Loop() {
			id, err := m.next(Embedded)
			if err != nil {
				b.Fatal(err)
			}
			sink = id
		}
	})
}

// BenchmarkNextIDLayout compares the layouts' cost per ID side by side:
// one issuing path, different shifts (and leaf's millisecond units).
func BenchmarkNextIDLayout(b *testing.B) {
	ctx := context.Background()
	for _, cfg := range []Config{
		{Layout: Sorted},
		{Layout: Vesta},
		{Layout: Leaf, Type: MinGranularity},
	} {
		b.Run(cfg.Layout.String(), func(b *testing.B) {
			g := benchGenOf(b, cfg)
			for b.Loop() {
				id, err := g.NextID(ctx, Embedded)
				if err != nil {
					b.Fatal(err)
				}
				sink = id
			}
		})
	}
}

func BenchmarkNextIDParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("atomic", func(b *testing.B) {
		g := benchGen(b)
		b.RunParallel(func(pb *testing.PB) {
			var local ID
			for pb.Next() {
				id, err := g.NextID(ctx, Embedded)
				if err != nil {
					b.Error(err)
					return
				}
				local = id
			}
			sink = local
		})
	})
	b.Run("mutex", func(b *testing.B) {
		m := &mutexGen{g: benchGen(b)}
		b.RunParallel(func(pb *testing.PB) {
			var local ID
			for pb.Next() {
				id, err := m.next(Embedded)
				if err != nil {
					b.Error(err)
					return
				}
				local = id
			}
			sink = local
		})
	})
}

// BenchmarkNextIDs1000 reports the cost per ID of batches of 1000.
func BenchmarkNextIDs1000(b *testing.B) {
	g := benchGen(b)
	buf := make([]ID, 0, 1000)
	ctx := context.Background()
	for b.Loop() {
		var err error
		if buf, err = g.AppendIDs(ctx, Embedded, buf[:0], 1000); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/id")
}

// BenchmarkSustained runs flat out for sustainSeconds with the real clock
// and default settings, after the MaxBorrow allowance is used up, and
// reports IDs per second against the sequence ceiling (1,048,576/s for
// max-peak, 1,024,000/s for min-granularity). It runs once whatever b.N is.
func BenchmarkSustained(b *testing.B) {
	const sustainSeconds = 3
	for _, typ := range []Type{MaxPeak, MinGranularity} {
		b.Run(typ.String(), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Type = typ
			g, err := New(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			ctx := context.Background()
			var stop sync.WaitGroup
			done := make(chan struct{})
			run := func() {
				buf := make([]ID, 0, 256)
				for {
					select {
					case <-done:
						return
					default:
					}
					if _, err := g.AppendIDs(ctx, Embedded, buf[:0], 256); err != nil {
						b.Error(err)
						return
					}
				}
			}
			for range 4 {
				stop.Go(run)
			}
			// Warm up: run until the borrowing allowance is spent, so the
			// window measures the clock-bound rate, not the credit.
			for g.Stats().Ahead < cfg.MaxBorrow {
				time.Sleep(10 * time.Millisecond)
			}
			n0, t0 := g.Stats().Issued, time.Now()
			time.Sleep(sustainSeconds * time.Second)
			n1, t1 := g.Stats().Issued, time.Now()
			close(done)
			stop.Wait()
			rate := float64(n1-n0) / t1.Sub(t0).Seconds()
			ceiling := float64(uint64(1)<<widthsOf(Sorted, typ).seqBits) * float64(time.Second/typ.Unit())
			b.ReportMetric(rate, "ids/s")
			b.ReportMetric(100*rate/ceiling, "%ceiling")
		})
	}
}
