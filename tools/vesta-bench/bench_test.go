package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/logtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
)

// startCentral serves a fresh generator (machine 1000) over MessagePack-RPC
// on 127.0.0.1:0 until the test ends.
func startCentral(tb testing.TB, cfg central.Config) string {
	tb.Helper()
	return startCentralMachine(tb, 1000, cfg)
}

// startCentralMachine is startCentral with the generator's machine ID.
func startCentralMachine(tb testing.TB, machine core.MachineID, cfg central.Config) string {
	tb.Helper()
	gcfg := core.DefaultConfig()
	gcfg.Machine = machine
	gen, err := core.New(context.Background(), gcfg)
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := central.NewServer(gen, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(ln) })
	tb.Cleanup(func() {
		srv.Close()
		wg.Wait()
		gen.Close()
	})
	return ln.Addr().String()
}

func TestBenchFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no target", []string{}, "accepts 1 arg"},
		{"two targets", []string{"rpc", "rest"}, "accepts 1 arg"},
		{"unknown target", []string{"grpc"}, `TARGET "grpc"; want one of embedded, rpc, rest, client, redis-incr, redis-rueidis, http-baseline`},
		{"concurrency 0", []string{"embedded", "--concurrency", "0"}, "--concurrency 0; want 1-4096"},
		{"concurrency absurd", []string{"rpc", "-c", "100000"}, "--concurrency 100000; want 1-4096"},
		{"concurrency not a number", []string{"rpc", "-c", "many"}, `"many" for "-c, --concurrency"`},
		{"duration 0", []string{"embedded", "--duration", "0s"}, "--duration 0s; want more than 0"},
		{"duration negative", []string{"embedded", "-d", "-1s"}, "--duration -1s"},
		{"duration absurd", []string{"embedded", "-d", "1000h"}, "--duration 1000h0m0s; want more than 0 and at most 24h0m0s"},
		{"duration not a duration", []string{"embedded", "-d", "10"}, `"10" for "-d, --duration"`},
		{"align without whole seconds", []string{"embedded", "--align", "-d", "1500ms"}, "--duration 1.5s: with --align, want whole seconds"},
		{"warmup negative", []string{"embedded", "--warmup", "-1s"}, "--warmup -1s; want 0 to 1h0m0s"},
		{"batch 0", []string{"rpc", "--batch", "0"}, "--batch 0; want 1-10000 (max_batch)"},
		{"batch above max_batch", []string{"rest", "-b", "10001"}, "--batch 10001; want 1-10000 (max_batch)"},
		{"batch for the baseline", []string{"http-baseline", "-b", "2"}, "--batch 2: http-baseline issues no IDs"},
		{"conns 0", []string{"rpc", "--conns", "0"}, "--conns 0; want 1-64"},
		{"conns above the client's", []string{"client", "--conns", "65"}, "--conns 65; want 1-64"},
		{"conns for embedded", []string{"embedded", "--conns", "2"}, "--conns: the embedded target makes no connections"},
		{"redis without addr", []string{"redis-incr"}, "--addr: redis-incr needs the host:port of a Redis server"},
		{"pool on rpc", []string{"rpc", "--pool"}, "--pool: only the redis-incr target has a go-redis pool"},
		{"rueidis without addr", []string{"redis-rueidis"}, "--addr: redis-rueidis needs the host:port of a Redis server"},
		{"conns for rueidis", []string{"redis-rueidis", "--addr", "127.0.0.1:6379", "--conns", "4"}, "--conns: redis-rueidis pipelines every caller"},
		{"listen for rpc", []string{"rpc", "--listen", "127.0.0.1:1"}, "--listen: only http-baseline serves for another process"},
		{"listen without port", []string{"http-baseline", "--listen", "localhost"}, `--listen "localhost": want host:port`},
		{"addr for embedded", []string{"embedded", "--addr", "127.0.0.1:7070"}, `--addr "127.0.0.1:7070": the embedded target runs in this process`},
		{"addr for the baseline", []string{"http-baseline", "--addr", "127.0.0.1:80"}, "the http-baseline target runs in this process"},
		{"addr without port", []string{"rpc", "--addr", "localhost"}, `--addr "localhost": want host:port`},
		{"addr without host", []string{"rest", "--addr", ":7080"}, `--addr ":7080": want host:port`},
		{"addr port 0", []string{"client", "--addr", "127.0.0.1:0"}, `--addr "127.0.0.1:0": port "0"; want 1-65535`},
		{"addr port too high", []string{"redis-incr", "--addr", "127.0.0.1:70000"}, `port "70000"; want 1-65535`},
		{"unknown flag", []string{"rpc", "--callers", "3"}, "unknown flag: --callers"},
		{"rate negative", []string{"embedded", "--rate", "-1"}, "--rate -1; want 0 (closed loop) or more, at most 1e+06 per caller"},
		{"rate NaN", []string{"embedded", "--rate", "NaN"}, "--rate NaN"},
		{"rate above a call a microsecond per caller", []string{"embedded", "-c", "2", "--rate", "3e6"}, "--rate 3e+06; want 0 (closed loop) or more, at most 1e+06 per caller"},
		{"several addresses for rpc", []string{"rpc", "--addr", "127.0.0.1:1,127.0.0.1:2"}, "only the client target takes several servers"},
		{"an address twice", []string{"client", "--addr", "127.0.0.1:1,127.0.0.1:1"}, "127.0.0.1:1 appears twice"},
		{"a bad address among several", []string{"client", "--addr", "127.0.0.1:1,nohost"}, `--addr "127.0.0.1:1,nohost": want host:port`},
		{"servers for rpc", []string{"rpc", "--servers", "2"}, "--servers: only the client target starts several servers"},
		{"servers with addr", []string{"client", "--servers", "2", "--addr", "127.0.0.1:1"}, "--servers: with --addr the servers are the ones given"},
		{"servers 0", []string{"client", "--servers", "0"}, "--servers 0; want 1-16"},
		{"servers absurd", []string{"client", "--servers", "17"}, "--servers 17; want 1-16"},
		{"prefetch for rpc", []string{"rpc", "--prefetch", "10"}, "--prefetch: only the client target prefetches"},
		{"prefetch negative", []string{"client", "--prefetch", "-1"}, "--prefetch -1; want 0-1048576"},
		{"prefetch absurd", []string{"client", "--prefetch", "1048577"}, "--prefetch 1048577; want 0-1048576"},
		{"timeout for rpc", []string{"rpc", "--timeout", "1s"}, "--timeout: only the client target has one"},
		{"timeout negative", []string{"client", "--timeout", "-1s"}, "--timeout -1s; want 0 (the client's default) to 1m"},
		{"timeout absurd", []string{"client", "--timeout", "2h"}, "--timeout 2h0m0s; want 0 (the client's default) to 1m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q; want nothing", r.stdout)
			}
		})
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// cli runs one vesta-bench command line in-process.
func cli(tb testing.TB, args ...string) result {
	tb.Helper()
	var out, errb logtest.Buffer
	code := run(context.Background(), args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// benchJSONKeys are the keys of --json, in order.
var benchJSONKeys = []string{"target", "concurrency", "batch", "seconds", "calls", "ids", "calls_per_sec",
	"ids_per_sec", "p50_us", "p99_us", "p999_us", "max_us", "errors"}

// benchJSON runs a bench with --json and checks the object's shape and
// consistency.
func benchJSON(t *testing.T, args ...string) benchResult {
	t.Helper()
	r := cli(t, append([]string{"--json", "-d", "300ms"}, args...)...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout holds %d lines; want one JSON object:\n%s", strings.Count(r.stdout, "\n"), r.stdout)
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var keys []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", r.stdout)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	want := benchJSONKeys
	if slices.Contains(args, "--rate") {
		want = append(slices.Clip(want), "offered_per_sec", "late")
	}
	if !slices.Equal(keys, want) && !(slices.Contains(args, "--rate") && slices.Equal(keys, want[:len(want)-1])) { // late: omitted when 0
		t.Errorf("keys %v; want %v", keys, want)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stderr, "calls/s so far") && res.Seconds >= 1 {
		t.Errorf("no progress line on stderr: %s", r.stderr)
	}
	return res
}

func checkResult(t *testing.T, res benchResult, target string, concurrency, batch int) {
	t.Helper()
	if res.Target != target || res.Concurrency != concurrency || res.Batch != batch {
		t.Errorf("target %q, concurrency %d, batch %d; want %q, %d, %d", res.Target, res.Concurrency, res.Batch, target, concurrency, batch)
	}
	if res.Calls == 0 || res.Errors != 0 || res.IDs != res.Calls*uint64(batch) {
		t.Errorf("calls %d, ids %d, errors %d; want calls > 0, ids = calls × %d, no error", res.Calls, res.IDs, res.Errors, batch)
	}
	if res.Seconds <= 0 || res.CallsPerSec <= 0 || res.IDsPerSec < res.CallsPerSec {
		t.Errorf("seconds %v, calls/s %v, ids/s %v", res.Seconds, res.CallsPerSec, res.IDsPerSec)
	}
	if !(0 < res.P50us && res.P50us <= res.P99us && res.P99us <= res.P999us && res.P999us <= res.MaxUs*1.01) {
		t.Errorf("latencies p50 %v, p99 %v, p99.9 %v, max %v µs; want 0 < p50 ≤ p99 ≤ p99.9 ≤ max",
			res.P50us, res.P99us, res.P999us, res.MaxUs)
	}
}

func TestBenchTargets(t *testing.T) {
	rpcAddr := startCentral(t, central.Config{})
	rpcAddr2 := startCentralMachine(t, 1001, central.Config{})
	rds := redistest.Start(t)
	// The client's attempts get a timeout far above its 200ms default: on
	// a loaded machine a call may wait that long, and a timeout counts as
	// an error. Only a hang should fail the test, not a slow call.
	const slow = "30s"
	for _, tc := range []struct {
		name               string
		target             string
		concurrency, batch int
		args               []string
	}{
		{"embedded", "embedded", 4, 1, nil},
		{"embedded batch", "embedded", 2, 100, nil},
		{"rpc in-process", "rpc", 4, 1, nil},
		{"rpc at addr, pipelined", "rpc", 8, 1, []string{"--addr", rpcAddr, "--conns", "2"}},
		{"rpc batch", "rpc", 2, 1000, []string{"--addr", rpcAddr}},
		{"rest", "rest", 4, 1, nil},
		{"rest batch", "rest", 2, 50, nil},
		{"client", "client", 4, 1, []string{"--timeout", slow}},
		{"client at addr, batch", "client", 3, 7, []string{"--addr", rpcAddr, "--conns", "1", "--timeout", slow}},
		{"redis-incr", "redis-incr", 4, 1, []string{"--addr", rds.Addr()}},
		{"redis-incr pipelined, batch", "redis-incr", 8, 5, []string{"--addr", rds.Addr(), "--conns", "2"}},
		{"redis-incr on go-redis's pool", "redis-incr", 8, 1, []string{"--addr", rds.Addr(), "--pool"}},
		{"redis-incr on a pool of 2, batch", "redis-incr", 8, 3, []string{"--addr", rds.Addr(), "--pool", "--conns", "2"}},
		{"redis-rueidis", "redis-rueidis", 8, 1, []string{"--addr", rds.Addr()}},
		{"redis-rueidis, batch", "redis-rueidis", 4, 5, []string{"--addr", rds.Addr()}},
		{"http-baseline", "http-baseline", 4, 1, nil},
		{"warm-up", "rpc", 2, 1, []string{"--addr", rpcAddr, "--warmup", "100ms"}},
		{"aligned", "embedded", 2, 1, []string{"--align", "-d", "1s"}},
		{"open loop", "embedded", 4, 1, []string{"--rate", "2000"}},
		{"client, open loop, prefetch", "client", 8, 1, []string{"--rate", "4000", "--prefetch", "1000", "--timeout", slow}},
		{"client, three servers in-process, batch", "client", 4, 100, []string{"--servers", "3", "--timeout", slow}},
		{"client, two servers at addr, prefetch", "client", 4, 10, []string{"--addr", rpcAddr + "," + rpcAddr2, "--prefetch", "500", "--timeout", slow}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{tc.target, "-c", strconv.Itoa(tc.concurrency), "-b", strconv.Itoa(tc.batch)}, tc.args...)
			res := benchJSON(t, args...)
			checkResult(t, res, tc.target, tc.concurrency, tc.batch)
			if slices.Contains(tc.args, "--align") && res.Seconds < 1 {
				t.Errorf("seconds %v; want the whole second asked for", res.Seconds)
			}
			if i := slices.Index(tc.args, "--rate"); i >= 0 {
				rate, _ := strconv.ParseFloat(tc.args[i+1], 64)
				if res.OfferedPerSec != rate || res.CallsPerSec > 2*rate {
					t.Errorf("offered %v calls/s, made %v; want %v offered and no more made (give or take the window's edges)", res.OfferedPerSec, res.CallsPerSec, rate)
				}
			}
		})
	}

	// Every INCR counted was made: Redis holds at least as many.
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr()})
	defer rdb.Close()
	n, err := rdb.Get(context.Background(), "vesta:bench:incr").Uint64()
	if err != nil || n == 0 {
		t.Errorf("the counter in Redis: %d, %v", n, err)
	}
}

