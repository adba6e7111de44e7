package browser_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/rest"
	"github.com/vesta-go/vesta/segment"
)

// The attacks of a web page on a server without a token, as `make run`,
// the image and the manifests start it, in a real browser: a page of
// another site that points <img>, <form>, <iframe>, <script> and fetch at
// the issuing routes, and a DNS-rebinding page, which the browser takes
// for the server's own. Each must leave every ID and number unissued.

// rebindName is the attacker's name; the browser resolves it, and the
// other names below, to 127.0.0.1 (--host-resolver-rules). None is
// loopback to the browser, so none is a potentially trustworthy origin:
// the browser sends no Sec-Fetch-Site to them, as to a server reached over
// plain HTTP by its network name.
const rebindName = "rebind.attacker.example"

// hostRules maps the test's names to loopback.
var hostRules = chromedp.Flag("host-resolver-rules", "MAP "+rebindName+" 127.0.0.1, MAP *.test 127.0.0.1")

// victim is a server without a token on a loopback listener, with the
// tag "orders" loaded.
type victim struct {
	t    *testing.T
	port string
	gen  *core.Generator
	seq  *segment.Sequencer
	reg  *prometheus.Registry
}

func newVictim(t *testing.T, cfg rest.Config) *victim {
	t.Helper()
	seq := ordersSequencer(t, 100000, true)
	gen := gentest.New(t, core.Config{Machine: 1023})
	reg := prometheus.NewRegistry()
	cfg.Registerer, cfg.Sequences = reg, seq
	_, port, _ := net.SplitHostPort(serveLoopback(t, newREST(t, gen, cfg)))
	return &victim{t: t, port: port, gen: gen, seq: seq, reg: reg}
}

// answers counts the server's answers on the issuing routes by status
// (vesta_http_requests_total).
func (v *victim) answers() map[string]int {
	v.t.Helper()
	out := map[string]int{}
	for _, s := range promtest.Series(v.t, v.reg, "vesta_http_requests_total") {
		switch s.Labels["route"] {
		case "/genid", "/v1/id", "/v1/ids", "/v1/seq/:tag", "/api/segment/get/:key", "/api/snowflake/get/:key":
			out[s.Labels["code"]] += int(s.Value)
		}
	}
	return out
}

// waitAnswered waits until at least n requests for the issuing routes
// were answered (each element of an attack page sends one), then a moment
// for stragglers.
func (v *victim) waitAnswered(n int) {
	v.t.Helper()
	waittest.Until(v.t, fmt.Sprintf("%d answers on the issuing routes", n), func() bool {
		total := 0
		for _, k := range v.answers() {
			total += k
		}
		return total >= n
	})
	time.Sleep(500 * time.Millisecond)
}

// untouched fails the test if any ID or number was issued: the generator's
// count, the tag's and the REST counter, and any 2xx on an issuing route.
func (v *victim) untouched() {
	v.t.Helper()
	if n := v.gen.Stats().Issued; n != 0 {
		v.t.Errorf("the generator issued %d IDs", n)
	}
	if st, ok := v.seq.Stats("orders"); !ok || st.Issued != 0 {
		v.t.Errorf("tag orders: %d numbers issued (known %v)", st.Issued, ok)
	}
	for _, s := range promtest.Series(v.t, v.reg, "vesta_ids_issued_total") {
		if s.Value != 0 {
			v.t.Errorf("vesta_ids_issued_total %v = %v", s.Labels, s.Value)
		}
	}
	for code, n := range v.answers() {
		if code != "403" && code != "421" {
			v.t.Errorf("%d answers %s on the issuing routes; want each refused (403 or 421)", n, code)
		}
	}
}

