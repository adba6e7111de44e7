package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/central"
)

// Bounds of the bench flags: past them a run measures the machine's
// limits, not the issuer's.
const (
	maxBenchConcurrency = 4096
	// maxBenchConns is the client's own bound on ConnsPerServer, which
	// rpc and client use: the anchors get the same budget, no more.
	maxBenchConns    = 64
	maxBenchDuration = 24 * time.Hour
	maxBenchWarmup   = time.Hour
	// defaultBenchConns caps the default connection budget: one connection
	// per caller up to this many.
	defaultBenchConns = 64
	// maxLatency is the largest latency the histograms hold; longer calls
	// are recorded as this.
	maxLatency = time.Minute
	// errorBackoff keeps a failing target (a server down) from turning
	// the run into a busy loop of errors.
	errorBackoff = 10 * time.Millisecond
	// maxCallerRate bounds --rate per caller: a schedule finer than a
	// microsecond measures the timers, not the target.
	maxCallerRate = 1e6
	// maxBenchServers bounds --servers.
	maxBenchServers = 16
)

// benchTargets are the targets of vesta-bench, in the order of its help.
var benchTargets = []string{"embedded", "rpc", "rest", "client", "redis-incr", "redis-rueidis", "http-baseline", "rpc-seq", "client-seq"}

// benchOptions are the validated flags of one vesta-bench run.
type benchOptions struct {
	target      string
	addr        string        // "" = the target's default (see benchLong)
	addrs       []string      // addr split at commas (client: several servers)
	servers     int           // in-process central servers (client, without --addr)
	prefetch    int           // client: Config.Prefetch
	timeout     time.Duration // client: Config.Timeout; 0 = its default
	rate        float64       // offered calls/s in all (open loop); 0 = closed loop
	concurrency int
	conns       int // 0 = the target's default
	duration    time.Duration
	warmup      time.Duration
	batch       int
	align       bool
	json        bool
	cpuProfile  string
	tag         string // rpc-seq, client-seq (bench_seq.go)
	seqPrefetch int    // client-seq
	pool        bool   // redis-incr: go-redis's own pool, no lanes
	listen      string // http-baseline: only serve it here, until interrupted
}