func TestBenchTable(t *testing.T) {
	r := cli(t, "rpc", "-c", "2", "-d", "200ms", "--conns", "1")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, row := range []string{"target       rpc\n", "concurrency  2\n", "connections  1\n", "batch        1\n",
		"calls/s", "ids/s", "p50 µs", "p99 µs", "p99.9 µs", "max µs", "errors       0\n", "(in-process, no --addr)"} {
		if !strings.Contains(r.stdout, row) {
			t.Errorf("table lacks %q:\n%s", row, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "vesta-bench: rpc: Go client (no prefetch, fallback or retry) Vesta.GenID") {
		t.Errorf("stderr does not say what runs: %s", r.stderr)
	}
}

func TestBenchCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	r := cli(t, "embedded", "-c", "2", "-d", "200ms", "--json", "--cpuprofile", path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Errorf("profile: %v, %v; want a non-empty file", fi, err)
	}
	r = cli(t, "embedded", "-d", "100ms", "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir"))
	if r.code != 1 || !strings.Contains(r.stderr, "--cpuprofile") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming --cpuprofile", r.code, r.stderr)
	}
}

// A server that cannot be reached is an error (exit 1) naming it.
func TestBenchUnreachable(t *testing.T) {
	addr := nettest.DeadAddr(t)
	for _, target := range []string{"rpc", "rest", "redis-incr"} {
		t.Run(target, func(t *testing.T) {
			r := cli(t, target, "--addr", addr, "-d", "100ms", "-c", "1", "--json")
			if r.code != 1 || !strings.Contains(r.stderr, "connection refused") {
				t.Errorf("exit %d, stderr %q; want exit 1 and connection refused", r.code, r.stderr)
			}
		})
	}
}

