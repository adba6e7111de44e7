package browser_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/masktest"
	"github.com/vesta-go/vesta/rest"
)

// TestPageMasksInBrowser: on a server with a masking key the explain box
// takes a mask of the tenant and kind typed under it and explains the ID
// it hides, shows the mask of every ID it explains (an issued one too), and
// shows the server's refusal of another kind's mask; on a server without a
// key none of it shows.
func TestPageMasksInBrowser(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 33, 8, 0, time.UTC)
	cfg := core.Config{Machine: 1023}
	gen, clock := gentest.Manual(t, cfg, now)
	cfg.Clock = clock
	ms := masktest.Maskers(t, cfg)
	orders, _ := ms.Masker("acme", "ord")
	base := openServer(t, gen, rest.Config{Masks: ms})
	plain := openServer(t, gen, rest.Config{})

	bctx := browser(t, 2*time.Minute)
	b := tab{t, bctx}
	b.do("open",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("mask-fields")),
		chromedp.SendKeys(chromedp.ID("tenant-input"), "acme"),
		chromedp.SendKeys(chromedp.ID("kind-input"), "ord"),
		chromedp.Click(chromedp.ID("issue")),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state="ok"][data-source="issue"]`)),
		chromedp.WaitVisible(chromedp.ID("f-masked")),
	)
	issued, err := core.ParseID(b.text("f-id"))
	if err != nil {
		t.Fatal(err)
	}
	text := orders.Mask(issued)
	if got := b.text("f-masked"); got != text {
		t.Fatalf("the issued ID %d shows the mask %q; want %q", issued, got, text)
	}

	// A mask pasted, in capitals and without its prefix: the ID it hides.
	made, _ := gen.Codec().Make(core.Fields{Method: 2, Machine: 1000, Time: uint64(now.Unix() - core.SortedEpoch.Unix()), Seq: 77})
	pasted := strings.ToUpper(orders.Mask(made)[len("ord_"):])
	b.do("paste a mask",
		chromedp.SetValue(chromedp.ID("id-input"), pasted),
		chromedp.Click(chromedp.ID("explain")),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state="ok"][data-id="`+made.String()+`"]`)),
	)
	if got := b.text("f-masked"); got != orders.Mask(made) || b.text("f-machine") != "1000" || b.text("f-seq") != "77" {
		t.Fatalf("pasted %s: the page shows %q, machine %q, seq %q", pasted, got, b.text("f-machine"), b.text("f-seq"))
	}

	// Another kind's: the server's reason.
	b.do("another kind",
		chromedp.SetValue(chromedp.ID("kind-input"), "usr"),
		chromedp.SetValue(chromedp.ID("id-input"), text),
		chromedp.Click(chromedp.ID("explain")),
		chromedp.WaitReady(chromedp.CSS(`#result[data-state="error"]`)),
	)
	if s := b.text("status"); !strings.Contains(s, `is a mask of kind "ord", not "usr"`) {
		t.Fatalf("another kind's mask: the page says %q", s)
	}

	// Without a key: no mask fields, no masked row, and a mask is not an ID.
	b.do("no key",
		chromedp.Navigate(plain+"/"),
		chromedp.WaitReady(chromedp.CSS(`#server[data-state="ok"]`)),
		chromedp.SetValue(chromedp.ID("id-input"), issued.String()),
		chromedp.Click(chromedp.ID("explain")),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state="ok"][data-id="`+issued.String()+`"]`)),
	)
	hidden, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("mask-fields").hidden && document.getElementById("f-masked").hidden`))
	if err != nil || !hidden {
		t.Fatalf("without a key the mask fields or the masked row show (%v)", err)
	}
	b.do("a mask without a key",
		chromedp.SetValue(chromedp.ID("id-input"), text),
		chromedp.Click(chromedp.ID("explain")),
		chromedp.WaitReady(chromedp.CSS(`#result[data-state="error"]`)),
	)
	if s := b.text("status"); !strings.HasPrefix(s, "Not an ID:") {
		t.Fatalf("a mask on a server without a key: the page says %q", s)
	}
}