const benchLong = `Drive one target with --concurrency callers for --duration and report calls/s,
IDs/s and the latency of each call (p50, p99, p99.9, max, from an HDR
histogram of every call, never an average). A progress line goes to stderr
once a second; the result is a table on stdout, or with --json one JSON
object: target, concurrency, batch, seconds, calls, ids, calls_per_sec,
ids_per_sec, p50_us, p99_us, p999_us, max_us, errors. Calls that fail are
counted in errors, not in calls; any error makes the exit status 1.

Closed loop (the default): each caller makes its next call as soon as the last
one returned. Open loop (--rate R): the callers offer R calls/s in all, each on
a fixed schedule (caller i every C/R seconds, the callers' schedules staggered),
whatever the target's speed. A call's latency is then counted as a perfect
load generator would see it: from its scheduled start to the end of a call as
long as the measured one, started at that time or, if later, when the caller's
previous call would have ended (so the wait in line behind a slow call counts,
as in wrk2, but a timer of the load generator that wakes late does not); calls
that would have started behind schedule are reported as late. R/C may be at
most 1e6.

Targets, each with --batch B asking for B IDs per call:
  embedded       an in-process embedded issuer (NextID, or NextIDs(B)); time
                 guard in a temporary directory. Takes no --addr.
  rpc            MessagePack-RPC (Vesta.GenID, or Vesta.GenIDs {count: B}) to the
                 central server at --addr through package client with nothing
                 on top: --conns connections, no prefetch, no fallback, no
                 retry, 10s timeout; pipelined (below).
  rest           HTTP GET /genid, or /v1/ids?count=B, to the REST server at --addr.
  client         the Go client (package client) with its defaults (2 pipelined
                 connections, 200ms timeout) but no fallback, to the central
                 servers at --addr (host:port[,host:port...]); --conns sets its
                 connections per server, --prefetch N its Prefetch (IDs kept
                 ready), --timeout D its Timeout. Without --addr, --servers N
                 starts N servers in this process (machines 1023, 1022, ...).
                 After the run, stderr tells the client's calls by result (ok,
                 busy, timeout, ...) and how many calls waited at the ceiling.
  redis-incr     go-redis INCR (INCRBY B with --batch) on the Redis at --addr
                 (required): the anchor of rpc and client. With --pool, each
                 call is its own rdb.Incr on go-redis's connection pool, as
                 go-redis users call it: a free connection per command, no
                 pipelining; --conns is then the pool's size (default:
                 go-redis's own, 10 per CPU).
  redis-rueidis  rueidis INCR (INCRBY B) on the Redis at --addr (required),
                 every caller's Do on one rueidis client with its defaults:
                 concurrent commands auto-pipelined on its connection. The
                 anchor of client's single calls, coalesced as it coalesces
                 them. Takes no --conns.
  http-baseline  trivial echo v4 handlers answering GET /genid, /v1/id and
                 /v1/ids?count=N as the REST server does (decimal text, the
                 same JSON), made of a counter's next values, on the same
                 server stack as the REST server (net/http, echo, the same
                 timeouts), which bench starts on 127.0.0.1:0: the anchor of
                 rest. Takes no --addr and only --batch 1. With --listen A it
                 only serves at A, until interrupted, for a load generator
                 of another process (wrk).
  rpc-seq        MessagePack-RPC Vesta.NextSeq {tag} (Vesta.NextSeqs with --batch) to
                 the central server at --addr (required: a 'vesta serve' with
                 segment.store set; --tag names a tag of its store), through
                 package client as rpc.
  client-seq     the Go client's NextSeq(tag) (NextSeqs(tag, B)) to --addr, with
                 --seq-prefetch N numbers kept ready per tag (0: none).

Without --addr, rpc, rest and client run against a server that bench starts in
this process on 127.0.0.1:0, as 'vesta serve' on its defaults (machine 1023,
sorted, max-peak, 1s max_borrow, time guard in a temporary directory). Load and
server then share the CPUs and the garbage collector: for comparisons with
Redis (its own process) run 'vesta serve' apart and pass --addr.

Connections: --conns N (default: one per caller; at most 64, the client's own
bound) is the budget for rpc, redis-incr, rest and http-baseline alike. For
redis-incr caller i uses connection i mod N; rpc's client spreads its calls
over its N connections. With more callers than connections, calls are
pipelined: those queued on a connection go out together and their answers
are matched to them, for rpc (package client's msgid-matched frames) and
redis-incr (a go-redis pipeline) alike; HTTP/1.1 callers wait for a free
connection instead (Go's client does not pipeline). So no target gets a trick
its anchor does not.

Rates just after start may include up to max_borrow (1s) of IDs borrowed ahead
of the clock, beyond the sequence ceiling (1,048,576 IDs/s for max-peak);
--warmup D runs the load for D before measuring, so that the credit is spent.
A server at that ceiling issues each second's IDs in a burst as the second
begins: --align starts measuring at the middle of a wall-clock second and
takes whole seconds, so that each burst is counted once (the generator's
clock is the wall clock's, read at its start).`

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "vesta-bench TARGET [--addr A] [--concurrency C] [--duration D] [--batch B] [--conns N] [--warmup D] [--align] [--rate R] [--json]",
		Short: "Load-test a target (embedded, rpc, rest, client) or an anchor (redis-incr, http-baseline)",
		Long:  benchLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.target = args[0]
			if err := o.validate(cmd.Flags().Changed("conns"), cmd.Flags().Changed("servers"), cmd.Flags().Changed("prefetch")); err != nil {
				return err
			}
			return runBench(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.addr, "addr", "", "host:port of the server (rpc, client: central; rest: REST; redis-incr: Redis); default: see help")
	fs.IntVarP(&o.concurrency, "concurrency", "c", 16, "callers issuing calls at once")
	fs.IntVar(&o.conns, "conns", 0, "connections (default: one per caller, at most 64; client: its own default, 2)")
	fs.DurationVarP(&o.duration, "duration", "d", 10*time.Second, "how long to measure")
	fs.DurationVar(&o.warmup, "warmup", 0, "how long to run before measuring")
	fs.IntVarP(&o.batch, "batch", "b", 1, "IDs per call (1 = one ID per call)")
	fs.BoolVar(&o.align, "align", false, "measure whole seconds from the middle of a wall-clock second")
	fs.BoolVar(&o.json, "json", false, "print one JSON object instead of a table")
	fs.StringVar(&o.tag, "tag", "bench", "rpc-seq, client-seq: the segment sequence tag")
	fs.IntVar(&o.seqPrefetch, "seq-prefetch", 0, "client-seq: numbers the client keeps ready per tag")
	fs.StringVar(&o.listen, "listen", "", "http-baseline: only serve the trivial handler at this host:port until interrupted")
	fs.BoolVar(&o.pool, "pool", false, "redis-incr: each call its own INCR on go-redis's pool (its default size unless --conns), no pipelining")
	fs.Float64Var(&o.rate, "rate", 0, "open loop: offer this many calls/s in all, on a fixed schedule (0: closed loop)")
	fs.IntVar(&o.servers, "servers", 1, "client without --addr: central servers to start in this process")
	fs.IntVar(&o.prefetch, "prefetch", 0, "client: IDs the client keeps ready (Config.Prefetch; 0: none)")
	fs.DurationVar(&o.timeout, "timeout", 0, "client: the time an attempt on one server may take (Config.Timeout; 0: its default, 200ms)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (load, and the server when in-process) to `FILE`, for go tool pprof")
	return cmd
}

