package rest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/latencytest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/rest"
)

// The REST benchmarks put /genid and /v1/ids?count=100 side by side with a
// minimal echo handler returning a constant string, in one run, on the
// same machine and with the same client, so the figures that matter are
// the ratios (goal: /genid at 85% or more of the trivial handler's rate).
//
//	go test -run '^$' -bench 'HTTP|Wrk' -benchtime 3s ./rest/
//
// BenchmarkHTTP drives them with Go's keep-alive client at fixed
// concurrency; BenchmarkWrk with wrk, which costs the shared CPUs less.
// /v1/ids?count=100 meets the generator's own ceiling (1,048,576 IDs/s per
// machine ID for max-peak) at about 10,500 requests/s once MaxBorrow (1s)
// is used up: past that, its rate measures the ID space, not HTTP.

const benchConns = 32

// benchTargets starts the three servers on loopback and returns their URLs
// in order: trivial, genid, ids100.
func benchTargets(b *testing.B) []struct{ name, url string } {
	b.Helper()
	trivial := echo.New()
	trivial.HideBanner = true
	trivial.GET("/", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	trivialAddr := nettest.Serve(b, &http.Server{Handler: trivial}, nil, http.ErrServerClosed)

	cfg := core.DefaultConfig()
	cfg.Layout, cfg.Machine = core.Vesta, 1022
	gen, err := core.New(context.Background(), cfg)
	testkit.Closed(b, "core.New", gen, err)
	s, err := rest.NewServer(gen, rest.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	base := serve(b, s)
	return []struct{ name, url string }{
		{"trivial", "http://" + trivialAddr.String() + "/"},
		{"genid", base + "/genid"},
		{"ids100", base + "/v1/ids?count=100"},
	}
}

// BenchmarkHTTP sends b.N requests to each target in ten interleaved
// rounds, so that load from other processes on the machine falls on all
// three alike, and reports each target's rate and latency and its rate as
// a fraction of the trivial handler's (x_trivial).
func BenchmarkHTTP(b *testing.B) {
	targets := benchTargets(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchConns, MaxConnsPerHost: benchConns,
		DisableCompression: true}}
	defer client.CloseIdleConnections()
	type result struct {
		n       int
		elapsed time.Duration
		hist    *latencytest.Recorder
	}
	results := make([]result, len(targets))
	for i := range results {
		results[i].hist = &latencytest.Recorder{}
		if _, err := loadGo(client, targets[i].url, benchConns, results[i].hist); err != nil { // warm up
			b.Fatal(err)
		}
		results[i].hist.Reset()
	}
	const rounds = 10
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		n := b.N / rounds
		if r == rounds-1 {
			n = b.N - n*(rounds-1)
		}
		if n == 0 {
			continue
		}
		for i, tg := range targets {
			d, err := loadGo(client, tg.url, n, results[i].hist)
			if err != nil {
				b.Fatal(err)
			}
			results[i].n += n
			results[i].elapsed += d
		}
	}
	b.StopTimer()
	rate := func(r result) float64 { return float64(r.n) / r.elapsed.Seconds() }
	for i, tg := range targets {
		r := results[i]
		b.ReportMetric(rate(r), tg.name+"-req/s")
		b.ReportMetric(float64(r.hist.Quantile(50))/1e3, tg.name+"-p50-µs")
		b.ReportMetric(float64(r.hist.Quantile(99))/1e3, tg.name+"-p99-µs")
		if i > 0 {
			b.ReportMetric(rate(r)/rate(results[0]), tg.name+"-x_trivial")
		}
	}
	b.ReportMetric(0, "ns/op") // per-op time mixes three targets: meaningless
}

// loadGo sends n GETs of url from benchConns goroutines over the client's
// keep-alive connections, records each latency in hist and returns the
// wall time taken.
func loadGo(client *http.Client, url string, n int, hist *latencytest.Recorder) (time.Duration, error) {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first atomic.Pointer[error]
	)
	start := time.Now()
	for w := 0; w < benchConns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := &latencytest.Recorder{}
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				res, err := client.Get(url)
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if err == nil && res.StatusCode != http.StatusOK {
						err = fmt.Errorf("%s: status %d", url, res.StatusCode)
					}
				}
				if err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				h.Record(time.Since(t0))
			}
			mu.Lock()
			hist.Merge(h)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := first.Load(); err != nil {
		return 0, *err
	}
	return time.Since(start), nil
}

// BenchmarkWrk runs wrk (Debian package wrk) against each target in five
// interleaved rounds of 2s, whatever b.N (run it with -benchtime 1x), and
// reports each target's mean rate, the median of its rounds' p50 latency,
// the worst of their p99, and its rate as a fraction of the trivial
// handler's (x_trivial).
func BenchmarkWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk)")
	}
	targets := benchTargets(b)
	const rounds = 5
	rates := make([]float64, len(targets))
	p50s := make([][]float64, len(targets))
	p99s := make([]float64, len(targets))
	for r := 0; r < rounds; r++ {
		for i, tg := range targets {
			out, err := exec.Command(wrk, "-t2", "-c"+strconv.Itoa(benchConns), "-d2s", "--latency", tg.url).CombinedOutput()
			if err != nil {
				b.Fatalf("wrk: %v\n%s", err, out)
			}
			rate, p50, p99 := parseWrk(b, string(out))
			rates[i] += rate / rounds
			p50s[i] = append(p50s[i], p50)
			p99s[i] = max(p99s[i], p99)
		}
	}
	for i, tg := range targets {
		slices.Sort(p50s[i])
		b.ReportMetric(rates[i], tg.name+"-req/s")
		b.ReportMetric(p50s[i][len(p50s[i])/2], tg.name+"-p50-µs")
		b.ReportMetric(p99s[i], tg.name+"-p99-µs")
		if i > 0 {
			b.ReportMetric(rates[i]/rates[0], tg.name+"-x_trivial")
		}
	}
	b.ReportMetric(0, "ns/op")
}

var (
	wrkRate    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkLatency = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	wrkErrors  = regexp.MustCompile(`Non-2xx or 3xx responses|Socket errors`)
)

func parseWrk(b *testing.B, out string) (rate, p50, p99 float64) {
	m := wrkRate.FindStringSubmatch(out)
	if m == nil || wrkErrors.MatchString(out) {
		b.Fatalf("wrk output without a clean rate:\n%s", out)
	}
	rate, _ = strconv.ParseFloat(m[1], 64)
	for _, l := range wrkLatency.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(l[2], 64)
		switch l[3] {
		case "ms":
			v *= 1e3
		case "s":
			v *= 1e6
		}
		if strings.HasPrefix(l[1], "50") {
			p50 = v
		} else {
			p99 = v
		}
	}
	return rate, p50, p99
}
