package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/cmd/vesta/assemble"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/prommetrics"
	"github.com/vesta-go/vesta/rest"
)

// benchIOTimeout bounds one round trip of a bench call (a batch of
// pipelined calls, an HTTP request) and a dial: a server that stops
// answering fails calls instead of hanging the run.
const benchIOTimeout = 10 * time.Second

// openBenchTarget prepares o's target; the caller closes it.
func openBenchTarget(ctx context.Context, o benchOptions) (*benchTarget, error) {
	switch o.target {
	case "embedded":
		return openEmbedded(ctx, o)
	case "http-baseline":
		return openBaseline(o)
	case "redis-incr":
		return openRedisINCR(ctx, o)
	case "redis-rueidis":
		return openRueidis(ctx, o)
	case "rpc-seq", "client-seq":
		return openSeqTarget(ctx, o) // bench_seq.go
	}
	// rpc, rest and client: servers at --addr, or our own.
	var srvs []*benchServer
	stopAll := func() error {
		var errs []error
		for _, srv := range srvs {
			errs = append(errs, srv.stop())
		}
		return errors.Join(errs...)
	}
	addrs, where := o.addrs, "--addr"
	if len(addrs) == 0 {
		where = "in-process, no --addr"
		for i := range o.servers {
			srv, err := startBenchServer(ctx, core.MachineID(1023-i))
			if err != nil {
				return nil, errors.Join(err, stopAll())
			}
			srvs = append(srvs, srv)
			addr := srv.central
			if o.target == "rest" {
				addr = srv.rest
			}
			addrs = append(addrs, addr)
		}
	}
	var tg *benchTarget
	var err error
	switch o.target {
	case "rpc":
		tg, err = openRPC(ctx, o, addrs[0])
	case "rest":
		tg, err = openREST(o, addrs[0])
	default:
		tg, err = openClient(ctx, o, addrs)
	}
	if err != nil {
		return nil, errors.Join(err, stopAll())
	}
	tg.server += " (" + where + ")"
	if len(srvs) > 0 {
		tg.ahead = func() time.Duration {
			var d time.Duration
			for _, srv := range srvs {
				d = max(d, srv.ahead())
			}
			return d
		}
		closeTarget := tg.close
		tg.close = func() error { return errors.Join(closeTarget(), stopAll()) }
	}
	return tg, nil
}

// benchServer is the central and REST server bench runs itself when rpc,
// rest or client have no --addr: 'vesta serve' on its defaults but for the
// machine ID, built by the same assemble, on 127.0.0.1:0, with the time
// guard in a temporary directory and without metrics.listen.
type benchServer struct {
	central, rest string
	a             *assemble.Assembled
	dir           string
}

func startBenchServer(ctx context.Context, machine core.MachineID) (_ *benchServer, err error) {
	s := &benchServer{}
	if s.dir, err = os.MkdirTemp("", "vesta-bench-"); err != nil {
		return nil, err
	}
	cfg := conf.DefaultConfig()
	cfg.Machine.ID = new(int(machine)) // an explicit choice: the benchmark's IDs are discarded
	cfg.Central.Listen, cfg.REST.Listen, cfg.Metrics.Listen = "127.0.0.1:0", "127.0.0.1:0", ""
	cfg.TimeGuard.DataDir = s.dir
	if s.a, err = assemble.Assemble(ctx, cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry()); err != nil {
		return nil, errors.Join(err, os.RemoveAll(s.dir))
	}
	s.central, s.rest = s.a.CentralAddr(), s.a.RESTAddr()
	return s, nil
}

// ahead is how far the generator issues ahead of the clock.
func (s *benchServer) ahead() time.Duration { return s.a.Generator().Stats().Ahead }

// stop shuts the servers down, closes the generator and the lease, and
// removes the time guard's directory.
func (s *benchServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return errors.Join(s.a.Stop(ctx), os.RemoveAll(s.dir))
}

