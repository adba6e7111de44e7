package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/prommetrics"
	"github.com/vesta-go/vesta/rest"
	"github.com/vesta-go/vesta/segment"
)

// browser starts headless Chromium for one test, with the extra options
// given, and returns its context.
func browser(t *testing.T, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("disable-dev-shm-usage", true),
	}, extra...)...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	return bctx
}

// tab is a browser context whose steps fail the test.
type tab struct {
	t   *testing.T
	ctx context.Context
}

// do runs steps; stage names them in the failure.
func (b tab) do(stage string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser (%s): %v", stage, err)
	}
}

// text is the text of the element of id.
func (b tab) text(id string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.ID(id)))
	if err != nil {
		b.t.Fatalf("browser: reading #%s: %v", id, err)
	}
	return v
}

// newREST is a REST server of gen, closed when the test ends.
func newREST(t *testing.T, gen *core.Generator, cfg rest.Config) *rest.Server {
	t.Helper()
	s, err := rest.NewServer(gen, cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ordersSequencer is a sequencer of the tag "orders", stored in memory
// with step, its tags never refreshed, closed when the test ends; preload
// loads the tag's first range at the start.
func ordersSequencer(t *testing.T, step int64, preload bool) *segment.Sequencer {
	t.Helper()
	store := segment.NewMemStore()
	if err := store.Create(context.Background(), segment.TagInfo{Tag: "orders", MaxID: 1, Step: step}); err != nil {
		t.Fatal(err)
	}
	cfg := segment.DefaultConfig()
	cfg.RefreshTags = -1
	if preload {
		cfg.Preload = []string{"orders"}
	}
	return segtest.Open(t, store, cfg)
}

// serveInProcess serves s's Handler (httptest) until the test ends, and
// returns its base URL.
func serveInProcess(t *testing.T, s *rest.Server) string {
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// serveLoopback serves s on a loopback listener until the test ends, and
// returns its address.
func serveLoopback(t *testing.T, s *rest.Server) string {
	t.Helper()
	return nettest.Serve(t, s, nil, nil).String()
}

// pageClient calls the server as the test, with the token.
type pageClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newPageClient(t *testing.T, base string) *pageClient {
	c := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(c.CloseIdleConnections)
	return &pageClient{t: t, base: base, c: c}
}

func (p *pageClient) get(path string) string {
	p.t.Helper()
	q, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
	q.Header.Set("Authorization", "Bearer "+token)
	res, err := p.c.Do(q)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		p.t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	return string(b)
}

func (p *pageClient) json(path string, v any) {
	p.t.Helper()
	if err := json.Unmarshal([]byte(p.get(path)), v); err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
}

// metric is the value of one sample line of /metrics.
func (p *pageClient) metric(series string) string {
	p.t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(p.get("/metrics"))
	if m == nil {
		p.t.Fatalf("/metrics has no %s", series)
	}
	return m[1]
}

// TestOperatorPageInBrowser drives the operator's page in headless
// Chromium, for both layouts: what it shows matches /v1/info, /v1/status
// and /metrics; the chart moves while IDs are issued; an ID's bit-field
// drawing is what `vesta explain` (the binary, built here) and
// core.Codec.Explain read, for both types.
func TestOperatorPageInBrowser(t *testing.T) {
	explain := vestaExplain(t)
	for _, layout := range []core.Layout{core.Vesta, core.Sorted} {
		t.Run(layout.String(), func(t *testing.T) { testOperatorPage(t, layout, explain) })
	}
}

func testOperatorPage(t *testing.T, layout core.Layout, explain func(core.Layout, string) map[string]string) {
	now := time.Date(2026, 11, 30, 14, 5, 6, 0, time.UTC)
	gen, _ := gentest.Manual(t, core.Config{Layout: layout, Machine: 613, Version: 1,
		Guard: core.NewMemGuard(time.Time{}), GuardWindow: 3 * time.Second}, now)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prommetrics.NewGeneratorCollector(gen))
	lease := rest.LeaseStatus{Provider: "redis", State: "held", HasDeadline: true,
		UntilRenewal: 4200 * time.Millisecond, UntilDeadline: 11500 * time.Millisecond, Fences: 1}
	seq := ordersSequencer(t, 1000, false)
	base := serveInProcess(t, newREST(t, gen, rest.Config{Token: token, Registerer: reg, Sequences: seq,
		SegmentStore: rest.StoreInfo{Kind: "redis", Addr: "10.0.0.5:6379 prefix vesta:seg"},
		Lease:        func() rest.LeaseStatus { return lease }}))
	api := newPageClient(t, base)
	bctx := browser(t, 90*time.Second)

	do, text := tab{t, bctx}.do, tab{t, bctx}.text
	// waitJS polls a JavaScript condition in the page until it holds.
	waitJS := func(stage, cond string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("browser (%s): waiting for %s: %v", stage, cond, err)
		}
	}

	// Without the token the page asks for it; with it, the state shows.
	do("load", chromedp.EmulateViewport(1180, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`#server[data-state="token"]`)))
	do("token", chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.WaitReady(chromedp.CSS(`#server[data-state="ok"]`)))

	var infoRaw map[string]any
	api.json("/v1/info", &infoRaw)
	for id, key := range map[string]string{"s-layout": "layout", "s-epoch": "epoch", "s-type-name": "type_name",
		"s-type": "type", "s-version": "version", "s-machine": "machine"} {
		if got, want := text(id), fmt.Sprint(infoRaw[key]); got != want {
			t.Errorf("#%s shows %q, /v1/info's %s is %q", id, got, key, want)
		}
	}
	for id, want := range map[string]string{"s-provider": "redis", "s-lease-state": "held", "s-renewal": "4.2 s",
		"s-deadline": "11.5 s", "s-quarantine": "none", "s-fenced": "no"} {
		if got := text(id); got != want {
			t.Errorf("#%s shows %q, want %q (from the lease)", id, got, want)
		}
	}
	var st struct {
		Mark        string  `json:"mark"`
		MarkAheadMs float64 `json:"mark_ahead_ms"`
	}
	api.json("/v1/status", &st)
	if got := text("s-mark"); got != st.Mark {
		t.Errorf("#s-mark shows %q, /v1/status says %q", got, st.Mark)
	}
	if got, want := text("s-mark-ahead"), fmt.Sprintf("%.1f s", st.MarkAheadMs/1000); got != want || st.MarkAheadMs <= 0 {
		t.Errorf("#s-mark-ahead shows %q, /v1/status says %v ms", got, st.MarkAheadMs)
	}
	markSecs, _ := strconv.ParseFloat(api.metric("vesta_generator_time_guard_mark_timestamp_seconds"), 64)
	if mark, _ := time.Parse(time.RFC3339Nano, st.Mark); float64(mark.UnixMilli())/1e3 != markSecs {
		t.Errorf("mark %s on the page, %v s in /metrics", st.Mark, markSecs)
	}

	// The segment store and a tag's count, once the page has polled again.
	if _, err := seq.NextN(context.Background(), "orders", 17); err != nil {
		t.Fatal(err)
	}
	waitJS("segment", `(document.querySelector('#s-segment-tags dd[data-tag="orders"]') || {}).textContent === "17 issued, 983 buffered, step 1000"`)
	if got := text("s-segment"); got != "ok" {
		t.Errorf("#s-segment shows %q, want ok", got)
	}
	if got := text("s-segment-store"); got != "redis at 10.0.0.5:6379 prefix vesta:seg" {
		t.Errorf("#s-segment-store shows %q, want the store the server was given", got)
	}

	// The count issued matches /metrics once the page has polled again.
	api.get("/v1/ids?count=250") // through the server, which counts them in /metrics
	waitJS("issued", `document.getElementById("s-issued").textContent === "250"`)
	if m := api.metric(`vesta_ids_issued_total{method="rest"}`); m != "250" {
		t.Errorf("the page shows 250 issued, /metrics %s", m)
	}

	// The chart moves while IDs are issued: once it has drawn a second
	// with none issued, a sample above zero appears.
	waitJS("chart at rest", `document.getElementById("chart").getAttribute("data-last") === "0"`)
	before, _ := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.ID("chart-line"), "points"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := gen.NextIDs(context.Background(), core.REST, 40); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	waitJS("chart", `Number(document.getElementById("chart").getAttribute("data-last")) > 0`)
	waitJS("rate", `!/^(0\.0\/s|—)$/.test(document.getElementById("s-rate").textContent)`)
	close(stop)
	wg.Wait()
	after, _ := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.ID("chart-line"), "points"))
	if after.Value == before.Value || after.Value == "" {
		t.Errorf("the chart did not move: points %q then %q", before.Value, after.Value)
	}
	if rate := text("s-rate"); rate == "" || rate == "—" || rate == "0.0/s" {
		t.Errorf("#s-rate shows %q while IDs are issued", rate)
	}

	// An issued ID, and a pasted one of the other type: the drawing is
	// what Explain reads, bit for bit.
	do("issue", chromedp.Click(chromedp.ID("issue")),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state="ok"][data-source="issue"]`)))
	issued := text("f-id")
	other := fmt.Sprint(uint64(1)<<63 | 1<<62 | 0x2a5f3c19d7e1)
	do("bits issued", chromedp.WaitReady(chromedp.CSS(`#bits[data-id="`+issued+`"]`)))
	checkBits(t, bctx, gen.Codec(), issued, explain(layout, issued))
	do("paste", chromedp.SetValue(chromedp.ID("id-input"), other), chromedp.Click(chromedp.ID("explain")),
		chromedp.WaitReady(chromedp.CSS(`#bits[data-id="`+other+`"]`)))
	checkBits(t, bctx, gen.Codec(), other, explain(layout, other))
}