// validate checks every flag and names the one at fault; connsSet,
// serversSet and prefetchSet tell whether --conns, --servers and
// --prefetch were given.
func (o *benchOptions) validate(connsSet, serversSet, prefetchSet bool) error {
	known := false
	for _, t := range benchTargets {
		known = known || o.target == t
	}
	if !known {
		return fmt.Errorf("%w: TARGET %q; want one of %s", errUsage, o.target, strings.Join(benchTargets, ", "))
	}
	if o.concurrency < 1 || o.concurrency > maxBenchConcurrency {
		return fmt.Errorf("%w: --concurrency %d; want 1-%d", errUsage, o.concurrency, maxBenchConcurrency)
	}
	if o.duration <= 0 || o.duration > maxBenchDuration {
		return fmt.Errorf("%w: --duration %v; want more than 0 and at most %v", errUsage, o.duration, maxBenchDuration)
	}
	if o.align && o.duration%time.Second != 0 {
		return fmt.Errorf("%w: --duration %v: with --align, want whole seconds", errUsage, o.duration)
	}
	if o.warmup < 0 || o.warmup > maxBenchWarmup {
		return fmt.Errorf("%w: --warmup %v; want 0 to %v", errUsage, o.warmup, maxBenchWarmup)
	}
	if o.batch < 1 || o.batch > central.DefaultMaxBatch {
		return fmt.Errorf("%w: --batch %d; want 1-%d (max_batch)", errUsage, o.batch, central.DefaultMaxBatch)
	}
	if o.target == "http-baseline" && o.batch != 1 {
		return fmt.Errorf("%w: --batch %d: http-baseline issues no IDs; it takes only --batch 1", errUsage, o.batch)
	}
	maxConns := maxBenchConns
	switch {
	case connsSet && o.target == "embedded":
		return fmt.Errorf("%w: --conns: the embedded target makes no connections", errUsage)
	case connsSet && (o.conns < 1 || o.conns > maxConns):
		return fmt.Errorf("%w: --conns %d; want 1-%d", errUsage, o.conns, maxConns)
	case o.pool && o.target != "redis-incr":
		return fmt.Errorf("%w: --pool: only the redis-incr target has a go-redis pool", errUsage)
	case !connsSet && o.pool:
		o.conns = 0 // go-redis's default pool size
	case connsSet && o.target == "redis-rueidis":
		return fmt.Errorf("%w: --conns: redis-rueidis pipelines every caller on the connections rueidis chooses", errUsage)
	case !connsSet && o.target != "client" && o.target != "client-seq" && o.target != "embedded":
		o.conns = min(o.concurrency, defaultBenchConns)
	}
	switch {
	case o.addr != "" && (o.target == "embedded" || o.target == "http-baseline"):
		return fmt.Errorf("%w: --addr %q: the %s target runs in this process; it takes no address", errUsage, o.addr, o.target)
	case o.addr == "" && (o.target == "redis-incr" || o.target == "redis-rueidis"):
		return fmt.Errorf("%w: --addr: %s needs the host:port of a Redis server", errUsage, o.target)
	case o.listen != "" && o.target != "http-baseline":
		return fmt.Errorf("%w: --listen: only http-baseline serves for another process", errUsage)
	case o.listen != "" && checkAddr(o.listen) != nil:
		return fmt.Errorf("%w: --listen %q: %s", errUsage, o.listen, checkAddr(o.listen))
	case o.addr != "":
		o.addrs = strings.Split(o.addr, ",")
		if len(o.addrs) > 1 && o.target != "client" {
			return fmt.Errorf("%w: --addr %q: only the client target takes several servers", errUsage, o.addr)
		}
		for i, a := range o.addrs {
			if err := checkAddr(a); err != nil {
				return fmt.Errorf("%w: --addr %q: %s", errUsage, o.addr, err)
			}
			if slices.Contains(o.addrs[:i], a) {
				return fmt.Errorf("%w: --addr %q: %s appears twice", errUsage, o.addr, a)
			}
		}
	}
	switch {
	case serversSet && o.target != "client":
		return fmt.Errorf("%w: --servers: only the client target starts several servers", errUsage)
	case serversSet && o.addr != "":
		return fmt.Errorf("%w: --servers: with --addr the servers are the ones given", errUsage)
	case o.servers < 1 || o.servers > maxBenchServers:
		return fmt.Errorf("%w: --servers %d; want 1-%d", errUsage, o.servers, maxBenchServers)
	case prefetchSet && o.target != "client":
		return fmt.Errorf("%w: --prefetch: only the client target prefetches", errUsage)
	case o.prefetch < 0 || o.prefetch > 1<<20:
		return fmt.Errorf("%w: --prefetch %d; want 0-%d", errUsage, o.prefetch, 1<<20)
	case o.timeout != 0 && o.target != "client":
		return fmt.Errorf("%w: --timeout: only the client target has one", errUsage)
	case o.timeout < 0 || o.timeout > time.Minute:
		return fmt.Errorf("%w: --timeout %v; want 0 (the client's default) to 1m", errUsage, o.timeout)
	case math.IsNaN(o.rate) || o.rate < 0 || o.rate/float64(o.concurrency) > maxCallerRate:
		return fmt.Errorf("%w: --rate %v; want 0 (closed loop) or more, at most %g per caller", errUsage, o.rate, maxCallerRate)
	}
	return o.validateSeq()
}

