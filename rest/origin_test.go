package rest_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/rest"
	"github.com/vesta-go/vesta/segment"
)

// countingSeqs counts the sequence numbers handed out, whatever route
// asked for them.
type countingSeqs struct {
	segment.Sequences
	n atomic.Int64
}

func (c *countingSeqs) Next(ctx context.Context, tag string) (int64, error) {
	v, err := c.Sequences.Next(ctx, tag)
	if err == nil {
		c.n.Add(1)
	}
	return v, err
}

func (c *countingSeqs) NextN(ctx context.Context, tag string, n int) ([]int64, error) {
	vs, err := c.Sequences.NextN(ctx, tag, n)
	c.n.Add(int64(len(vs)))
	return vs, err
}

// issuingServer is a server with a tag "orders", and a function telling
// how many IDs and sequence numbers it has handed out so far.
func issuingServer(t *testing.T, cfg rest.Config) (*rest.Server, func() uint64) {
	t.Helper()
	store := segment.NewMemStore()
	if err := store.Create(context.Background(), segment.TagInfo{Tag: "orders", MaxID: 1, Step: 1000}); err != nil {
		t.Fatal(err)
	}
	scfg := segment.DefaultConfig()
	scfg.RefreshTags = -1
	seqs := &countingSeqs{Sequences: segtest.Open(t, store, scfg)}
	gen, _ := vestaGen(t)
	cfg.Sequences = seqs
	s := newServer(t, gen, cfg)
	return s, func() uint64 { return gen.Stats().Issued + uint64(seqs.n.Load()) }
}

// wideListener is a loopback listener that says it listens on every
// interface, as a server bound to ":7080" does.
type wideListener struct{ net.Listener }

func (l wideListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4zero, Port: l.Listener.Addr().(*net.TCPAddr).Port}
}

// TestHostCheck: which Host each policy answers, on every route but the
// probes; a refused one is a 421 naming rest.allowed_hosts, JSON or (on
// the Vesta routes) text, and issues nothing.
func TestHostCheck(t *testing.T) {
	hostname, _ := os.Hostname()
	loopbackOK := []string{"", "localhost", "localhost:7080", "LOCALHOST.", "app.localhost:8080", "127.0.0.1",
		"127.0.0.1:7080", "127.8.9.10", "[::1]", "[::1]:7080", "[::ffff:127.0.0.1]:1"}
	foreign := []string{"rebind.attacker.example", "rebind.attacker.example:7080", "127.0.0.1.nip.io",
		"localhost.attacker.example", "example.com", "vesta.ns.svc", "evil-ids.example.com"}
	wideOK := []string{"10.0.0.5:7080", "[fd00::1]:7080", "192.0.2.1", "vesta:7080", "vesta-0", "vesta.vesta.svc.cluster.local:7080",
		"db.internal", "printer.local", "nas.home.arpa", hostname, strings.ToUpper(hostname) + ":1"}
	wideRefused := []string{"10.0.0.5.nip.io", "vesta.ns", "ids.example.com"}

	for _, tc := range []struct {
		name     string
		cfg      rest.Config
		ln       func(testing.TB) net.Listener // nil: Handler alone
		ok, nope []string
	}{
		{"loopback", rest.Config{}, nettest.Loopback, loopbackOK, append(append([]string{}, foreign...), wideOK[:6]...)},
		{"wide listener", rest.Config{}, func(t testing.TB) net.Listener { return wideListener{nettest.Loopback(t)} },
			append(append([]string{}, loopbackOK...), wideOK...), append(append([]string{}, foreign...), wideRefused...)},
		{"handler alone", rest.Config{}, nil, append(append([]string{}, loopbackOK...), wideOK...), append(append([]string{}, foreign...), wideRefused...)},
		{"listed", rest.Config{AllowedHosts: []string{"ids.example.com", "*.corp.example", "10.9.8.7", "[fd00::2]"}}, nettest.Loopback,
			append([]string{"ids.example.com", "IDS.example.com.:443", "a.corp.example", "a.b.corp.example:1", "10.9.8.7:80", "[fd00::2]:7080"}, loopbackOK...),
			[]string{"corp.example", "evil-ids.example.com", "acorp.example", "10.9.8.6", "rebind.attacker.example"}},
		{"any, with a token", rest.Config{AllowedHosts: []string{"*"}, Token: token}, nettest.Loopback,
			append(append([]string{}, foreign...), loopbackOK...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, issued := issuingServer(t, tc.cfg)
			if tc.ln != nil {
				nettest.Serve(t, s, tc.ln(t), nil) // in-process requests meet the Host policy of the listener
			}
			send := func(path, host string) response {
				q := req(http.MethodGet, path, "", "")
				q.Host = host
				if tc.cfg.Token != "" {
					q.Header.Set("Authorization", "Bearer "+token)
				}
				return doHandler(s, q)
			}
			for _, host := range tc.ok {
				if r := send("/v1/seq/orders?count=3", host); r.Status != http.StatusOK {
					t.Errorf("Host %q: %d %s; want 200", host, r.Status, r.Body)
				}
			}
			for i, host := range tc.nope {
				// An allowed Host just before: the server remembers the
				// last one it allowed, and must still refuse this one.
				if r := send("/v1/info", tc.ok[i%len(tc.ok)]); r.Status != http.StatusOK {
					t.Errorf("Host %q: %d %s; want 200", tc.ok[i%len(tc.ok)], r.Status, r.Body)
				}
				before := issued()
				for _, path := range []string{"/v1/seq/orders?count=3", "/v1/ids?count=5", "/api/segment/get/orders", "/v1/info", "/", "/metrics", "/openapi.json", "/nowhere"} {
					wantJSONError(t, send(path, host), http.StatusMisdirectedRequest, "misdirected_request", "rest.allowed_hosts")
				}
				wantTextError(t, send("/genid", host), http.StatusMisdirectedRequest, "misdirected_request", "rest.allowed_hosts")
				if n := issued() - before; n != 0 {
					t.Errorf("Host %q: %d IDs or numbers issued to refused requests", host, n)
				}
				for _, path := range []string{"/healthz", "/readyz"} {
					if r := send(path, host); r.Status != http.StatusOK {
						t.Errorf("%s with Host %q: %d %s; want 200 (probes answer any Host)", path, host, r.Status, r.Body)
					}
				}
			}
		})
	}
}

