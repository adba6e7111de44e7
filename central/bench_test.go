package central_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
	"github.com/vesta-go/vesta/internal/testkit/latencytest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
)

// pipeConn is a minimal pipelining client: callers queue requests, a
// writer sends all that are queued in one write, a reader hands each
// answer to its caller by msgid.
type pipeConn struct {
	nc   net.Conn
	wake chan struct{}

	mu      sync.Mutex
	enc     *wire.Encoder
	out     []byte
	next    uint32
	pending map[uint32]chan reply
	err     error
}

type reply struct {
	ids []uint64
	err error
}

// benchClient is a Go client of addr alone (no fallback) with a sequence
// prefetch of seqPrefetch, closed when b ends.
func benchClient(b *testing.B, addr string, seqPrefetch int) *client.Client {
	cfg := clienttest.Direct(addr)
	cfg.SeqPrefetch = seqPrefetch
	return clienttest.Open(b, cfg)
}

// replyChans returns one reply channel for each of n callers.
func replyChans(n int) []chan reply {
	chans := make([]chan reply, n)
	for i := range chans {
		chans[i] = make(chan reply, 1)
	}
	return chans
}

func newPipeConn(tb testing.TB, addr string) *pipeConn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	c := &pipeConn{nc: nc, wake: make(chan struct{}, 1), enc: wire.NewEncoder(), pending: map[uint32]chan reply{}}
	var wg sync.WaitGroup
	wg.Go(c.writeLoop)
	wg.Go(c.readLoop)
	tb.Cleanup(func() {
		nc.Close()
		close(c.wake)
		wg.Wait()
	})
	return c
}

// call sends a request and waits for its IDs (one for GenID).
func (c *pipeConn) call(proc string, params any, ch chan reply) ([]uint64, error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.next++
	c.pending[c.next] = ch
	c.out, _ = c.enc.AppendRequest(c.out, c.next, proc, params)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	r := <-ch
	return r.ids, r.err
}

func (c *pipeConn) writeLoop() {
	var buf []byte
	for range c.wake {
		// Let the callers that the last answers woke queue their next
		// calls, so that one write carries them all.
		runtime.Gosched()
		c.mu.Lock()
		buf, c.out = c.out, buf[:0]
		c.mu.Unlock()
		if len(buf) > 0 {
			if _, err := c.nc.Write(buf); err != nil {
				return
			}
		}
	}
}

func (c *pipeConn) readLoop() {
	r := wire.NewReader(c.nc, wire.MaxResponseBytes(central.DefaultMaxBatch))
	var err error
	defer func() {
		c.mu.Lock()
		c.err = err
		for _, ch := range c.pending {
			ch <- reply{err: err}
		}
		c.pending = nil
		c.mu.Unlock()
	}()
	for {
		var f []byte
		if f, err = r.Next(); err != nil {
			return
		}
		var resp wire.Response
		if resp, err = wire.DecodeResponse(f); err != nil {
			return
		}
		var rep reply
		if resp.Error != nil {
			rep.err = resp.Error
		} else if resp.Result[0] >= 0x90 && resp.Result[0] <= 0x9f || resp.Result[0] == 0xdc || resp.Result[0] == 0xdd {
			rep.err = wire.DecodeResult(resp.Result, &rep.ids)
		} else if resp.Result[0] >= 0x80 && resp.Result[0] <= 0x8f { // TakeIDs
			var t wire.TakeIDsResult
			rep.err = wire.DecodeResult(resp.Result, &t)
			rep.ids = t.IDs
		} else {
			var id uint64
			rep.err = wire.DecodeResult(resp.Result, &id)
			rep.ids = []uint64{id}
		}
		c.mu.Lock()
		ch := c.pending[resp.MsgID]
		delete(c.pending, resp.MsgID)
		c.mu.Unlock()
		ch <- rep
	}
}

// benchServer serves a fresh max-peak generator (machine 1000) with the
// default configuration.
func benchServer(b *testing.B) string {
	gen := newGen(b, core.DefaultConfig())
	_, addr := serve(b, gen, central.Config{})
	return addr.String()
}

// run splits b.N calls over callers goroutines, records each call's latency
// and reports calls/s and the p50, p99 and p99.9 latencies.
func run(b *testing.B, callers int, call func(caller int) error) {
	latencytest.Run(b, callers, call, 50, 99, 99.9)
}

var benchCallers = []int{1, 16, 64}

// BenchmarkGenID: single-ID calls through a pipelining client over one
// loopback connection, served inline as the server does (BENCHMARKS.md
// keeps what goroutine-per-call serving measured before it was removed);
// Vesta.TakeIDs {count: 1}, a new client's NextID; and through package
// client.
func BenchmarkGenID(b *testing.B) {
	for _, callers := range benchCallers {
		b.Run(fmt.Sprintf("inline/callers=%d", callers), func(b *testing.B) {
			c := newPipeConn(b, benchServer(b))
			chans := replyChans(callers)
			run(b, callers, func(i int) error {
				_, err := c.call(wire.ProcGenID, nil, chans[i])
				return err
			})
		})
	}
	for _, callers := range benchCallers {
		b.Run(fmt.Sprintf("takeids/callers=%d", callers), func(b *testing.B) {
			c := newPipeConn(b, benchServer(b))
			chans := replyChans(callers)
			params := &wire.TakeIDsParams{Count: 1}
			run(b, callers, func(i int) error {
				ids, err := c.call(wire.ProcTakeIDs, params, chans[i])
				if err == nil && len(ids) != 1 {
					err = fmt.Errorf("TakeIDs {1}: %d IDs", len(ids))
				}
				return err
			})
		})
	}
	for _, callers := range benchCallers {
		b.Run(fmt.Sprintf("client/callers=%d", callers), func(b *testing.B) {
			cl := benchClient(b, benchServer(b), 0)
			ctx := context.Background()
			run(b, callers, func(int) error {
				_, err := cl.NextID(ctx)
				return err
			})
		})
	}
}

// BenchmarkGenIDs1000: IDs/s in batches of 1000, against the max-peak
// sequence ceiling of one machine ID, 1,048,576 IDs/s. Past one second of
// borrowing (MaxBorrow), the generator waits for the clock.
func BenchmarkGenIDs1000(b *testing.B) {
	for _, callers := range []int{1, 4} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			c := newPipeConn(b, benchServer(b))
			chans := replyChans(callers)
			t0 := time.Now()
			run(b, callers, func(i int) error {
				ids, err := c.call(wire.ProcGenIDs, &wire.GenIDsParams{Count: 1000}, chans[i])
				if err == nil && len(ids) != 1000 {
					err = fmt.Errorf("%d IDs", len(ids))
				}
				return err
			})
			perSec := float64(b.N*1000) / time.Since(t0).Seconds()
			b.ReportMetric(perSec, "ids/s")
			b.ReportMetric(perSec/(1<<20), "of-ceiling")
		})
	}
}

// BenchmarkRedisINCR is the yardstick (docs/design/central.md#the-yardstick): INCR through go-redis
// at the same concurrency, on a redis-server started for the benchmark.
func BenchmarkRedisINCR(b *testing.B) {
	testkit.SkipShort(b, "redis-server")
	addr := redistest.Start(b).Addr()
	for _, callers := range benchCallers {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
			b.Cleanup(func() { rdb.Close() })
			ctx := context.Background()
			run(b, callers, func(int) error { return rdb.Incr(ctx, "vesta:bench").Err() })
		})
	}
}
