package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/nemesis/ledger"
	"github.com/vesta-go/vesta/nemesis/report"
)

const step = 100 * time.Millisecond

// counters are one caller kind's per-step counts.
type counters struct {
	ok, err, values []atomic.Int64
}

// meter counts calls per kind and step.
type meter struct {
	start time.Time
	mu    sync.Mutex
	kinds map[string]*counters
	order []string
	n     int
}

func newMeter(start time.Time, span time.Duration) *meter {
	return &meter{start: start, kinds: map[string]*counters{}, n: int(span/step) + 1}
}

func (m *meter) kind(k string) *counters {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.kinds[k]
	if c == nil {
		c = &counters{ok: make([]atomic.Int64, m.n), err: make([]atomic.Int64, m.n), values: make([]atomic.Int64, m.n)}
		m.kinds[k] = c
		m.order = append(m.order, k)
	}
	return c
}

func (m *meter) add(c *counters, at time.Time, values int, err error) {
	i := int(at.Sub(m.start) / step)
	if i < 0 || i >= m.n {
		return
	}
	if err != nil {
		c.err[i].Add(1)
		return
	}
	c.ok[i].Add(1)
	c.values[i].Add(int64(values))
}

// buckets up to end.
func (m *meter) buckets(end time.Time) []report.Bucket {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := min(int(end.Sub(m.start)/step)+1, m.n)
	var out []report.Bucket
	for _, k := range m.order {
		c := m.kinds[k]
		for i := 0; i < last; i++ {
			out = append(out, report.Bucket{At: m.start.Add(time.Duration(i) * step), Kind: k,
				OK: c.ok[i].Load(), Err: c.err[i].Load(), Values: c.values[i].Load()})
		}
	}
	return out
}

// caller is one workload goroutine's identity and what it saw.
type caller struct {
	name, kind string
	// allowed says which machine IDs its IDs may carry; nil for numbers.
	allowed func() map[int]bool
	mu      sync.Mutex
	seen    map[int]int64 // machine -> IDs
	// via, for a caller of one server (no prefetch), is that server: every
	// ID it gets must fall in a window of that server's holds (holds.go).
	via *server
	bad []string // IDs that do not decode as they must
}

func (c *caller) sawIDs(ids []core.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		v := uint64(id)
		seqBits := uint(20)
		if v>>62&1 == 1 {
			seqBits = 10
		}
		c.seen[int(v>>seqBits&1023)]++
		if v>>63 != 0 && len(c.bad) < 10 {
			c.bad = append(c.bad, fmt.Sprintf("%d: version bit set", v))
		}
	}
}

// workload drives the callers of one run.
type workload struct {
	f      *fleet
	led    *ledger.Ledger
	m      *meter
	rate   int // IDs per second, all callers together
	ctx    context.Context
	wg     sync.WaitGroup
	mu     sync.Mutex
	calls  []*caller
	closer []func()
	// errs are the ledger's write and flush errors and the client
	// process's frame errors: any fails the run, since a value not
	// recorded is a value not checked.
	errs []string
	nerr int
}

// fail records an error that fails the run.
func (w *workload) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.mu.Lock()
	w.nerr++
	if len(w.errs) < 10 {
		w.errs = append(w.errs, msg)
	}
	w.mu.Unlock()
	w.f.t.Logf("error: %s", msg)
}

// failures are the errors recorded, and how many there were.
func (w *workload) failures() ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.errs), w.nerr
}

// batchFor is the batch a caller of rate values/s asks for, at most max:
// small enough that it makes about 40 calls a second, so that every 100 ms
// bucket of the meter holds a few of its calls (a bucket without one
// reads as down).
func batchFor(rate float64, max int) int {
	return min(max, int(rate/40)+1)
}

// pace sleeps so that a worker of rate values/s stays on schedule.
func pace(ctx context.Context, start time.Time, done int64, rate float64) bool {
	due := start.Add(time.Duration(float64(done) / rate * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
		}
	}
	return ctx.Err() == nil
}

func (w *workload) caller(name, kind string, allowed func() map[int]bool) *caller {
	c := &caller{name: name, kind: kind, allowed: allowed, seen: map[int]int64{}}
	w.mu.Lock()
	w.calls = append(w.calls, c)
	w.mu.Unlock()
	return c
}