// TestHostCheckOverTCP: what a DNS-rebinding page sends, over a real
// connection: refused, nothing issued; the server's own name answers.
func TestHostCheckOverTCP(t *testing.T) {
	s, issued := issuingServer(t, rest.Config{})
	base := serve(t, s)
	for host, want := range map[string]int{"rebind.attacker.example": http.StatusMisdirectedRequest, "": http.StatusOK} {
		q := newReq(t, http.MethodGet, base+"/v1/seq/orders?count=3")
		if host != "" {
			q.Host = host + base[strings.LastIndexByte(base, ':'):]
		}
		before := issued()
		resp, body := do(t, q)
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d %s; want %d", q.Host, resp.StatusCode, body, want)
		}
		if want != http.StatusOK && issued() != before {
			t.Errorf("Host %q: %d numbers issued", q.Host, issued()-before)
		}
	}
}

// TestCrossSite: which browser headers the issuing routes of a server
// without a token refuse (403, nothing issued); programs, the server's own
// pages and typed URLs pass; the other routes answer cross-site requests
// (a link to the page, a read the browser keeps from the caller).
func TestCrossSite(t *testing.T) {
	const browserUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36"
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		host   string // "" is localhost:7080
		header http.Header
		want   int
	}{
		{"curl", "", h("User-Agent", "curl/8.5.0", "Accept", "*/*"), 200},
		{"Go", "", h("User-Agent", "Go-http-client/1.1"), 200},
		{"Java", "", h("User-Agent", "Java/17.0.9", "Accept", "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"), 200},
		{"OkHttp", "", h("User-Agent", "okhttp/4.12.0"), 200},
		{"no headers", "", h(), 200},
		{"same-origin fetch", "", h("User-Agent", browserUA, "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors"), 200},
		{"typed in the address bar", "", h("User-Agent", browserUA, "Sec-Fetch-Site", "none", "Sec-Fetch-Mode", "navigate"), 200},
		{"own page over plain HTTP", "", h("User-Agent", browserUA, rest.ClientHeader, "page"), 200},
		{"own origin", "", h("User-Agent", browserUA, "Sec-Fetch-Site", "same-origin", "Origin", "http://localhost:7080"), 200},
		{"own origin, TLS proxy", "ids.example.com", h("Origin", "https://ids.example.com"), 200},
		{"own origin, default port", "localhost", h("Origin", "http://localhost"), 200},

		{"img from a sibling port", "", h("User-Agent", browserUA, "Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image"), 403},
		{"form from another site", "", h("User-Agent", browserUA, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"), 403},
		{"cross-site with the header", "", h("User-Agent", browserUA, "Sec-Fetch-Site", "cross-site", rest.ClientHeader, "x"), 403},
		{"unknown Sec-Fetch-Site", "", h("Sec-Fetch-Site", "elsewhere"), 403},
		{"cors fetch from another port", "", h("User-Agent", browserUA, "Sec-Fetch-Site", "same-site", "Origin", "http://localhost:7081"), 403},
		{"foreign Origin", "", h("Origin", "http://attacker.example"), 403},
		{"foreign Origin, own page", "", h("Origin", "http://attacker.example", rest.ClientHeader, "x"), 403},
		{"malformed Origin", "", h("Origin", "http://localhost:7080x"), 403},
		{"Origin with a path", "", h("Origin", "http://localhost:7080/"), 403},
		{"Origin null", "", h("Origin", "null"), 403},
		{"two Origins", "", h("Origin", "http://localhost:7080", "Origin", "http://attacker.example"), 403},
		{"img over plain HTTP", "", h("User-Agent", browserUA, "Accept", "image/avif,image/webp,*/*;q=0.8"), 403},
		{"no-cors fetch over plain HTTP", "", h("User-Agent", "Mozilla/5.0 (Macintosh) Safari/605.1.15", "Accept", "*/*"), 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, issued := issuingServer(t, rest.Config{AllowedHosts: []string{"ids.example.com"}})
			withToken, _ := issuingServer(t, rest.Config{Token: token})
			for _, path := range []string{"/genid", "/v1/id", "/v1/ids?count=3", "/v1/seq/orders?count=3", "/api/segment/get/orders", "/api/snowflake/get/x"} {
				q := req(http.MethodGet, path, "", "")
				q.Host = "localhost:7080"
				if tc.host != "" {
					q.Host = tc.host
				}
				for k, v := range tc.header {
					q.Header[k] = v
				}
				before := issued()
				r := doHandler(s, q)
				if r.Status != tc.want {
					t.Fatalf("%s: %d %s; want %d", path, r.Status, r.Body, tc.want)
				}
				if tc.want == http.StatusForbidden {
					if path == "/genid" {
						wantTextError(t, r, http.StatusForbidden, "permission_denied", "rest.token")
					} else {
						wantJSONError(t, r, http.StatusForbidden, "permission_denied", rest.ClientHeader)
					}
					if n := issued() - before; n != 0 {
						t.Fatalf("%s: %d issued to a refused request", path, n)
					}
				}
				// With a token the token decides: a browser never adds it
				// to another site's request.
				q.Host = "localhost:7080"
				if r := doHandler(withToken, q); r.Status != http.StatusUnauthorized {
					t.Fatalf("%s, server with a token, no token sent: %d; want 401", path, r.Status)
				}
				q.Header.Set("Authorization", "Bearer "+token)
				if r := doHandler(withToken, q); r.Status != http.StatusOK {
					t.Fatalf("%s, server with a token, sent: %d %s; want 200", path, r.Status, r.Body)
				}
			}
			for _, path := range []string{"/", "/v1/info", "/v1/ids/1", "/expid?id=1", "/openapi.json"} {
				q := req(http.MethodGet, path, "", "")
				for k, v := range tc.header {
					q.Header[k] = v
				}
				if r := doHandler(s, q); r.Status != http.StatusOK {
					t.Fatalf("%s (issues nothing): %d %s; want 200", path, r.Status, r.Body)
				}
			}
		})
	}
}

