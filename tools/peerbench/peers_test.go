package peers_test

import (
	"context"
	"flag"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bwmarrin/snowflake"
	"github.com/sony/sonyflake/v2"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit/embedtest"
	"github.com/vesta-go/vesta/internal/testkit/floortest"
)

var sustain = flag.Duration("sustain", 3*time.Second, "how long BenchmarkSustained measures each generator, in whole seconds")

// next issues one ID. Every generator is called through one such closure,
// so each pays the same indirect call.
type next func() (uint64, error)

// peer is one generator under test.
type peer struct {
	name string
	// wide returns the generator with widths (or borrowing) chosen so that
	// its ceiling is never reached: its CPU cost per ID.
	wide func(tb testing.TB) next
	// standard returns the generator in its default configuration, its
	// ceiling in IDs/s per node, and warm, which returns once the
	// generator issues at its steady rate.
	standard func(tb testing.TB) (n next, ceiling float64, warm func())
}

var peers = []peer{
	{"vesta", vestaWide, vestaStandard},
	{"bwmarrin", bwmarrinWide, bwmarrinStandard},
	{"sonyflake", sonyflakeWide, sonyflakeStandard},
}

// vestaWide: the embedded issuer with a 24h MaxBorrow (as core's own
// benchmarks), so no caller ever waits for the clock, and without a time
// guard, whose durable reservations would otherwise pace a generator that
// runs hours ahead of the clock.
func vestaWide(tb testing.TB) next {
	cfg := embed.DefaultConfig()
	cfg.MaxBorrow, cfg.DataDir = 24*time.Hour, ""
	cfg.Machine.Static = new(core.MachineID(0)) // an explicit choice: there is no default
	is := embedtest.Open(tb, cfg)
	ctx := context.Background()
	return func() (uint64, error) {
		id, err := is.NextID(ctx)
		return uint64(id), err
	}
}

// vestaStandard: the embedded issuer as DefaultConfig makes it (max-peak,
// 1s MaxBorrow, a file time guard), warm once its borrowing credit is spent.
func vestaStandard(tb testing.TB) (next, float64, func()) {
	cfg := embed.DefaultConfig()
	cfg.DataDir = tb.TempDir()
	cfg.Machine.Static = new(core.MachineID(0)) // an explicit choice: there is no default
	is := embedtest.Open(tb, cfg)
	ctx := context.Background()
	warm := func() {
		for is.Generator().Stats().Ahead < cfg.MaxBorrow {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return func() (uint64, error) {
		id, err := is.NextID(ctx)
		return uint64(id), err
	}, 1 << 20, warm
}

// newBwmarrin makes a node with the given widths; bwmarrin reads them from
// package variables when the node is made, so they are restored at once.
func newBwmarrin(tb testing.TB, nodeBits, stepBits uint8) *snowflake.Node {
	tb.Helper()
	snowflake.NodeBits, snowflake.StepBits = nodeBits, stepBits
	n, err := snowflake.NewNode(1)
	snowflake.NodeBits, snowflake.StepBits = 10, 12
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// bwmarrinWide: 20 step bits (2^20 IDs per ms) instead of 12, so Generate
// never spins waiting for the next millisecond.
func bwmarrinWide(tb testing.TB) next {
	n := newBwmarrin(tb, 2, 20)
	return func() (uint64, error) { return uint64(n.Generate()), nil }
}

// bwmarrinStandard: 10 node bits, 12 step bits: 4096 IDs per ms. Past them,
// Generate spins (holding its mutex) until the next millisecond.
func bwmarrinStandard(tb testing.TB) (next, float64, func()) {
	n := newBwmarrin(tb, 10, 12)
	return func() (uint64, error) { return uint64(n.Generate()), nil }, 4096 * 1000, settle
}

func newSonyflake(tb testing.TB, st sonyflake.Settings) *sonyflake.Sonyflake {
	tb.Helper()
	// The default machine ID is the lower 16 bits of a private IPv4
	// address, which a CI container may lack.
	st.MachineID = func() (int, error) { return 1, nil }
	sf, err := sonyflake.New(st)
	if err != nil {
		tb.Fatal(err)
	}
	return sf
}

// sonyflakeWide: 21 sequence bits per 1ms unit instead of 8 bits per 10ms,
// so NextID never sleeps. Only 32 time bits remain (49 days of
// milliseconds), hence a start time an hour ago.
func sonyflakeWide(tb testing.TB) next {
	sf := newSonyflake(tb, sonyflake.Settings{
		BitsSequence: 21, BitsMachineID: 10, TimeUnit: time.Millisecond,
		StartTime: time.Now().Add(-time.Hour),
	})
	return func() (uint64, error) {
		id, err := sf.NextID()
		return uint64(id), err
	}
}

// sonyflakeStandard: the defaults, 8 sequence bits per 10ms unit: 25,600
// IDs/s. Past them, NextID sleeps (holding its mutex) until the next unit.
func sonyflakeStandard(tb testing.TB) (next, float64, func()) {
	sf := newSonyflake(tb, sonyflake.Settings{})
	return func() (uint64, error) {
		id, err := sf.NextID()
		return uint64(id), err
	}, 256 * 100, settle
}

// settle lets a generator without borrowing reach its steady state.
func settle() { time.Sleep(200 * time.Millisecond) }

var sink uint64

// BenchmarkCost is the CPU cost per ID with no ceiling in the way: ns/op
// is the time per ID of one caller (serial) or per ID over all callers
// (parallel: GOMAXPROCS goroutines).
func BenchmarkCost(b *testing.B) {
	for _, p := range peers {
		b.Run("serial/"+p.name, func(b *testing.B) {
			n := p.wide(b)
			for b.Loop() {
				id, err := n()
				if err != nil {
					b.Fatal(err)
				}
				sink = id
			}
		})
	}
	for _, p := range peers {
		b.Run("parallel/"+p.name, func(b *testing.B) {
			n := p.wide(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var local uint64
				for pb.Next() {
					id, err := n()
					if err != nil {
						b.Error(err)
						return
					}
					local = id
				}
				atomic.StoreUint64(&sink, local)
			})
		})
	}
}

// sustainWorkers call each generator at once, more than the 2 cores of the
// machine the figures come from, so that a sleeping caller never leaves the
// generator idle.
const sustainWorkers = 4

// counter is one worker's count, alone on its cache line.
type counter struct {
	n atomic.Uint64
	_ [56]byte
}

// BenchmarkSustained runs each generator in its default configuration flat
// out for -sustain (3s, whole seconds from mid-second) after warming up, once whatever b.N, and reports
// its rate (ids/s), the rate as a percentage of its own ceiling
// (%ceiling), and the CPU the process used meanwhile in cores (cpu-cores).
func BenchmarkSustained(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			n, ceiling, warm := p.standard(b)
			var (
				stop   atomic.Bool
				counts [sustainWorkers]counter
				wg     sync.WaitGroup
			)
			for i := range counts {
				wg.Go(func() {
					for !stop.Load() {
						if _, err := n(); err != nil {
							b.Error(err)
							return
						}
						counts[i].n.Add(1)
					}
				})
			}
			total := func() (sum uint64) {
				for i := range counts {
					sum += counts[i].n.Load()
				}
				return sum
			}
			warm()
			// vesta's max-peak issues each second's 2^20 IDs in a burst
			// as the second begins and then waits: a window of whole
			// seconds from mid-second to mid-second counts every burst
			// once, where an unaligned one would count one too many or
			// too few (±1/k of the rate for k seconds).
			time.Sleep(untilMidSecond(time.Now()))
			n0, t0, cpu0 := total(), time.Now(), cpuTime(b)
			time.Sleep(max(sustain.Round(time.Second), time.Second))
			n1, t1, cpu1 := total(), time.Now(), cpuTime(b)
			stop.Store(true)
			wg.Wait()
			wall := t1.Sub(t0).Seconds()
			rate := float64(n1-n0) / wall
			b.ReportMetric(rate, "ids/s")
			b.ReportMetric(100*rate/ceiling, "%ceiling")
			b.ReportMetric((cpu1-cpu0).Seconds()/wall, "cpu-cores")
			b.ReportMetric(0, "ns/op") // the run's length is fixed: ns/op says nothing
		})
	}
}