// loop runs one caller: call returns values recorded in space sp.
func (w *workload) loop(c *caller, rate float64, batch int, call func(ctx context.Context) ([]uint64, ledger.Space, error)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		wr := w.led.Writer(w.led.Source(c.name))
		defer func() {
			if err := wr.Flush(); err != nil {
				w.fail("ledger: flushing %s: %v", c.name, err)
			}
		}()
		ctr := w.m.kind(c.kind)
		start := time.Now()
		var done int64
		for pace(w.ctx, start, done, rate) {
			cctx, cancel := context.WithTimeout(w.ctx, 2*time.Second)
			vs, sp, err := call(cctx)
			cancel()
			at := time.Now()
			if w.ctx.Err() != nil && err != nil {
				return
			}
			w.m.add(ctr, at, len(vs), err)
			if err != nil {
				done += int64(batch) // keep the schedule; back off a little
				time.Sleep(20 * time.Millisecond)
				continue
			}
			done += int64(len(vs))
			if err := wr.Add(sp, at, vs...); err != nil {
				w.fail("ledger: recording %d values of %s: %v", len(vs), c.name, err)
			}
		}
	}()
}

func idsToU(ids []core.ID) []uint64 {
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uint64(id)
	}
	return out
}

func (w *workload) httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: w.f.load.Dial, MaxIdleConnsPerHost: 4}, Timeout: 2 * time.Second}
}

