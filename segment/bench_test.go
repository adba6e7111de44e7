package segment_test

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/internal/testkit/latencytest"
	"github.com/vesta-go/vesta/internal/testkit/mariadbtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/mysqlstore"
	"github.com/vesta-go/vesta/segment/redisstore"
)

// callers is the number of concurrent callers in every benchmark.
const callers = 64

// parallel makes RunParallel run `callers` goroutines.
func parallel(b *testing.B) {
	b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
}

// BenchmarkStores sets per-call increments in the store side by side with
// segment issuing on the same store, 64 callers, one op = one number:
//
//	mariadb/per-call: BEGIN; UPDATE leaf_alloc SET max_id = max_id + 1; SELECT; COMMIT
//	mariadb/segment:  Sequencer.Next on mysqlstore (Leaf's table)
//	redis/INCR:       INCR through go-redis
//	redis/segment:    Sequencer.Next on redisstore
//	memstore/segment: Sequencer.Next on MemStore, the issuer alone
//
// Calls/s is 1e9 / (ns/op).
func BenchmarkStores(b *testing.B) {
	ctx := context.Background()
	db := mariadbtest.Start(b)
	mustExec(b, db.DSN(""), "CREATE DATABASE leaf")
	my := leafTable(b, db.DSN("leaf"))
	rs := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), PoolSize: callers})
	defer rdb.Close()
	rst := redisstore.New(rdb, redisstore.Config{})
	mem := segment.NewMemStore()
	for _, st := range []segment.Store{my, rst, mem} {
		for _, tag := range []string{"percall", "seg"} {
			if err := st.Create(ctx, segment.TagInfo{Tag: tag, MaxID: 1, Step: 1000}); err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("mariadb/per-call", func(b *testing.B) {
		parallel(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := my.Next(ctx, "percall", 1); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("mariadb/segment", func(b *testing.B) { benchIssuer(b, my) })
	b.Run("redis/INCR", func(b *testing.B) {
		parallel(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := rdb.Incr(ctx, "percall").Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("redis/segment", func(b *testing.B) { benchIssuer(b, rst) })
	b.Run("memstore/segment", func(b *testing.B) { benchIssuer(b, mem) })
}

// benchIssuer runs Sequencer.Next on st by 64 callers, after a warm-up that
// lets the dynamic step grow as it would in service.
func benchIssuer(b *testing.B, st segment.Store) {
	ctx := context.Background()
	is, err := segment.Open(ctx, st, segment.Config{Preload: []string{"seg"}})
	if err != nil {
		b.Fatal(err)
	}
	defer is.Close()
	warm(b, is)
	b.ResetTimer()
	parallel(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := is.Next(ctx, "seg"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	s, _ := is.Stats("seg")
	b.ReportMetric(float64(s.Step), "step")
}

// warm issues numbers until the dynamic step stops growing (it doubles
// while it stays within MaxStep: 1000 → 512,000).
func warm(b *testing.B, is *segment.Sequencer) {
	ctx := context.Background()
	for {
		s, _ := is.Stats("seg")
		if s.Step*2 > segment.DefaultMaxStep {
			return
		}
		if _, err := is.NextN(ctx, "seg", 10_000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLatencyProxy measures the latency of each call, 64 callers,
// with 5 ms added to every round trip to the store by a TCP proxy:
// per-call increments on MariaDB against segment issuing on MariaDB and on
// Redis. Reported: p50, p99, p999 and max in µs.
func BenchmarkLatencyProxy(b *testing.B) {
	ctx := context.Background()
	db := mariadbtest.Start(b)
	mustExec(b, db.DSN(""), "CREATE DATABASE leaf")
	dbProxy := startProxy(b, db.Addr(), 5*time.Millisecond)
	my := leafTable(b, "root@tcp("+dbProxy+")/leaf")
	rs := redistest.Start(b)
	rProxy := startProxy(b, rs.Addr(), 5*time.Millisecond)
	rst, err := redisstore.Open(redisstore.Config{Addrs: []string{rProxy}})
	if err != nil {
		b.Fatal(err)
	}
	defer rst.Close()
	for _, st := range []segment.Store{my, rst} {
		for _, tag := range []string{"percall", "seg"} {
			if err := st.Create(ctx, segment.TagInfo{Tag: tag, MaxID: 1, Step: 1000}); err != nil {
				b.Fatal(err)
			}
		}
		// Paced runs start cold, with a step of 0.1 s of their load, so
		// that fetches (and the dynamic step's doubling) happen while
		// measured.
		if err := st.Create(ctx, segment.TagInfo{Tag: "paced", MaxID: 1, Step: 5000}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("mariadb/per-call", func(b *testing.B) {
		latencies(b, 0, func() error { _, err := my.Next(ctx, "percall", 1); return err })
	})
	for _, st := range []struct {
		name  string
		store segment.Store
	}{{"mariadb", my}, {"redis", rst}} {
		// Closed loop: 64 callers call as fast as they can, tens of millions
		// a second on one tag, far beyond what Leaf's capped step (512,000
		// after doubling from 1000) lets a 5 ms store refill.
		b.Run(st.name+"/segment", func(b *testing.B) { benchLatency(b, st.store, "seg", 0) })
		// Paced: each caller pauses 200 µs between calls (at most 320,000
		// calls/s in all), a busy tag on a busy service.
		b.Run(st.name+"/segment-paced", func(b *testing.B) { benchLatency(b, st.store, "paced", 200*time.Microsecond) })
	}
}

// benchLatency reports the latency of Sequencer.Next of tag on store by 64
// callers, each pausing between calls (none: after warming the dynamic
// step up); also how many calls found both buffers empty and waited for
// the store.
func benchLatency(b *testing.B, store segment.Store, tag string, pause time.Duration) {
	ctx := context.Background()
	is, err := segment.Open(ctx, store, segment.Config{Preload: []string{tag}})
	if err != nil {
		b.Fatal(err)
	}
	defer is.Close()
	if pause == 0 {
		warm(b, is)
	}
	before, _ := is.Stats(tag)
	b.ResetTimer()
	latencies(b, pause, func() error { _, err := is.Next(ctx, tag); return err })
	after, _ := is.Stats(tag)
	b.ReportMetric(float64(after.Waits-before.Waits), "waits")
	b.ReportMetric(float64(after.RangesFetched-before.RangesFetched), "fetches")
}

// latencies runs op by 64 callers, each pausing between calls, and
// reports percentiles of op's latency.
func latencies(b *testing.B, pause time.Duration, op func() error) {
	var mu sync.Mutex
	all := &latencytest.Recorder{}
	parallel(b)
	b.RunParallel(func(pb *testing.PB) {
		h := &latencytest.Recorder{}
		for pb.Next() {
			start := time.Now()
			if err := op(); err != nil {
				b.Error(err)
				return
			}
			h.Record(time.Since(start))
			if pause > 0 {
				time.Sleep(pause)
			}
		}
		mu.Lock()
		all.Merge(h)
		mu.Unlock()
	})
	b.StopTimer()
	for _, q := range []float64{50, 99, 99.9} {
		b.ReportMetric(float64(all.Quantile(q))/1e3, fmt.Sprintf("p%v-µs", q))
	}
	b.ReportMetric(float64(all.Max())/1e3, "max-µs")
}

// startProxy forwards TCP connections to upstream, holding every chunk
// from the client for delay before passing it on (answers pass at once):
// delay is added to each round trip. It stops with the benchmark.
func startProxy(b *testing.B, upstream string, delay time.Duration) string {
	fw := nettest.Forward(b, nettest.Loopback(b), upstream, nil)
	fw.SetDelay(delay, 0)
	return fw.Addr().String()
}

// leafTable opens a mysqlstore on dsn with Leaf's table created, closed
// when b ends.
func leafTable(b *testing.B, dsn string) *mysqlstore.Store {
	my, err := mysqlstore.Open(mysqlstore.Config{DSN: dsn, MaxOpenConns: callers})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { my.Close() })
	if err := my.CreateTable(context.Background()); err != nil {
		b.Fatal(err)
	}
	return my
}

func mustExec(b *testing.B, dsn, q string) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		b.Fatal(err)
	}
}