// Lanes answer every call once, with its own result, and pipeline the
// calls that queue while a batch is in flight.
func TestLanes(t *testing.T) {
	const callers, conns, rounds = 16, 3, 200
	var inFlight [conns]atomic.Int32
	var batches, calls, maxBatch atomic.Int64
	ls := newLanes(conns, callers, func(i int) func([]*laneCall) {
		return func(batch []*laneCall) {
			if inFlight[i].Add(1) != 1 {
				t.Errorf("lane %d runs two batches at once", i)
			}
			for j, c := range batch {
				c.ids, c.err = j+1, nil // a result of its own: its place
			}
			batches.Add(1)
			calls.Add(int64(len(batch)))
			for m := maxBatch.Load(); int64(len(batch)) > m && !maxBatch.CompareAndSwap(m, int64(len(batch))); m = maxBatch.Load() {
			}
			inFlight[i].Add(-1)
		}
	})
	var wg sync.WaitGroup
	for w := range callers {
		wg.Go(func() {
			for range rounds {
				n, err := ls.call(context.Background(), w)
				if err != nil || n < 1 || n > callers {
					t.Errorf("caller %d: %d, %v", w, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if calls.Load() != callers*rounds {
		t.Errorf("%d calls ran; want %d", calls.Load(), callers*rounds)
	}
	t.Logf("%d batches, largest %d", batches.Load(), maxBatch.Load())
}

// Calls that queue while their lane's batch is in flight go out together in
// the next batch, led by the first of them, and each gets its own answer.
func TestLanesPipeline(t *testing.T) {
	const callers = 8
	release := make(chan struct{})
	var (
		mu    sync.Mutex
		sizes []int
		index = map[*laneCall]int{} // each call's caller, its answer
	)
	ls := newLanes(1, callers, func(int) func([]*laneCall) {
		return func(batch []*laneCall) {
			mu.Lock()
			sizes = append(sizes, len(batch))
			first := len(sizes) == 1
			mu.Unlock()
			if first {
				<-release
			}
			for _, c := range batch {
				c.ids = index[c]
			}
		}
	})
	for w := range ls.calls {
		index[&ls.calls[w]] = w
	}
	l := &ls.lanes[0]
	queued := func(n int) {
		for {
			l.mu.Lock()
			busy, q := l.busy, len(l.queue)
			l.mu.Unlock()
			if busy && q == n {
				return
			}
			runtime.Gosched()
		}
	}
	got := make([]int, callers)
	var wg sync.WaitGroup
	call := func(w int) {
		wg.Go(func() {
			n, err := ls.call(context.Background(), w)
			if err != nil {
				t.Error(err)
			}
			got[w] = n
		})
	}
	call(0)
	queued(0) // caller 0 leads the first batch, which waits for release
	for w := 1; w < callers; w++ {
		call(w)
	}
	queued(callers - 1)
	close(release)
	wg.Wait()
	if !slices.Equal(sizes, []int{1, callers - 1}) {
		t.Errorf("batches of %v; want [1 %d]", sizes, callers-1)
	}
	for w, n := range got {
		if n != w {
			t.Errorf("caller %d got the answer of caller %d", w, n)
		}
	}
}

// http-baseline --listen serves the trivial handler for another process
// until interrupted: a counter on each route an ID is asked on.
func TestBaselineListen(t *testing.T) {
	addr := nettest.DeadAddr(t) // free a moment ago: the handler listens there
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- run(ctx, []string{"http-baseline", "--listen", addr}, io.Discard, io.Discard) }()
	last := uint64(baselineFirst - 1)
	for _, path := range []string{"/genid", "/v1/id", "/v1/ids?count=100"} {
		var body []byte
		for try := 0; ; try++ {
			res, err := http.Get("http://" + addr + path)
			if err == nil {
				body, err = io.ReadAll(res.Body)
				res.Body.Close()
			}
			if err == nil {
				break
			}
			if try > 100 {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // until it listens
		}
		var n uint64
		var err error
		switch path {
		case "/genid":
			n, err = strconv.ParseUint(string(body), 10, 64)
		case "/v1/id":
			var v struct{ ID string }
			if err = json.Unmarshal(body, &v); err == nil {
				n, err = strconv.ParseUint(v.ID, 10, 64)
			}
		default:
			var v struct{ IDs []string }
			if err = json.Unmarshal(body, &v); err == nil && len(v.IDs) != 100 {
				err = fmt.Errorf("%d values", len(v.IDs))
			}
			for j := 0; err == nil && j < len(v.IDs); j++ {
				var x uint64
				if x, err = strconv.ParseUint(v.IDs[j], 10, 64); err == nil && x != last+uint64(j)+1 {
					err = fmt.Errorf("value %d is %d", j, x)
				}
			}
			n = last + 100
		}
		if err != nil || (n != last+1 && path != "/v1/ids?count=100") {
			t.Fatalf("GET %s: %q (%v); want the counter after %d (ID-sized, from baselineFirst)", path, body, err, last)
		}
		last = n
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d after the interrupt; want 0", code)
	}
}