func openEmbedded(ctx context.Context, o benchOptions) (*benchTarget, error) {
	dir, err := os.MkdirTemp("", "vesta-bench-")
	if err != nil {
		return nil, err
	}
	cfg := embed.DefaultConfig()
	cfg.DataDir = dir
	cfg.Machine.Static = new(core.MachineID(0)) // an explicit choice: the benchmark's IDs are discarded
	is, err := embed.Open(ctx, cfg)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	tg := &benchTarget{
		server: "embedded issuer in this process (machine 0, max-peak, 1s max_borrow)",
		ahead:  func() time.Duration { return is.Generator().Stats().Ahead },
		close:  func() error { return errors.Join(is.Close(), os.RemoveAll(dir)) },
	}
	if o.batch == 1 {
		tg.call = func(ctx context.Context, _ int) (int, error) {
			_, err := is.NextID(ctx)
			return 1, err
		}
	} else {
		// One buffer per caller, as an application would reuse its own.
		bufs := make([][]core.ID, o.concurrency)
		gen := is.Generator()
		tg.call = func(ctx context.Context, w int) (int, error) {
			var err error
			bufs[w], err = gen.AppendIDs(ctx, core.Embedded, bufs[w][:0], o.batch)
			return len(bufs[w]), err
		}
	}
	return tg, nil
}

func openClient(ctx context.Context, o benchOptions, addrs []string) (*benchTarget, error) {
	cfg := client.DefaultConfig(addrs...)
	cfg.Prefetch = o.prefetch
	if o.timeout > 0 {
		cfg.Timeout = o.timeout
	}
	// A fallback ID would be measured as a central one: a server that is
	// down must show as errors.
	cfg.NoFallback = true
	conns := 2 // client.DefaultConfig's, said in the table
	if o.conns > 0 {
		cfg.ConnsPerServer, conns = o.conns, o.conns
	}
	cl, err := client.New(ctx, cfg)
	if err != nil {
		return nil, usageIf(err)
	}
	reg := prometheus.NewRegistry()
	if err := prommetrics.RegisterClient(reg, cl); err != nil {
		cl.Close()
		return nil, err
	}
	what := "Go client to the central server at " + addrs[0]
	if len(addrs) > 1 {
		what = "Go client to the central servers at " + strings.Join(addrs, ", ")
	}
	if o.prefetch > 0 {
		what += fmt.Sprintf(", prefetching %d", o.prefetch)
	}
	tg := &benchTarget{server: what, conns: conns, close: cl.Close, report: func(w io.Writer) { reportClient(w, reg) }}
	idCalls(tg, cl, o)
	return tg, nil
}

func openRedisINCR(ctx context.Context, o benchOptions) (*benchTarget, error) {
	rdb := redis.NewClient(&redis.Options{
		Addr: o.addr, PoolSize: o.conns, DialTimeout: benchIOTimeout,
		ReadTimeout: benchIOTimeout, WriteTimeout: benchIOTimeout,
		MaxRetries: -1, // a failed INCR is an error, as a failed RPC is
	})
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, errors.Join(fmt.Errorf("redis-incr: %s: %w", o.addr, err), rdb.Close())
	}
	const key = "vesta:bench:incr"
	op := "INCR " + key
	if o.batch > 1 {
		op = fmt.Sprintf("INCRBY %s %d (a range of %d IDs, as Leaf's segments)", key, o.batch, o.batch)
	}
	incr := func(ctx context.Context, c redis.Cmdable) *redis.IntCmd {
		if o.batch == 1 {
			return c.Incr(ctx, key)
		}
		return c.IncrBy(ctx, key, int64(o.batch))
	}
	exec := func(batch []*laneCall) {
		ctx := context.Background()
		if len(batch) == 1 {
			batch[0].ids, batch[0].err = o.batch, incr(ctx, rdb).Err()
			return
		}
		pipe := rdb.Pipeline()
		cmds := make([]*redis.IntCmd, len(batch))
		for i := range batch {
			cmds[i] = incr(ctx, pipe)
		}
		_, err := pipe.Exec(ctx)
		for i, c := range batch {
			c.ids, c.err = o.batch, cmds[i].Err()
			if c.err == nil && err != nil {
				c.err = err
			}
		}
	}
	if o.pool {
		size := rdb.Options().PoolSize // o.conns, or go-redis's default
		return &benchTarget{
			server: fmt.Sprintf("go-redis %s on the Redis at %s, each call on its pool of %d connections (no pipelining)", op, o.addr, size),
			conns:  size,
			call: func(ctx context.Context, _ int) (int, error) {
				return o.batch, incr(ctx, rdb).Err()
			},
			close: rdb.Close,
		}, nil
	}
	lanes := newLanes(o.conns, o.concurrency, func(int) func([]*laneCall) { return exec })
	return &benchTarget{
		server: "go-redis " + op + " on the Redis at " + o.addr,
		conns:  o.conns,
		call:   lanes.call,
		close:  rdb.Close,
	}, nil
}