// vestaExplain builds the vesta binary from the main module once per test
// and returns a function running `vesta explain --layout L ID`, parsed
// into its key=value fields.
func vestaExplain(t *testing.T) func(layout core.Layout, id string) map[string]string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vesta")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-C", root, "-o", bin, "./cmd/vesta")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building vesta: %v\n%s", err, out)
	}
	return func(layout core.Layout, id string) map[string]string {
		t.Helper()
		out, err := exec.Command(bin, "explain", "--layout", layout.String(), id).CombinedOutput()
		if err != nil {
			t.Fatalf("vesta explain %s: %v\n%s", id, err, out)
		}
		fields := map[string]string{}
		for _, kv := range strings.Fields(string(out)) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				fields[k] = v
			}
		}
		return fields
	}
}

// checkBits compares the page's drawing of id with `vesta explain` (its
// key=value output) and codec.Explain: each field's value, and the bits,
// which read together must be the ID's 64.
func checkBits(t *testing.T, bctx context.Context, codec core.Codec, id string, explain map[string]string) {
	t.Helper()
	type field struct{ Name, Value, Bits string }
	drawn, err := chromedp.Run(bctx, chromedp.Evaluate[[]field](`Array.from(document.querySelectorAll("#bits .bitfield")).map(function (g) {
		return {Name: g.getAttribute("data-name"), Value: g.getAttribute("data-value"),
			Bits: Array.from(g.querySelectorAll(".cells span")).map(function (c) { return c.textContent; }).join("")};
	})`))
	if err != nil {
		t.Fatalf("reading the drawing of %s: %v", id, err)
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	e := codec.Explain(core.ID(n))
	want := map[string]uint64{"version": uint64(e.Version), "type": uint64(e.Type), "method": uint64(e.Method),
		"time": e.Time, "machine": uint64(e.Machine), "seq": e.Seq}
	var all strings.Builder
	seen := map[string]bool{}
	for _, f := range drawn {
		all.WriteString(f.Bits)
		seen[f.Name] = true
		if w, ok := want[f.Name]; !ok || f.Value != strconv.FormatUint(w, 10) {
			t.Errorf("%s: the drawing's %s is %q, Explain says %d", id, f.Name, f.Value, w)
		}
		if f.Value != explain[f.Name] {
			t.Errorf("%s: the drawing's %s is %q, vesta explain says %q", id, f.Name, f.Value, explain[f.Name])
		}
		if v, err := strconv.ParseUint(f.Bits, 2, 64); err != nil || v != want[f.Name] {
			t.Errorf("%s: the drawing's %s bits %q are not its value %d", id, f.Name, f.Bits, want[f.Name])
		}
	}
	if got, wantBits := all.String(), fmt.Sprintf("%064b", n); got != wantBits {
		t.Errorf("%s: the drawing's bits\n%s\nare not the ID's\n%s", id, got, wantBits)
	}
	if len(seen) != 6 {
		t.Errorf("%s: the drawing has fields %v, want all six", id, seen)
	}
}