// restGet asks addr for path and decodes {"ids":[...]}.
func restGet(ctx context.Context, hc *http.Client, addr, path string) ([]uint64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	req.Host = addr
	req.Header.Set("Authorization", "Bearer "+restToken)
	status, body, err := nettest.Do(hc, req)
	if err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, fmt.Errorf("%s: %d %s", path, status, body)
	}
	var r struct {
		IDs []string `json:"ids"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	out := make([]uint64, len(r.IDs))
	for i, s := range r.IDs {
		if out[i], err = strconv.ParseUint(s, 10, 64); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// union is the machine IDs a caller over servers may see: those the
// servers held, and extra (its fallback's; negative for none).
func union(servers []*server, extra int) func() map[int]bool {
	return func() map[int]bool {
		m := map[int]bool{}
		if extra >= 0 {
			m[extra] = true
		}
		for _, s := range servers {
			for k := range s.heldMachines() {
				m[k] = true
			}
		}
		return m
	}
}

// start launches every caller. Embedded machine IDs: 10.. static, each
// its own, from the embedded range.
func (w *workload) start() error {
	f := w.f
	t := f.t
	r := float64(w.rate)
	// The Go clients spread over the servers that lease or serve a fixed
	// ID for everyone (not G, whose restored guard is a case of its own,
	// nor the Redis pair).
	var spread []*server
	var centrals []string
	for _, s := range f.servers {
		if s.role == rolePrimary || s.role == roleStandby || s.role == roleFixed || s.role == roleSabotage {
			spread = append(spread, s)
			centrals = append(centrals, s.central)
		}
	}
	newClient := func(cfg client.Config) (*client.Client, error) {
		cfg.DialContext = f.load.Dial
		cfg.Timeout = time.Second
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		defer cancel()
		c, err := client.New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		w.closer = append(w.closer, func() { c.Close() })
		return c, nil
	}
	fallbackID := 10
	// Go clients over every server, prefetching, falling back on an
	// embedded machine ID of their own.
	for i := range 2 {
		cfg := client.DefaultConfig(centrals...)
		cfg.Prefetch = 256
		cfg.FallbackConfig = staticConfig(t.TempDir(), core.MachineID(fallbackID+i), nil) // the fallback is on by default
		c, err := newClient(cfg)
		if err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
		cl := w.caller(fmt.Sprintf("client-%d via all (fallback %d)", i, fallbackID+i), "client", union(spread, fallbackID+i))
		w.loop(cl, 0.3*r/2, 10, func(ctx context.Context) ([]uint64, ledger.Space, error) {
			ids, err := c.NextIDs(ctx, 10)
			cl.sawIDs(ids)
			return idsToU(ids), ledger.IDs, err
		})
	}
	// RPC callers, one per server, GenIDs batches; and REST callers.
	hc := w.httpClient()
	for _, s := range f.servers {
		cfg := client.DefaultConfig(s.central)
		cfg.NoFallback, cfg.Retries = true, -1
		if s.role == roleStandby || s.role == roleMix {
			// Often down: try it again soon, so that its IDs are asked
			// for as soon as it holds one.
			cfg.BreakerTimeout = 200 * time.Millisecond
		}
		c, err := newClient(cfg)
		if err != nil {
			return fmt.Errorf("rpc client of %s: %w", s.name, err)
		}
		cl := w.caller("rpc via "+s.name, "rpc-"+s.name, s.heldMachines)
		cl.via = s
		rpcRate := 0.3 * r / float64(len(f.servers))
		rpcBatch := batchFor(rpcRate, 100)
		w.loop(cl, rpcRate, rpcBatch, func(ctx context.Context) ([]uint64, ledger.Space, error) {
			ids, err := c.NextIDs(ctx, rpcBatch)
			cl.sawIDs(ids)
			return idsToU(ids), ledger.IDs, err
		})
		rest := s.rest
		rc := w.caller("rest via "+s.name, "rest-"+s.name, s.heldMachines)
		rc.via = s
		restRate := 0.2 * r / float64(len(f.servers))
		restBatch := batchFor(restRate, 50)
		w.loop(rc, restRate, restBatch, func(ctx context.Context) ([]uint64, ledger.Space, error) {
			vs, err := restGet(ctx, hc, rest, fmt.Sprintf("/v1/ids?count=%d", restBatch))
			ids := make([]core.ID, len(vs))
			for i, v := range vs {
				ids[i] = core.ID(v)
			}
			rc.sawIDs(ids)
			return vs, ledger.IDs, err
		})
	}
	// Embedded issuers, static IDs of the embedded range, on clocks the
	// faults step.
	for i := range 2 {
		clk := core.NewOffsetClock(core.NewSystemClock())
		f.embClocks = append(f.embClocks, clk)
		is, err := embed.Open(w.ctx, staticConfig(t.TempDir(), core.MachineID(20+i), clk))
		if err != nil {
			return fmt.Errorf("embedded %d: %w", i, err)
		}
		w.closer = append(w.closer, func() { is.Close() })
		id := 20 + i
		cl := w.caller(fmt.Sprintf("embedded-%d (machine %d)", i, id), "embedded", func() map[int]bool { return map[int]bool{id: true} })
		embBatch := batchFor(0.1*r/2, 50)
		w.loop(cl, 0.1*r/2, embBatch, func(ctx context.Context) ([]uint64, ledger.Space, error) {
			ids, err := is.NextIDs(ctx, embBatch)
			cl.sawIDs(ids)
			return idsToU(ids), ledger.IDs, err
		})
	}
	// The client process (a tenth of the IDs), which faults kill.
	cp, err := w.startClientProc(centrals, spread)
	if err != nil {
		return err
	}
	f.clientProc = cp
	// Sequences: per store, a client over its servers (NextSeqs and
	// NextSeq) and REST on each server.
	for _, store := range []string{"mysql", "redis"} {
		tags := f.mysqlTags
		kind := "seq-mariadb"
		if store == "redis" {
			tags, kind = f.redisTags, "seq-redis"
		}
		var addrs, names []string
		var ss []*server
		for _, s := range f.servers {
			if f.store[s] == store {
				addrs, names, ss = append(addrs, s.central), append(names, s.name), append(ss, s)
			}
		}
		if len(addrs) == 0 {
			continue
		}
		cfg := client.DefaultConfig(addrs...)
		cfg.NoFallback = true
		c, err := newClient(cfg)
		if err != nil {
			return fmt.Errorf("seq client (%s): %w", store, err)
		}
		for ti, tag := range tags {
			sp := w.led.Tag(tag)
			cl := w.caller(fmt.Sprintf("seq-client %s via %v", tag, names), kind, nil)
			single := ti == 0
			w.loop(cl, r/60, 10, func(ctx context.Context) ([]uint64, ledger.Space, error) {
				if single {
					v, err := c.NextSeq(ctx, tag)
					if err != nil {
						return nil, sp, err
					}
					return []uint64{uint64(v)}, sp, nil
				}
				vs, err := c.NextSeqs(ctx, tag, 10)
				out := make([]uint64, len(vs))
				for i, v := range vs {
					out[i] = uint64(v)
				}
				return out, sp, err
			})
			for _, s := range ss {
				rest := s.rest
				cl := w.caller(fmt.Sprintf("seq-rest %s via %s", tag, s.name), kind+"-"+s.name, nil)
				count := batchFor(r/200, 10)
				w.loop(cl, r/200, count, func(ctx context.Context) ([]uint64, ledger.Space, error) {
					vs, err := restGet(ctx, hc, rest, fmt.Sprintf("/v1/seq/%s?count=%d", tag, count))
					return vs, sp, err
				})
			}
		}
	}
	return nil
}

func (w *workload) wait() {
	w.wg.Wait()
	for i := len(w.closer) - 1; i >= 0; i-- {
		w.closer[i]()
	}
}