// laneCall is one caller's call through a lane; the caller reuses it.
type laneCall struct {
	wake chan bool // true: lead the next batch; false: answered
	ids  int
	err  error
}

// lanes spread callers over connections: caller w uses lane w mod len.
// A lane runs one batch at a time on its connection. A caller that finds
// its lane idle runs the batch itself (with one caller per lane that is
// every call, with no goroutine in between); callers that arrive while a
// batch is in flight queue, and when it ends the first of them leads the
// next batch, made of every call queued meanwhile (pipelining). rpc and
// redis-incr both go through lanes, so they pipeline alike.
type lanes struct {
	lanes []lane
	calls []laneCall // one per caller, reused
}

type lane struct {
	exec  func(batch []*laneCall)
	mu    sync.Mutex
	busy  bool
	queue []*laneCall
	spare []*laneCall
}

// newLanes makes n lanes for callers callers; exec(i) runs lane i's
// batches on its connection.
func newLanes(n, callers int, exec func(i int) func(batch []*laneCall)) *lanes {
	ls := &lanes{lanes: make([]lane, n), calls: make([]laneCall, callers)}
	for i := range ls.lanes {
		ls.lanes[i].exec = exec(i)
	}
	for i := range ls.calls {
		ls.calls[i].wake = make(chan bool, 1)
	}
	return ls
}

// call makes caller w's call on its lane and returns the IDs it got.
func (ls *lanes) call(_ context.Context, w int) (int, error) {
	c := &ls.calls[w]
	ls.lanes[w%len(ls.lanes)].do(c)
	return c.ids, c.err
}

func (l *lane) do(c *laneCall) {
	l.mu.Lock()
	l.queue = append(l.queue, c)
	if l.busy {
		l.mu.Unlock()
		if lead := <-c.wake; !lead {
			return
		}
		l.mu.Lock()
	}
	l.busy = true
	batch := l.queue
	l.queue, l.spare = l.spare[:0], nil
	l.mu.Unlock()

	l.exec(batch)
	for _, o := range batch {
		if o != c {
			o.wake <- false
		}
	}
	l.mu.Lock()
	l.spare = batch[:0]
	if len(l.queue) > 0 {
		l.queue[0].wake <- true // it leads the next batch; busy stays set
	} else {
		l.busy = false
	}
	l.mu.Unlock()
}

// openRPC drives the central server at addr through package client, the
// one client of the protocol, with nothing of its own on top: no prefetch,
// no fallback, no retry, --conns connections, each call one Vesta.GenID
// (Vesta.GenIDs {count: B} with --batch; the client splits a B above the
// server's max_batch). The client pipelines the calls of its callers on
// each connection, as redis-incr's lanes do.
func openRPC(ctx context.Context, o benchOptions, addr string) (*benchTarget, error) {
	cl, err := client.New(ctx, rpcClientConfig(o, addr))
	if err != nil {
		return nil, usageIf(err)
	}
	proc := wire.ProcGenID
	if o.batch > 1 {
		proc = fmt.Sprintf("%s {count: %d}", wire.ProcGenIDs, o.batch)
	}
	tg := &benchTarget{
		server: "Go client (no prefetch, fallback or retry) " + proc + " to the central server at " + addr,
		conns:  o.conns,
		close:  cl.Close,
	}
	idCalls(tg, cl, o)
	return tg, nil
}

// idCalls makes tg's call NextID, or NextIDs(B) with --batch (seqCalls is
// its twin for sequences).
func idCalls(tg *benchTarget, cl *client.Client, o benchOptions) {
	if o.batch == 1 {
		tg.call = func(ctx context.Context, _ int) (int, error) {
			_, err := cl.NextID(ctx)
			return 1, err
		}
	} else {
		tg.call = func(ctx context.Context, _ int) (int, error) {
			ids, err := cl.NextIDs(ctx, o.batch)
			return len(ids), err
		}
	}
}

// rpcClientConfig is the client of rpc and rpc-seq: --conns connections to
// addr, a call's failure an error (no fallback, no retry, nothing
// prefetched) and benchIOTimeout per call, as redis-incr's.
func rpcClientConfig(o benchOptions, addr string) client.Config {
	cfg := client.DefaultConfig(addr)
	cfg.ConnsPerServer = o.conns
	cfg.NoFallback, cfg.Retries, cfg.Prefetch, cfg.SeqPrefetch = true, -1, 0, 0
	cfg.Timeout = benchIOTimeout
	return cfg
}

