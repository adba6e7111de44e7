package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/prommetrics"
	"github.com/vesta-go/vesta/rest"
)

// burst is how many IDs TestOperatorPageFirstLoad issues before the page
// is opened.
const burst = 130000

// TestOperatorPageFirstLoad opens the page right after 130,000 IDs were
// issued, for both layouts: its first answer charts them (the server kept
// them), with a rate and a peak above zero; the process's figures match
// /v1/status and /metrics; the ID box's placeholder is an ID of the
// server's own layout, for now; ?id= opens an ID; no value shows as a
// negative zero, and the guard mark breaks only between its date and
// time.
func TestOperatorPageFirstLoad(t *testing.T) {
	for _, layout := range []core.Layout{core.Sorted, core.Vesta} {
		t.Run(layout.String(), func(t *testing.T) { testFirstLoad(t, layout) })
	}
}

// openServer serves gen on a loopback listener with no token, its metrics
// in a registry of its own, until the test ends; it returns the base URL.
func openServer(t *testing.T, gen *core.Generator, cfg rest.Config) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prommetrics.NewGeneratorCollector(gen))
	cfg.Registerer = reg
	return "http://" + serveLoopback(t, newREST(t, gen, cfg))
}

func testFirstLoad(t *testing.T, layout core.Layout) {
	ctx := context.Background()
	gen, err := core.New(ctx, core.Config{Layout: layout, Machine: 77, Guard: core.NewMemGuard(time.Time{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gen.Close() })
	base := openServer(t, gen, rest.Config{})
	api := newPageClient(t, base)
	for range burst / 10000 {
		api.get("/v1/ids?count=10000")
	}
	for range 2 {
		if res, err := api.c.Get(base + "/v1/ids/not-an-id"); err != nil || res.StatusCode != http.StatusBadRequest {
			t.Fatalf("a bad ID: %v %v", res, err)
		} else {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}

	bctx := browser(t, 4*time.Minute)
	run, text := tab{t, bctx}.do, tab{t, bctx}.text
	attr := func(sel, name string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).getAttribute(%q) || ""`, sel, name)))
		if err != nil {
			t.Fatalf("browser: %s[%s]: %v", sel, name, err)
		}
		return v
	}

	// The first answer: the burst is charted at once.
	run("load", chromedp.EmulateViewport(1180, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`#server[data-state="ok"]`)))
	type first struct{ Polls, Total, Peak, RateMin, Rest string }
	got, err := chromedp.Run(bctx, chromedp.Evaluate[first](`(function () {
		var c = document.getElementById("chart"), r = document.getElementById("s-rate-rest");
		return {Polls: document.getElementById("server").getAttribute("data-polls"), Total: c.getAttribute("data-total"),
			Peak: c.getAttribute("data-peak"), RateMin: document.getElementById("s-rate-min").textContent,
			Rest: r ? r.getAttribute("data-total") : ""};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if peak, _ := strconv.ParseFloat(got.Peak, 64); got.Total != strconv.Itoa(burst) || peak <= 0 ||
		got.RateMin == "0.0/s" || got.Rest != strconv.Itoa(burst) {
		t.Errorf("after %s polls the page charts %s IDs, peak %s/s, %s over the minute, rest %s; want the %d issued",
			got.Polls, got.Total, got.Peak, got.RateMin, got.Rest, burst)
	}
	if m := issuedMetric(t, api, "rest"); m != strconv.Itoa(burst) {
		t.Errorf("/metrics counts %s rest IDs, the page %s", m, got.Rest)
	}

	// The process's figures are /v1/status's and /metrics's.
	var st struct {
		Build struct {
			Version   string `json:"version"`
			GoVersion string `json:"go_version"`
		} `json:"build"`
		Started  string `json:"started"`
		SampleID string `json:"sample_id"`
		Mark     string `json:"mark"`
	}
	api.json("/v1/status", &st)
	if v := text("s-build-version"); v != st.Build.Version+", "+st.Build.GoVersion || !strings.HasPrefix(text("s-build"), st.Build.Version) {
		t.Errorf("the page shows version %q (%q), /v1/status %+v", v, text("s-build"), st.Build)
	}
	if v := text("s-started"); v != regexp.MustCompile(`\.[0-9]+Z$`).ReplaceAllString(st.Started, "Z") {
		t.Errorf("started %q, /v1/status %q", v, st.Started)
	}
	// The 4xx answers: the 2 bad IDs, and the browser's favicon.ico when
	// it has asked; the page catches up with /metrics within a poll.
	for try := 0; ; try++ {
		want := sumMetric(t, api, "vesta_http_requests_total", `code="4`)
		_, err := chromedp.Run(bctx, chromedp.Poll[bool](fmt.Sprintf(`document.getElementById("s-4xx").textContent.indexOf(%q) === 0`, want+" ("),
			chromedp.WithPollingTimeout(3*time.Second)))
		if n, _ := strconv.Atoi(want); err == nil && n >= 2 {
			break
		}
		if try == 5 {
			t.Errorf("4xx %q on the page, %s in /metrics; want at least the 2 bad IDs", text("s-4xx"), want)
			break
		}
	}
	if v := text("s-5xx"); v != "0 (0)" {
		t.Errorf("5xx %q", v)
	}
	if v := text("s-http-p50"); !regexp.MustCompile(`^[0-9.]+ ms of [0-9,]+$`).MatchString(v) {
		t.Errorf("HTTP p50 %q", v)
	}
	if v := attr(`#s-listeners div[data-listener="http"]`, "data-listener"); v != "http" ||
		!strings.HasPrefix(text("s-listeners"), "HTTP") || !strings.Contains(text("s-listeners"), strings.TrimPrefix(base, "http://")) {
		t.Errorf("listeners %q, want the http one at %s", text("s-listeners"), base)
	}
	for _, id := range []string{"s-offset", "s-ahead", "s-mark-ahead", "s-uptime"} {
		if v := text(id); strings.HasPrefix(v, "-0 ") || strings.HasPrefix(v, "-0.0 ") || strings.HasPrefix(v, "−") {
			t.Errorf("#%s shows %q: a negative zero", id, v)
		}
	}
	// The mark breaks only between its date and its time, even narrow.
	for _, width := range []int64{1180, 360} {
		run("viewport", chromedp.EmulateViewport(width, 900))
		lines, err := chromedp.Run(bctx, chromedp.Evaluate[[]int](`Array.from(document.querySelectorAll("#s-mark span")).map(function (s) { return s.getClientRects().length; })`))
		if err != nil || len(lines) != 2 || lines[0] != 1 || lines[1] != 1 {
			t.Errorf("at %d px the mark's date and time take %v lines (%v); want one each", width, lines, err)
		}
	}
	run("viewport", chromedp.EmulateViewport(1180, 900))

	// The placeholder is an ID of this server, for now; Explain with the
	// box empty explains it.
	ph := attr("#id-input", "placeholder")
	if ph == "" || st.SampleID == "" {
		t.Fatalf("placeholder %q, /v1/status's sample_id %q", ph, st.SampleID)
	}
	var e struct {
		Machine   json.Number `json:"machine"`
		Method    string      `json:"method_name"`
		Timestamp time.Time   `json:"timestamp"`
	}
	api.json("/v1/ids/"+ph, &e)
	if e.Machine != "77" || e.Method != "rest" || time.Since(e.Timestamp).Abs() > time.Minute {
		t.Errorf("the placeholder %s explains to machine %s, %s, %s; want 77, rest, now", ph, e.Machine, e.Method, e.Timestamp)
	}
	run("explain the placeholder", chromedp.Click(chromedp.ID("explain")),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state="ok"][data-id="`+ph+`"]`)))

	// ?id= opens an ID: one of the burst, issued over REST.
	var one struct {
		ID string `json:"id"`
	}
	api.json("/v1/id", &one)
	run("deep link", chromedp.Navigate(base+"/?id="+one.ID),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state="ok"][data-source="link"][data-id="`+one.ID+`"]`)))
	if v := text("f-method-name"); v != "rest" || text("f-machine") != "77" {
		t.Errorf("?id=%s shows method %q machine %q", one.ID, v, text("f-machine"))
	}
	// A server without a fleet endpoint shows no fleet.
	if fleetServed(t, api) {
		run("fleet", chromedp.WaitReady(chromedp.CSS(`#fleet[data-state="ok"]`)))
	} else {
		run("no fleet", chromedp.WaitReady(chromedp.CSS(`#fleet[data-state="absent"][hidden]`)))
	}
}

// screenshot saves the whole page as PNG at path.
func screenshot(t *testing.T, bctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// issuedMetric is vesta_ids_issued_total of one publish method, whatever
// its label is called.
func issuedMetric(t *testing.T, api *pageClient, method string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^vesta_ids_issued_total\{[a-z_]+="` + method + `"\} (\S+)$`).FindStringSubmatch(api.get("/metrics"))
	if m == nil {
		t.Fatalf("/metrics has no vesta_ids_issued_total for %s", method)
	}
	return m[1]
}

// sumMetric adds up the series of a family whose labels contain match.
func sumMetric(t *testing.T, api *pageClient, family, match string) string {
	t.Helper()
	sum := 0.0
	for _, line := range strings.Split(api.get("/metrics"), "\n") {
		if strings.HasPrefix(line, family+"{") && strings.Contains(line, match) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return strconv.FormatFloat(sum, 'f', -1, 64)
}

// fleetServed tells whether the server answers GET /v1/fleet.
func fleetServed(t *testing.T, api *pageClient) bool {
	t.Helper()
	res, err := api.c.Get(api.base + "/v1/fleet")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode != http.StatusNotFound
}