// checkAddr accepts host:port with a port 1-65535.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return errors.New("want host:port")
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("port %q; want 1-65535", port)
	}
	return nil
}

// benchTarget is what a run drives. call makes one call for caller w and
// returns how many IDs it brought.
type benchTarget struct {
	// server says what is measured, for the table and stderr.
	server string
	conns  int // 0: none, or not known (client: its own)
	call   func(ctx context.Context, w int) (int, error)
	// ahead, when the issuing generator is in this process, tells how far
	// it runs ahead of the clock (borrowed credit); nil otherwise.
	ahead func() time.Duration
	close func() error
	// report, if set, writes what the target saw (client: its calls by
	// result) to stderr after the run.
	report func(w io.Writer)
}

// benchResult is the outcome of a run; its JSON form is the --json output.
type benchResult struct {
	Target      string  `json:"target"`
	Concurrency int     `json:"concurrency"`
	Batch       int     `json:"batch"`
	Seconds     float64 `json:"seconds"`
	Calls       uint64  `json:"calls"`
	IDs         uint64  `json:"ids"`
	CallsPerSec float64 `json:"calls_per_sec"`
	IDsPerSec   float64 `json:"ids_per_sec"`
	P50us       float64 `json:"p50_us"`
	P99us       float64 `json:"p99_us"`
	P999us      float64 `json:"p999_us"`
	MaxUs       float64 `json:"max_us"`
	Errors      uint64  `json:"errors"`
	// Open loop only (--rate): the calls/s offered, and how many calls
	// started behind their schedule.
	OfferedPerSec float64 `json:"offered_per_sec,omitempty"`
	Late          uint64  `json:"late,omitempty"`
}

// Phases of a run, as the callers see them.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDone
)

// benchCaller is one caller's tally, written by the caller alone (the
// atomics are read by the progress line), on cache lines of its own.
type benchCaller struct {
	_        [64]byte
	calls    atomic.Uint64
	ids      atomic.Uint64
	errors   atomic.Uint64
	late     uint64
	hist     *hdrhistogram.Histogram
	max      int64
	firstErr error
	_        [64]byte
}

