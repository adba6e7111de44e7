package browser_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vesta-go/vesta/cmd/vesta/assemble"
	"github.com/vesta-go/vesta/cmd/vesta/assemble/assembletest"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/segment"
)

// TestFleetPageInBrowser: three servers, assembled as `vesta serve`
// assembles them, lease their machine IDs from one real Redis; the page
// of each lists all three, with the machine ID, lease state, version,
// addresses and last renewal each wrote, itself marked. With
// VESTA_SCREENSHOT_DIR=dir it saves the page of one of them under load
// (dir/operator-page.png) and its fleet (dir/operator-page-fleet.png).
func TestFleetPageInBrowser(t *testing.T) {
	rds := redistest.Start(t)
	seg := conf.DefaultConfig().Segment
	seg.Store, seg.Redis.Addrs = conf.SegmentStoreRedis, []string{rds.Addr()}
	assembletest.CreateTag(t, seg, segment.TagInfo{Tag: "orders", MaxID: 1, Step: 1000})
	fleet := assembletest.Fleet(t, rds, 3, "fleetpage", func(cfg *conf.Config) {
		cfg.Segment = seg
		cfg.Machine.Redis.MaxClockSkew = 100 * time.Millisecond // one host's clocks
	})
	byMachine := map[string]*assemble.Assembled{}
	for _, a := range fleet {
		byMachine[strconv.Itoa(int(a.Generator().Machine()))] = a
	}

	bctx := browser(t, 5*time.Minute)
	type row struct {
		Machine string
		Self    bool
		Cells   []string
	}
	for i, a := range fleet {
		if err := chromedp.Do(bctx, chromedp.EmulateViewport(1180, 900), chromedp.Navigate("http://"+a.RESTAddr()+"/"),
			chromedp.WaitReady(chromedp.CSS(`#fleet[data-state="ok"][data-members="3"]`))); err != nil {
			t.Fatalf("server %d's page: %v", i, err)
		}
		rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]row](`Array.from(document.querySelectorAll("#fleet-rows tr")).map(function (tr) {
			return {Machine: tr.getAttribute("data-machine"), Self: tr.className === "self",
				Cells: Array.from(tr.children).map(function (td) { return td.textContent; })};
		})`))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 {
			t.Fatalf("server %d's page lists %d servers: %+v", i, len(rows), rows)
		}
		for _, r := range rows {
			m := byMachine[r.Machine]
			if m == nil {
				t.Fatalf("server %d's page lists machine %s, which no server holds", i, r.Machine)
			}
			// Machine, Lease, Version, Host, RPC, HTTP, Started, Renewed, Expires in.
			if r.Self != (m == a) || r.Cells[1] != "held" || r.Cells[2] == "—" || r.Cells[4] != m.CentralAddr() ||
				r.Cells[5] != m.RESTAddr() || r.Cells[7] == "—" {
				t.Errorf("server %d's page shows machine %s as %+v; want it held at %s and %s, renewed", i, r.Machine, r, m.CentralAddr(), m.RESTAddr())
			}
		}
		title, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("fleet-title")))
		if err != nil || title != "Fleet: 3 servers sharing redis (fleetpage)" {
			t.Errorf("fleet title %q (%v)", title, err)
		}
	}
	if dir := os.Getenv("VESTA_SCREENSHOT_DIR"); dir != "" {
		screenshots(t, bctx, fleet[0], dir)
	}
}

// screenshots puts two minutes of a varying load on a (IDs over RPC and
// REST, sequence numbers, a few bad requests), then saves its page as
// dir/operator-page.png and its fleet as dir/operator-page-fleet.png.
func screenshots(t *testing.T, bctx context.Context, a *assemble.Assembled, dir string) {
	cl := clienttest.Open(t, clienttest.Direct(a.CentralAddr()))
	api := newPageClient(t, "http://"+a.RESTAddr())
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		n := 300 + 200*(i/30%5) + (i%17)*30
		if _, err := cl.NextIDs(context.Background(), 2*n); err != nil {
			t.Fatal(err)
		}
		api.get("/v1/ids?count=" + strconv.Itoa(n))
		api.get("/v1/seq/orders?count=" + strconv.Itoa(1+i%9))
		if i%97 == 0 {
			res, err := api.c.Get(api.base + "/v1/ids/not-an-id")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		}
		time.Sleep(40 * time.Millisecond)
	}
	var one struct {
		ID string `json:"id"`
	}
	api.json("/v1/id", &one)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1180, 900), chromedp.Navigate(api.base+"/?id="+one.ID),
		chromedp.WaitReady(chromedp.CSS(`#fleet[data-state="ok"][data-members="3"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state="ok"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, bctx, filepath.Join(dir, "operator-page.png"))
	png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.ID("fleet")))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "operator-page-fleet.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