// httpTarget calls one URL with a keep-alive client of conns connections.
func httpTarget(o benchOptions, url string, check func(body []byte) (int, error)) *benchTarget {
	tr := &http.Transport{
		MaxConnsPerHost: o.conns, MaxIdleConnsPerHost: o.conns, MaxIdleConns: o.conns,
		DisableCompression: true, IdleConnTimeout: time.Minute,
	}
	hc := &http.Client{Transport: tr, Timeout: benchIOTimeout}
	reqs := make([]*http.Request, o.concurrency)
	bufs := make([]bytes.Buffer, o.concurrency)
	for w := range reqs {
		reqs[w], _ = http.NewRequest(http.MethodGet, url, nil)
	}
	return &benchTarget{
		conns: o.conns,
		call: func(ctx context.Context, w int) (int, error) {
			// A request is reused once its answer's body is closed.
			res, err := hc.Do(reqs[w].WithContext(ctx))
			if err != nil {
				return 0, err
			}
			b := &bufs[w]
			b.Reset()
			_, err = b.ReadFrom(res.Body)
			res.Body.Close()
			if err != nil {
				return 0, err
			}
			if res.StatusCode != http.StatusOK {
				return 0, fmt.Errorf("GET %s: %s: %.200s", url, res.Status, b.Bytes())
			}
			return check(b.Bytes())
		},
		close: func() error { tr.CloseIdleConnections(); return nil },
	}
}

func openREST(o benchOptions, addr string) (*benchTarget, error) {
	base := "http://" + addr
	if o.batch > 1 {
		var info struct {
			MaxBatch int `json:"max_batch"`
		}
		if err := getJSON(base+"/v1/info", &info); err != nil {
			return nil, fmt.Errorf("rest: %w", err)
		}
		if o.batch > info.MaxBatch {
			return nil, fmt.Errorf("%w: --batch %d: the server at %s allows at most %d (max_batch)", errUsage, o.batch, addr, info.MaxBatch)
		}
	}
	url := base + "/genid"
	check := func(body []byte) (int, error) {
		if _, err := strconv.ParseUint(string(bytes.TrimSpace(body)), 10, 64); err != nil {
			return 0, fmt.Errorf("GET /genid: %q is not an ID", body)
		}
		return 1, nil
	}
	if o.batch > 1 {
		url = base + "/v1/ids?count=" + strconv.Itoa(o.batch)
		// {"ids":["…",…]}: two quotes per ID, two around the key. Counting
		// costs the load far less than decoding.
		check = func(body []byte) (int, error) {
			n := (bytes.Count(body, []byte{'"'}) - 2) / 2
			if n != o.batch {
				return 0, fmt.Errorf("GET /v1/ids: %d IDs for a count of %d", n, o.batch)
			}
			return n, nil
		}
	}
	tg := httpTarget(o, url, check)
	tg.server = "HTTP GET " + url[len(base):] + " to the REST server at " + addr
	return tg, nil
}

func getJSON(url string, v any) error {
	hc := &http.Client{Timeout: benchIOTimeout}
	res, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	return json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(v)
}

// baselineFirst is the trivial handler's first value: 2^58, 18 digits,
// as the default layout's IDs have from 2021 to beyond 2060.
const baselineFirst = 1 << 58