// TestIssuingRoutes walks the router: every route that hands out an ID or
// a number (found by calling it, so a new one cannot be forgotten) sends
// Cache-Control: no-store on its answers and errors, and refuses a
// cross-site browser request, a browser's request that does not say where
// it comes from and a foreign Host, issuing nothing to them.
func TestIssuingRoutes(t *testing.T) {
	s, issued := issuingServer(t, rest.Config{MaxBatch: 100})
	params := strings.NewReplacer(":tag", "orders", ":key", "orders", ":id", "1")
	var found []string
	for _, rt := range s.Handler().(*echo.Echo).Routes() {
		methods := []string{rt.Method}
		if rt.Method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		for _, method := range methods {
			path := params.Replace(rt.Path)
			call := func(query string, header ...string) response {
				q := req(method, path+query, "application/json", `{"time":1,"seq":1}`)
				for i := 0; i < len(header); i += 2 {
					q.Header.Set(header[i], header[i+1])
				}
				return doHandler(s, q)
			}
			before := issued()
			r := call("?count=2&id=1&time=1&seq=1")
			if issued() == before {
				continue
			}
			where := method + " " + rt.Path
			found = append(found, where)
			if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("%s issues: %d, Cache-Control %q; want 200 no-store", where, r.Status, r.Header.Get("Cache-Control"))
			}
			for _, bad := range [][]string{
				{"Sec-Fetch-Site", "cross-site"},
				{"Sec-Fetch-Site", "same-site"},
				{"Origin", "http://attacker.example"},
				{"User-Agent", "Mozilla/5.0"},
			} {
				before := issued()
				r := call("?count=2&id=1&time=1&seq=1", bad...)
				if r.Status != http.StatusForbidden || issued() != before || r.Header.Get("Cache-Control") != "no-store" {
					t.Errorf("%s with %s: %s: %d, %d issued, Cache-Control %q; want 403, none, no-store",
						where, bad[0], bad[1], r.Status, issued()-before, r.Header.Get("Cache-Control"))
				}
			}
			q := req(method, path+"?count=2", "", "")
			q.Host = "rebind.attacker.example"
			if before := issued(); doHandler(s, q).Status != http.StatusMisdirectedRequest || issued() != before {
				t.Errorf("%s with a foreign Host: answered, or issued", where)
			}
			// An error of the route (its count out of range, or a tag
			// unknown) is no-store too.
			if !strings.Contains(rt.Path, "snowflake") && !strings.HasSuffix(rt.Path, "/id") && rt.Path != "/genid" {
				path = strings.NewReplacer(":tag", "nope", ":key", "nope").Replace(rt.Path)
				if r := call("?count=0"); r.Status == http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
					t.Errorf("%s, an error: %d, Cache-Control %q; want an error, no-store", where, r.Status, r.Header.Get("Cache-Control"))
				}
			}
		}
	}
	// The walk found what the documentation lists, so it did call them.
	if len(found) != 12 {
		t.Errorf("issuing routes found: %v; want the 6 GET routes (/genid, /v1/id, /v1/ids, /v1/seq, Leaf's two) and their HEAD", found)
	}
}

// TestPreflightNeverGranted: the cross-site check holds only because no
// page of another origin can send ClientHeader or a token, and it could
// if a CORS preflight were granted: none is.
func TestPreflightNeverGranted(t *testing.T) {
	s, issued := issuingServer(t, rest.Config{})
	for _, path := range []string{"/v1/id", "/v1/seq/orders", "/genid", "/api/segment/get/orders"} {
		q := req(http.MethodOptions, path, "", "")
		q.Header.Set("Origin", "http://attacker.example")
		q.Header.Set("Access-Control-Request-Method", "GET")
		q.Header.Set("Access-Control-Request-Headers", strings.ToLower(rest.ClientHeader)+", authorization")
		r := doHandler(s, q)
		for k := range r.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("OPTIONS %s preflight: answered %s: %q", path, k, r.Header.Get(k))
			}
		}
	}
	if issued() != 0 {
		t.Errorf("preflights issued %d", issued())
	}
}