// crossSitePage is another site's page pointing every kind of element a
// page may load without the server's consent at victim's issuing routes;
// it returns the page and the number of requests it makes there.
func crossSitePage(victim string) (string, int) {
	var b strings.Builder
	n := 0
	b.WriteString("<!doctype html><title>not vesta</title>\n")
	for i := range 5 { // the five <img> that burned 50,000 numbers in one visit
		fmt.Fprintf(&b, "<img src=\"%s/v1/seq/orders?count=10000&i=%d\">\n", victim, i)
		n++
	}
	for _, p := range []string{"/v1/ids?count=10000", "/v1/id", "/genid", "/api/segment/get/orders", "/api/snowflake/get/x"} {
		fmt.Fprintf(&b, "<img src=\"%s%s\">\n", victim, p)
		n++
	}
	fmt.Fprintf(&b, "<iframe name=sink></iframe><iframe src=\"%s/v1/seq/orders?count=7\"></iframe>\n", victim)
	fmt.Fprintf(&b, "<form id=f target=sink method=get action=\"%s/v1/seq/orders\"><input name=count value=10000></form>\n", victim)
	fmt.Fprintf(&b, "<link rel=stylesheet href=\"%s/v1/ids?count=9\"><script src=\"%s/genid?s=1\"></script>\n", victim, victim)
	n += 4
	fmt.Fprintf(&b, `<script>
document.getElementById("f").submit();
fetch(%[1]q, {mode: "no-cors"}).catch(function () {});
fetch(%[2]q).catch(function () {});
fetch(%[3]q, {headers: {%[4]q: "x"}}).catch(function () {}); // needs a CORS preflight: never granted
</script>`, victim+"/v1/seq/orders?count=10000&f=1", victim+"/v1/ids?count=10000&f=2", victim+"/v1/seq/orders?count=10000&f=3", rest.ClientHeader)
	n += 3 // the last one's preflight is refused, so its GET is never sent
	return b.String(), n
}

// TestCrossSitePagesIssueNothing: another site's page, loaded in Chromium,
// points <img>, <iframe>, <form>, <link>, <script> and fetch (no-cors,
// cors, and with the header that needs a preflight) at the issuing routes.
// Nothing is issued, whether the browser says where the requests come
// from (Sec-Fetch-Site, to loopback) or not (plain HTTP to a network
// name, where only the User-Agent tells a browser).
func TestCrossSitePagesIssueNothing(t *testing.T) {
	for _, tc := range []struct {
		name          string
		page, victim  string // host names
		allowedHosts  []string
		fetchMetadata bool
	}{
		{"loopback addresses", "127.0.0.1", "127.0.0.1", nil, true},
		{"localhost", "localhost", "localhost", nil, true},
		{"network names", "attacker.test", "vesta.test", []string{"vesta.test"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVictim(t, rest.Config{AllowedHosts: tc.allowedHosts})
			// A probe on the victim's host name, another port, records what
			// the browser says of a cross-site <img> there: the case is the
			// one the test means.
			sfs := make(chan string, 1)
			probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case sfs <- r.Header.Get("Sec-Fetch-Site"):
				default:
				}
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(probe.Close)
			_, pport, _ := net.SplitHostPort(probe.Listener.Addr().String())
			html, n := crossSitePage("http://" + net.JoinHostPort(tc.victim, v.port))
			html += fmt.Sprintf("<img src=\"http://%s/probe\">", net.JoinHostPort(tc.victim, pport))
			attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(w, html)
			}))
			t.Cleanup(attacker.Close)
			_, aport, _ := net.SplitHostPort(attacker.Listener.Addr().String())

			bctx := browser(t, 60*time.Second, hostRules)
			if _, err := chromedp.Run(bctx, chromedp.Navigate("http://"+net.JoinHostPort(tc.page, aport)+"/")); err != nil {
				t.Fatal(err)
			}
			v.waitAnswered(n)
			v.untouched()
			select {
			case site := <-sfs:
				if (site != "") != tc.fetchMetadata {
					t.Errorf("the browser sent Sec-Fetch-Site %q to %s; the case assumes it sends one: %v", site, tc.victim, tc.fetchMetadata)
				}
			case <-time.After(10 * time.Second):
				t.Error("the probe <img> was never requested")
			}
		})
	}
}

// rebinder plays the attacker's name once its DNS answer has changed to
// the victim's address: the browser connects to it for every request of
// the origin http://rebind.attacker.example:PORT. The request line of each
// connection decides: GET /attack is answered with page (the attacker's,
// as served before the change) and the connection closed, so that the
// page's own requests come on new connections; any other is passed byte
// for byte to the victim, as a browser's request reaches it once the
// name resolves to it.
func rebinder(t *testing.T, page, victimAddr string) (port string) {
	t.Helper()
	ln := nettest.Loopback(t)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if conns == nil {
			c.Close()
			return false
		}
		conns = append(conns, c)
		return true
	}
	conns = []net.Conn{}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !track(c) {
				return
			}
			wg.Go(func() { rebind(c, page, victimAddr, track) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port
}

// rebind serves one connection of rebinder.
func rebind(c net.Conn, page, victimAddr string, track func(net.Conn) bool) {
	defer c.Close()
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	if strings.HasPrefix(line, "GET /attack ") {
		for { // the headers, unread otherwise
			h, err := br.ReadString('\n')
			if err != nil || h == "\r\n" {
				break
			}
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(page), page)
		return
	}
	vc, err := net.Dial("tcp", victimAddr)
	if err != nil || !track(vc) {
		return
	}
	defer vc.Close()
	if _, err := io.WriteString(vc, line); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(c, vc) // the victim's answers, to the browser
		c.Close()
		close(done)
	}()
	io.Copy(vc, br) // the browser's bytes, buffered ones first
	vc.Close()
	<-done
}