// baselineServer is the trivial handler on the REST server's stack:
// net/http's server with the REST server's timeouts and limits, echo v4
// routing, and on each route an ID is asked on the answer the REST server
// gives there, made of a counter's next values: GET /genid the value in
// decimal text, /v1/id {"id":"…"}, /v1/ids?count=N {"ids":["…",…]} (N
// values, 1-10000). The counter starts at baselineFirst, so that its
// values are as long as real IDs and each answer as large as the REST
// server's: formatting and writing 18 digits instead of a small count's 8
// is a third of /v1/ids?count=100's cost. What it lacks is what the REST
// server adds: its middleware (metrics, access log, request deadline, the
// Host and cross-site checks, no-store), the listener policy and issuing.
func baselineServer() *http.Server {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	var n atomic.Uint64
	n.Store(baselineFirst - 1)
	e.GET("/genid", func(c echo.Context) error {
		var buf [20]byte
		return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, strconv.AppendUint(buf[:0], n.Add(1), 10))
	})
	e.GET("/v1/id", func(c echo.Context) error {
		b := make([]byte, 0, 32)
		b = append(strconv.AppendUint(append(b, `{"id":"`...), n.Add(1), 10), "\"}\n"...)
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
	})
	e.GET("/v1/ids", func(c echo.Context) error {
		count, err := strconv.Atoi(c.QueryParam("count"))
		if err != nil || count < 1 || count > central.DefaultMaxBatch {
			count = 1
		}
		last := n.Add(uint64(count))
		b := make([]byte, 0, 12+count*23)
		b = append(b, `{"ids":[`...)
		for v := last - uint64(count) + 1; v <= last; v++ {
			if v != last-uint64(count)+1 {
				b = append(b, ',')
			}
			b = append(strconv.AppendUint(append(b, '"'), v, 10), '"')
		}
		b = append(b, "]}\n"...)
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
	})
	return &http.Server{
		Handler:           e,
		ReadHeaderTimeout: rest.DefaultRequestTimeout,
		ReadTimeout:       rest.DefaultRequestTimeout,
		WriteTimeout:      2 * rest.DefaultRequestTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
	}
}

// serveBaseline serves the trivial handler at addr until ctx ends.
func serveBaseline(ctx context.Context, addr string, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := baselineServer()
	fmt.Fprintf(stderr, "vesta-bench: the trivial echo handler serves at %s until interrupted\n", ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openBaseline starts the trivial handler in this process.
func openBaseline(o benchOptions) (*benchTarget, error) {
	hs := baselineServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() { hs.Serve(ln) })
	url := "http://" + ln.Addr().String() + "/genid"
	tg := httpTarget(o, url, func(body []byte) (int, error) {
		if _, err := strconv.ParseUint(string(body), 10, 64); err != nil {
			return 0, fmt.Errorf("GET %s: %q", url, body)
		}
		return 1, nil
	})
	tg.server = "trivial echo handler at " + ln.Addr().String() + " (in-process)"
	closeClient := tg.close
	tg.close = func() error {
		err := closeClient()
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		err = errors.Join(err, hs.Shutdown(ctx))
		wg.Wait()
		return err
	}
	return tg, nil
}

// openRueidis is INCR through one rueidis client, as its users call it:
// every caller's Do on the one client, which pipelines the commands of
// concurrent callers on its connection by itself (auto-pipelining, its
// default).
func openRueidis(ctx context.Context, o benchOptions) (*benchTarget, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{o.addr}, DisableCache: true, DisableRetry: true,
		Dialer: net.Dialer{Timeout: benchIOTimeout}, ConnWriteTimeout: benchIOTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("redis-rueidis: %s: %w", o.addr, err)
	}
	const key = "vesta:bench:incr"
	op := "INCR " + key
	cmd := func() rueidis.Completed { return rc.B().Incr().Key(key).Build() }
	if o.batch > 1 {
		op = fmt.Sprintf("INCRBY %s %d", key, o.batch)
		cmd = func() rueidis.Completed { return rc.B().Incrby().Key(key).Increment(int64(o.batch)).Build() }
	}
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
		rc.Close()
		return nil, fmt.Errorf("redis-rueidis: %s: %w", o.addr, err)
	}
	return &benchTarget{
		server: "rueidis " + op + " on the Redis at " + o.addr + " (one client, auto-pipelining)",
		call: func(ctx context.Context, _ int) (int, error) {
			return o.batch, rc.Do(ctx, cmd()).Error()
		},
		close: func() error { rc.Close(); return nil },
	}, nil
}

// reportClient writes the client's calls by result, summed over servers,
// and its waits at the ceiling, from its metrics.
func reportClient(w io.Writer, reg *prometheus.Registry) {
	mfs, err := reg.Gather()
	if err != nil {
		return
	}
	results := map[string]float64{}
	var waits float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "vesta_client_calls_total":
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" {
						results[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			case "vesta_ceiling_waits_total":
				waits += m.GetCounter().GetValue()
			}
		}
	}
	keys := slices.Sorted(maps.Keys(results))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, results[k])
	}
	fmt.Fprintf(w, "vesta-bench: client: calls to servers by result (warm-up included): %s; calls that waited at the ceiling: %.0f\n",
		strings.Join(parts, ", "), waits)
}
