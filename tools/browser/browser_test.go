package browser_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/rest"
)

// TestMain fails the package if the test leaves a goroutine behind: the
// server and the browser it starts are stopped by it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const token = "s3cret-Token_42-rest"

// chromiumPath finds the browser for TestPageInBrowser: $VESTA_CHROMIUM,
// else chromium on PATH (Debian's package). The test skips only under go
// test -short: otherwise, in CI or not, a missing browser is a failure
// that says how to install it.
func chromiumPath(t testing.TB) string {
	t.Helper()
	testkit.SkipShort(t, "chromium")
	if p := os.Getenv("VESTA_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("chromium not found (looked for $VESTA_CHROMIUM, chromium, chromium-browser, google-chrome on PATH); " +
		"the page's browser test needs it: run scripts/deps.sh (installs Debian's chromium) or set VESTA_CHROMIUM")
	return ""
}

// TestPageInBrowser drives the page in headless Chromium: paste an ID above
// 2^63, read its fields off the DOM and compare them with the API; then
// issue a fresh ID and check it decodes to the generator's now and method
// rest. The token field is exercised too.
func TestPageInBrowser(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	gen, _ := gentest.Manual(t, core.Config{Layout: core.Vesta, Machine: 1022, Version: 1}, now)
	base := serveInProcess(t, newREST(t, gen, rest.Config{Token: token}))

	bctx := browser(t, 30*time.Second)

	fieldIDs := []string{"f-id", "f-timestamp", "f-method-name", "f-method", "f-type-name", "f-type",
		"f-machine", "f-time", "f-seq", "f-version"}
	readFields := func(stage string) map[string]string {
		t.Helper()
		got := make(map[string]string, len(fieldIDs))
		for _, id := range fieldIDs {
			v, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID(id)))
			if err != nil {
				t.Fatalf("browser (%s): reading #%s: %v", stage, id, err)
			}
			got[id] = v
		}
		return got
	}
	do := func(stage string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("browser (%s): %v", stage, err)
		}
	}

	// A wrong token: the page shows the server's refusal.
	const pasted = "13835058055282163711" // version 1, every field at its maximum: above 2^63
	do("wrong token",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "wrong"),
		chromedp.SetValue(chromedp.ID("id-input"), pasted),
		chromedp.Click(chromedp.ID("explain")),
		chromedp.WaitReady(chromedp.CSS(`#result[data-state="error"]`)), // the section stays hidden
	)
	status, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("status")))
	if err != nil || !strings.Contains(status, "unauthenticated") {
		t.Fatalf("with a wrong token the page says %q (%v), want the 401's code", status, err)
	}

	// The right token, and the pasted ID explained.
	do("paste",
		chromedp.SetValue(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("explain")),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state="ok"][data-id="`+pasted+`"]`)),
	)
	fields := readFields("paste")
	// Its time field is decades after now: no generator of this layout
	// and epoch issued it, and the holder line says so (the fields above
	// it are still shown).
	if holder, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("f-holder"))); err != nil || !strings.Contains(holder, "after now") {
		t.Errorf("the pasted ID's holder line shows %q (%v); want that its time lies after now", holder, err)
	}
	want := apiExplain(t, base, pasted)
	for _, id := range fieldIDs {
		if fields[id] != want[id] {
			t.Errorf("pasted %s: #%s shows %q, the API says %q", pasted, id, fields[id], want[id])
		}
	}

	// Issue a fresh one.
	do("issue",
		chromedp.Click(chromedp.ID("issue")),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state="ok"][data-source="issue"]`)),
	)
	fields = readFields("issue")
	id, err := strconv.ParseUint(fields["f-id"], 10, 64)
	if err != nil || id < 1<<63 {
		t.Fatalf("issued id %q: want a version-1 decimal above 2^63", fields["f-id"])
	}
	e := gen.Codec().Explain(core.ID(id))
	if e.Method != core.REST || !e.Instant.Equal(now) || e.Machine != 1022 {
		t.Fatalf("issued %d explains to %+v; want method rest at %s on machine 1022", id, e, now)
	}
	if fields["f-method-name"] != "rest" || fields["f-timestamp"] != now.Format(time.RFC3339) {
		t.Fatalf("the page shows method %q at %q; want rest at %s", fields["f-method-name"], fields["f-timestamp"], now.Format(time.RFC3339))
	}
	// A server without a hold history says so on the holder line.
	if holder, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("f-holder"))); err != nil || !strings.Contains(holder, "keeps no hold history") {
		t.Errorf("the holder line shows %q (%v); want that this server keeps no hold history", holder, err)
	}
	want = apiExplain(t, base, fields["f-id"])
	for _, id := range fieldIDs {
		if fields[id] != want[id] {
			t.Errorf("issued: #%s shows %q, the API says %q", id, fields[id], want[id])
		}
	}
}

// apiExplain is GET /v1/ids/{id} as the page's field texts.
func apiExplain(t *testing.T, base, id string) map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	newPageClient(t, base).json("/v1/ids/"+id, &m)
	out := map[string]string{}
	for k, v := range m {
		out["f-"+strings.ReplaceAll(k, "_", "-")] = strings.Trim(string(v), `"`)
	}
	return out
}