// rebindPage calls, as the attacker's page, the victim's routes under the
// attacker's origin, with the header a page of the server's own origin
// sends (it is same-origin to the browser: nothing stops it), and writes
// each answer's status and body into #out.
const rebindPage = `<!doctype html><title>rebind</title><pre id=out></pre><script>
(async function () {
  var out = [];
  for (var p of ["/v1/seq/orders?count=3", "/v1/ids?count=100", "/genid", "/api/segment/get/orders",
                 "/api/snowflake/get/x", "/v1/status", "/metrics", "/"]) {
    try {
      var r = await fetch(p, {headers: {"Vesta-Client": "page"}, cache: "no-store"});
      out.push(p + " " + r.status + " " + (await r.text()).slice(0, 200).replace(/\n/g, " "));
    } catch (e) { out.push(p + " error " + e); }
  }
  var o = document.getElementById("out");
  o.textContent = out.join("\n");
  o.setAttribute("data-done", "1");
})();
</script>`

// TestDNSRebindingRefused: a DNS-rebinding page, to which the browser
// grants the victim's answers as its own origin's, gets 421 for every
// route it asks (the probes aside, which it does not), reads nothing of
// the server's state, and issues nothing; so does a program that sends
// the attacker's name as Host.
func TestDNSRebindingRefused(t *testing.T) {
	v := newVictim(t, rest.Config{})
	port := rebinder(t, rebindPage, net.JoinHostPort("127.0.0.1", v.port))
	bctx := browser(t, 60*time.Second, hostRules)
	if _, err := chromedp.Run(bctx, chromedp.Navigate("http://"+net.JoinHostPort(rebindName, port)+"/attack")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.WaitReady(chromedp.CSS(`#out[data-done="1"]`))); err != nil {
		t.Fatal(err)
	}
	out, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("out")))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 8 {
		t.Fatalf("the page read:\n%s", out)
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) < 2 || f[1] != "421" || !strings.Contains(l, "rest.allowed_hosts") {
			t.Errorf("the rebinding page read %q; want 421 naming rest.allowed_hosts", l)
		}
	}

	// A program sending the attacker's name, as the browser did.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	q, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+v.port+"/v1/seq/orders?count=3", nil)
	q.Host = rebindName
	res, err := client.Do(q)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host %s: %d %s; want 421", rebindName, res.StatusCode, b)
	}
	v.untouched()
	if a := v.answers(); a["421"] < 6 {
		t.Errorf("answers on the issuing routes: %v; want the page's five and the program's one refused with 421", a)
	}
}

// TestPageWithoutToken: the page at / of a server without a token issues
// an ID in the browser, whether the browser says its requests are
// same-origin (loopback) or not (a network name over plain HTTP, where the
// page's Vesta-Client header is what lets it through).
func TestPageWithoutToken(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "vesta.test"} {
		t.Run(host, func(t *testing.T) {
			v := newVictim(t, rest.Config{AllowedHosts: []string{"vesta.test"}})
			bctx := browser(t, 60*time.Second, hostRules)
			if err := chromedp.Do(bctx,
				chromedp.Navigate("http://"+net.JoinHostPort(host, v.port)+"/"),
				chromedp.WaitVisible(chromedp.ID("issue")),
				chromedp.Click(chromedp.ID("issue")),
				// Done either way: an error shows in #status at once.
				chromedp.WaitReady(chromedp.CSS(`#result[data-state="ok"][data-source="issue"], #result[data-state="error"]`)),
			); err != nil {
				t.Fatalf("issuing from the page: %v", err)
			}
			if state, _ := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.ID("result"), "data-state")); state.Value != "ok" {
				status, _ := chromedp.Run(bctx, chromedp.Text(chromedp.ID("status")))
				t.Fatalf("issuing from the page failed: %q", status)
			}
			id, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("f-id")))
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.ParseUint(id, 10, 64)
			if err != nil || v.gen.Codec().Explain(core.ID(n)).Method != core.REST || v.gen.Stats().Issued != 1 {
				t.Errorf("the page shows %q; the generator issued %d", id, v.gen.Stats().Issued)
			}
		})
	}
}