func runBench(ctx context.Context, o benchOptions, stdout, stderr io.Writer) (err error) {
	if o.listen != "" {
		return serveBaseline(ctx, o.listen, stderr)
	}
	tg, err := openBenchTarget(ctx, o)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tg.close()) }()
	fmt.Fprintf(stderr, "vesta-bench: %s: %s; %d callers", o.target, tg.server, o.concurrency)
	if tg.conns > 0 {
		fmt.Fprintf(stderr, " over %d connections", tg.conns)
	}
	fmt.Fprintf(stderr, ", batch %d, %v", o.batch, o.duration)
	if o.rate > 0 {
		fmt.Fprintf(stderr, ", open loop at %.0f calls/s", o.rate)
	}
	if o.warmup > 0 {
		fmt.Fprintf(stderr, " after %v of warm-up", o.warmup)
	}
	fmt.Fprintln(stderr)

	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() { err = errors.Join(err, f.Close()) }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	res, ahead, firstErr := measure(ctx, o, tg, stderr)
	if tg.report != nil {
		tg.report(stderr)
	}
	if o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if o.json {
		b, _ := json.Marshal(res)
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		printBenchTable(stdout, res, tg)
	}
	if ahead[1] > ahead[0] {
		fmt.Fprintf(stderr, "vesta-bench: note: the generator borrowed ahead of the clock while measuring (%v ahead at the start, %v at the end): "+
			"the ID rate includes credit beyond the sequence ceiling; a --warmup that spends it measures the sustained rate\n",
			ahead[0], ahead[1])
	}
	switch {
	case res.Errors > 0:
		return fmt.Errorf("%d of %d calls failed; the first: %w", res.Errors, res.Errors+res.Calls, firstErr)
	case res.Calls == 0 && firstErr != nil:
		return fmt.Errorf("no call completed while measuring; a call failed: %w", firstErr)
	case res.Calls == 0:
		return errors.New("no call completed while measuring; try a longer --duration")
	}
	return nil
}