// untilMidSecond is how long from t until the middle of a wall-clock
// second, where unit boundaries of seconds and milliseconds lie (the
// generators' clocks start from the wall clock).
func untilMidSecond(t time.Time) time.Duration {
	d := time.Duration(t.Nanosecond())
	if d <= time.Second/2 {
		return time.Second/2 - d
	}
	return 3*time.Second/2 - d
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// batch is the count of BenchmarkBatch.
const batch = 1000

var sinkIDs []core.ID

// BenchmarkBatch is the cost per ID of a batch of 1000 (ns/id; ns/op is
// per batch), each beside its floor: vesta's NextIDs(1000), which returns
// a new slice each call, beside a loop appending 1000 uint64 to a new
// slice (fill-new: the floor of any call that returns a new slice), and
// vesta's AppendIDs(1000) into a slice it reuses beside the same loop
// into a reused slice (fill).
func BenchmarkBatch(b *testing.B) {
	issuer := func(b *testing.B) *embed.Issuer {
		cfg := embed.DefaultConfig()
		cfg.MaxBorrow, cfg.DataDir = 24*time.Hour, ""
		cfg.Machine.Static = new(core.MachineID(0))
		return embedtest.Open(b, cfg)
	}
	b.Run("vesta", func(b *testing.B) {
		is := issuer(b)
		ctx := context.Background()
		for b.Loop() {
			ids, err := is.NextIDs(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			sinkIDs = ids
		}
		floortest.PerID(b, batch)
	})
	b.Run("fill-new", func(b *testing.B) { floortest.Fill(b, batch, true) })
	b.Run("vesta-append", func(b *testing.B) {
		gen := issuer(b).Generator()
		ctx := context.Background()
		buf := make([]core.ID, 0, batch)
		for b.Loop() {
			var err error
			if buf, err = gen.AppendIDs(ctx, core.Embedded, buf[:0], batch); err != nil {
				b.Fatal(err)
			}
		}
		sinkIDs = buf
		floortest.PerID(b, batch)
	})
	b.Run("fill", func(b *testing.B) { floortest.Fill(b, batch, false) })
}