// measure runs the callers through the warm-up and the measured window
// and merges their tallies. ahead is the generator's lead on the clock at
// the window's start and end, when it is known.
func measure(ctx context.Context, o benchOptions, tg *benchTarget, stderr io.Writer) (res benchResult, ahead [2]time.Duration, firstErr error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var phase atomic.Int32
	callers := make([]benchCaller, o.concurrency)
	var wg sync.WaitGroup
	for w := range callers {
		c := &callers[w]
		// Nanoseconds with two significant digits (1%): 30 KB a caller.
		c.hist = hdrhistogram.New(1, int64(maxLatency), 2)
		// Each caller its own context, as each request of an application
		// has its own: one context shared by every caller would make
		// every call that selects on its Done contend for one lock.
		cctx, ccancel := context.WithCancel(runCtx)
		defer ccancel()
		if o.rate > 0 {
			interval := time.Duration(float64(o.concurrency) / o.rate * float64(time.Second))
			offset := interval * time.Duration(w) / time.Duration(o.concurrency)
			wg.Go(func() { c.openLoop(cctx, tg, w, &phase, interval, offset) })
			continue
		}
		wg.Go(func() { c.loop(cctx, tg, w, &phase) })
	}

	stop := func(t time.Duration) bool { // false when ctx ended first
		timer := time.NewTimer(t)
		defer timer.Stop()
		select {
		case <-timer.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if o.warmup > 0 {
		stop(o.warmup)
	}
	if o.align {
		stop(untilMidSecond(time.Now()))
	}
	if tg.ahead != nil {
		ahead[0] = tg.ahead()
	}
	t0 := time.Now()
	phase.Store(phaseMeasure)
	progress := time.NewTicker(time.Second)
	end := time.NewTimer(o.duration)
loop:
	for {
		select {
		case <-progress.C:
			var calls, errs uint64
			for i := range callers {
				calls += callers[i].calls.Load()
				errs += callers[i].errors.Load()
			}
			el := time.Since(t0)
			fmt.Fprintf(stderr, "vesta-bench: %s: %3.0fs: %.0f calls/s so far (%d calls, %d errors)\n",
				o.target, el.Seconds(), float64(calls)/el.Seconds(), calls, errs)
		case <-end.C:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	phase.Store(phaseDone)
	elapsed := time.Since(t0)
	progress.Stop()
	end.Stop()
	if tg.ahead != nil {
		ahead[1] = tg.ahead()
	}
	cancel()
	wg.Wait()

	all := hdrhistogram.New(1, int64(maxLatency), 2)
	var maxNs int64
	for i := range callers {
		c := &callers[i]
		all.Merge(c.hist)
		maxNs = max(maxNs, c.max)
		res.Calls += c.calls.Load()
		res.IDs += c.ids.Load()
		res.Errors += c.errors.Load()
		res.Late += c.late
		if firstErr == nil {
			firstErr = c.firstErr
		}
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	res.Target, res.Concurrency, res.Batch = o.target, o.concurrency, o.batch
	res.OfferedPerSec = o.rate
	res.Seconds = elapsed.Seconds()
	res.CallsPerSec = float64(res.Calls) / res.Seconds
	res.IDsPerSec = float64(res.IDs) / res.Seconds
	if res.Calls > 0 {
		res.P50us = us(all.ValueAtQuantile(50))
		res.P99us = us(all.ValueAtQuantile(99))
		res.P999us = us(all.ValueAtQuantile(99.9))
		res.MaxUs = us(maxNs)
	}
	return res, ahead, firstErr
}

// loop makes calls until the run is done. Only calls that end while
// measuring count; each is timed on its own.
func (c *benchCaller) loop(ctx context.Context, tg *benchTarget, w int, phase *atomic.Int32) {
	for {
		t0 := time.Now()
		n, err := tg.call(ctx, w)
		d := time.Since(t0)
		if _, done := c.record(phase, n, err, d); done {
			return
		}
		if err != nil {
			select {
			case <-time.After(errorBackoff):
			case <-ctx.Done():
				return
			}
		}
	}
}

// openLoop makes calls on a fixed schedule, every interval from offset
// after its start, until the run is done (see benchLong for how latency
// is counted).
func (c *benchCaller) openLoop(ctx context.Context, tg *benchTarget, w int, phase *atomic.Int32, interval, offset time.Duration) {
	timer := time.NewTimer(offset)
	defer timer.Stop()
	next := time.Now().Add(offset)
	var idealEnd time.Time
	for {
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		t0 := time.Now()
		n, err := tg.call(ctx, w)
		service := time.Since(t0)
		// The call as a perfect load generator would have made it: at its
		// scheduled time, or when its previous call ended if that was
		// later, taking as long as it took.
		start, late := next, idealEnd.After(next)
		if late {
			start = idealEnd
		}
		idealEnd = start.Add(service)
		latency := idealEnd.Sub(next)
		next = next.Add(interval)
		counted, done := c.record(phase, n, err, latency)
		if done {
			return
		}
		if counted && late {
			c.late++
		}
	}
}

// record counts a call that gave n IDs (or err) in latency d while the
// run measures: counted says a successful call was counted, done that the
// run is over. The first error is kept even in warm-up, to say why no call
// completed.
func (c *benchCaller) record(phase *atomic.Int32, n int, err error, d time.Duration) (counted, done bool) {
	if err != nil && c.firstErr == nil {
		c.firstErr = err
	}
	switch phase.Load() {
	case phaseDone:
		return false, true
	case phaseMeasure:
		if err != nil {
			c.errors.Add(1)
			return false, false
		}
		ns := min(int64(d), int64(maxLatency))
		c.hist.RecordValue(ns)
		c.max = max(c.max, ns)
		c.ids.Add(uint64(n))
		c.calls.Add(1)
		return true, false
	}
	return false, false
}

// untilMidSecond is how long from t until the middle of a wall-clock
// second, the farthest from the boundaries of units of a second.
func untilMidSecond(t time.Time) time.Duration {
	d := time.Duration(t.Nanosecond())
	if d <= time.Second/2 {
		return time.Second/2 - d
	}
	return 3*time.Second/2 - d
}

func printBenchTable(w io.Writer, r benchResult, tg *benchTarget) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	conns := "-"
	if tg.conns > 0 {
		conns = strconv.Itoa(tg.conns)
	}
	rows := [][2]string{
		{"target", r.Target},
		{"server", tg.server},
		{"concurrency", strconv.Itoa(r.Concurrency)},
		{"connections", conns},
		{"batch", strconv.Itoa(r.Batch)},
		{"seconds", fmt.Sprintf("%.2f", r.Seconds)},
		{"calls", strconv.FormatUint(r.Calls, 10)},
		{"ids", strconv.FormatUint(r.IDs, 10)},
		{"calls/s", fmt.Sprintf("%.0f", r.CallsPerSec)},
		{"ids/s", fmt.Sprintf("%.0f", r.IDsPerSec)},
		{"p50 µs", fmt.Sprintf("%.1f", r.P50us)},
		{"p99 µs", fmt.Sprintf("%.1f", r.P99us)},
		{"p99.9 µs", fmt.Sprintf("%.1f", r.P999us)},
		{"max µs", fmt.Sprintf("%.1f", r.MaxUs)},
		{"errors", strconv.FormatUint(r.Errors, 10)},
	}
	if r.OfferedPerSec > 0 {
		rows = append(rows, [2]string{"offered calls/s", fmt.Sprintf("%.0f", r.OfferedPerSec)},
			[2]string{"late calls", strconv.FormatUint(r.Late, 10)})
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	tw.Flush()
}
