package rest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/rest"
)

const token = "s3cret-Token_42-rest"

func TestAuth(t *testing.T) {
	gen, _ := vestaGen(t)
	idRoutes := []string{"/genid", "/expid?id=1", "/transtime?time=1", "/makeid?time=1&seq=1",
		"/v1/id", "/v1/ids?count=2", "/v1/ids/1", "/v1/transtime?time=1", "/v1/info"}
	openRoutes := []string{"/healthz", "/readyz", "/metrics", "/openapi.json", "/"}

	on := newServer(t, gen, rest.Config{Token: token})
	rest.UnlimitAuth(on) // 36 wrong tokens from one peer: TestAuthFailuresLimited is about the limit
	for _, c := range callers(t, on) {
		t.Run("on/"+c.name, func(t *testing.T) {
			for _, path := range idRoutes {
				for _, h := range []string{"", "Bearer wrong", "Basic " + token, "Bearer " + token + "x", token} {
					q := req(http.MethodGet, path, "", "")
					if h != "" {
						q.Header.Set("Authorization", h)
					}
					r := c.do(t, q)
					if r.Status != http.StatusUnauthorized || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
						t.Fatalf("%s with %q: %d (WWW-Authenticate %q), want 401 Bearer", path, h, r.Status, r.Header.Get("WWW-Authenticate"))
					}
					if strings.Contains(r.Body, token) {
						t.Fatalf("%s: the answer shows the token: %s", path, r.Body)
					}
					if strings.HasPrefix(path, "/v1/") {
						wantJSONError(t, r, http.StatusUnauthorized, "unauthenticated", "token")
					} else {
						wantTextError(t, r, http.StatusUnauthorized, "unauthenticated", "token")
					}
				}
				for _, h := range []string{"Bearer " + token, "bearer " + token} {
					q := req(http.MethodGet, path, "", "")
					q.Header.Set("Authorization", h)
					if r := c.do(t, q); r.Status != http.StatusOK {
						t.Fatalf("%s with the token: %d %s", path, r.Status, r.Body)
					}
				}
			}
			q := req(http.MethodPost, "/v1/make", "application/json", `{"time":1,"seq":1}`)
			if r := c.do(t, q); r.Status != http.StatusUnauthorized {
				t.Fatalf("POST /v1/make without token: %d", r.Status)
			}
			for _, path := range openRoutes {
				if r := c.do(t, req(http.MethodGet, path, "", "")); r.Status != http.StatusOK {
					t.Fatalf("%s without token: %d %s; want open", path, r.Status, r.Body)
				}
			}
		})
	}

	off := newServer(t, gen, rest.Config{})
	for _, path := range append(idRoutes, openRoutes...) {
		q := req(http.MethodGet, path, "", "")
		q.Header.Set("Authorization", "Bearer anything")
		if r := doHandler(off, q); r.Status != http.StatusOK {
			t.Errorf("no token configured: %s = %d %s", path, r.Status, r.Body)
		}
	}
}

func TestReadiness(t *testing.T) {
	gen, _ := vestaGen(t)
	var extra atomic.Pointer[error]
	s := newServer(t, gen, rest.Config{Ready: func() error {
		if e := extra.Load(); e != nil {
			return *e
		}
		return nil
	}})
	for _, c := range callers(t, s) {
		t.Run(c.name, func(t *testing.T) {
			if r := c.do(t, req("GET", "/readyz", "", "")); r.Status != 200 || strings.TrimSpace(r.Body) != `{"status":"ready"}` {
				t.Fatalf("/readyz = %d %s, want 200 ready", r.Status, r.Body)
			}

			gen.Control().Fence(errLease)
			wantJSONError(t, c.do(t, req("GET", "/readyz", "", "")), 503, "lease_lost", "lease lost")
			wantJSONError(t, c.do(t, req("GET", "/v1/id", "", "")), 503, "lease_lost", "fenced")
			wantJSONError(t, c.do(t, req("GET", "/v1/ids?count=3", "", "")), 503, "lease_lost", "fenced")
			wantTextError(t, c.do(t, req("GET", "/genid", "", "")), 503, "lease_lost", "fenced")
			if r := c.do(t, req("GET", "/healthz", "", "")); r.Status != 200 {
				t.Fatalf("/healthz while fenced = %d; the process is alive", r.Status)
			}
			// Decoding needs no issuing.
			if r := c.do(t, req("GET", "/v1/ids/2610813175020394494", "", "")); r.Status != 200 {
				t.Fatalf("explain while fenced = %d", r.Status)
			}
			gen.Control().Unfence()
			if r := c.do(t, req("GET", "/readyz", "", "")); r.Status != 200 {
				t.Fatalf("/readyz after Unfence = %d %s", r.Status, r.Body)
			}

			notYet := errors.New("lease not yet acquired")
			extra.Store(&notYet)
			wantJSONError(t, c.do(t, req("GET", "/readyz", "", "")), 503, "unavailable", "lease not yet acquired")
			extra.Store(nil)
		})
	}
}

func TestClosedGenerator(t *testing.T) {
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{})
	gen.Close()
	wantJSONError(t, get(t, s.Handler(), "/readyz"), 503, "unavailable", "closed")
	wantJSONError(t, get(t, s.Handler(), "/v1/id"), 503, "unavailable", "closed")
	wantTextError(t, get(t, s.Handler(), "/genid"), 503, "unavailable", "closed")
}

func TestClockErrors(t *testing.T) {
	// A sorted-layout generator whose clock reads before its epoch (2025).
	gen, _ := newGen(t, core.Config{})
	s := newServer(t, gen, rest.Config{})
	wantJSONError(t, get(t, s.Handler(), "/v1/id"), 503, "clock", "before the epoch")
	wantJSONError(t, get(t, s.Handler(), "/readyz"), 503, "clock", "before the epoch")
}

// TestRequestTimeout: a request waiting for the clock (sequence exhausted,
// no borrowing, a clock that never moves) ends at the request timeout
// with a 503 rather than hanging.
func TestRequestTimeout(t *testing.T) {
	gen, _ := newGen(t, core.Config{Layout: core.Vesta, Type: core.MinGranularity, Machine: 1022})
	s := newServer(t, gen, rest.Config{RequestTimeout: 50 * time.Millisecond})
	wantJSONError(t, get(t, s.Handler(), "/v1/ids?count=1025"), 503, "unavailable", "timed out")
	if r := get(t, s.Handler(), "/healthz"); r.Status != 200 {
		t.Fatalf("/healthz after a timeout = %d", r.Status)
	}
}

// TestPanic: a panic inside a handler (here the Ready hook) is a 500
// "internal" with nothing of the panic in the answer, logged with its
// stack, and the server keeps serving.
func TestPanic(t *testing.T) {
	gen, _ := vestaGen(t)
	logs := &syncBuffer{}
	s := newServer(t, gen, rest.Config{Ready: func() error { panic("boom at secret place") },
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	for _, c := range callers(t, s) {
		r := c.do(t, req("GET", "/readyz", "", ""))
		wantJSONError(t, r, 500, "internal", "internal error")
		if strings.Contains(r.Body, "boom") || strings.Contains(r.Body, "goroutine") {
			t.Fatalf("the answer shows the panic: %s", r.Body)
		}
		if r := c.do(t, req("GET", "/v1/id", "", "")); r.Status != 200 {
			t.Fatalf("after a panic: /v1/id = %d", r.Status)
		}
	}
	if l := logs.String(); !strings.Contains(l, "boom at secret place") || !strings.Contains(l, "stack") {
		t.Fatalf("the panic is not logged with its stack:\n%s", l)
	}
}

func TestAccessLog(t *testing.T) {
	gen, _ := vestaGen(t)
	logs := &syncBuffer{}
	debug := &slog.HandlerOptions{Level: slog.LevelDebug} // the access log is at Debug
	s := newServer(t, gen, rest.Config{Token: token, Logger: slog.New(slog.NewJSONHandler(logs, debug))})
	q := req("GET", "/v1/ids/2610813175020394494", "", "")
	q.Header.Set("Authorization", "Bearer "+token)
	doHandler(s, q)
	doHandler(s, req("GET", "/nope", "", ""))
	l := logs.String()
	for _, want := range []string{`"route":"/v1/ids/:id"`, `"status":200`, `"route":"unmatched"`, `"status":404`, `"path":"/nope"`} {
		if !strings.Contains(l, want) {
			t.Errorf("access log lacks %s:\n%s", want, l)
		}
	}
	if strings.Contains(l, token) {
		t.Errorf("the token is logged:\n%s", l)
	}
}

func TestMetrics(t *testing.T) {
	gen, _ := vestaGen(t)
	reg := prometheus.NewRegistry()
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "vesta_other_total", Help: "another metric of the process"})
	reg.MustRegister(other)
	// The central server, run beside REST by `vesta serve`, registers the
	// shared issuance counter first.
	cs, err := central.NewServer(gen, central.Config{Registerer: reg})
	testkit.Closed(t, "central.NewServer", cs, err)

	s := newServer(t, gen, rest.Config{Registerer: reg})
	newServer(t, gen, rest.Config{Registerer: reg}) // a second server shares the collectors
	get(t, s.Handler(), "/genid")
	get(t, s.Handler(), "/v1/ids?count=10")
	get(t, s.Handler(), "/v1/ids?count=0")
	get(t, s.Handler(), "/no/such/route")
	r := get(t, s.Handler(), "/metrics")
	if r.Status != 200 {
		t.Fatalf("/metrics = %d", r.Status)
	}
	for _, want := range []string{
		`vesta_ids_issued_total{method="rest"} 11`,
		`vesta_ids_issued_total{method="central"} 0`,
		`vesta_rpc_connections 0`,
		`vesta_http_requests_total{code="200",route="/genid"} 1`,
		`vesta_http_requests_total{code="400",route="/v1/ids"} 1`,
		`vesta_http_requests_total{code="404",route="unmatched"} 1`,
		`vesta_http_request_duration_seconds_count{route="/v1/ids"} 2`,
		`vesta_other_total 0`,
	} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Without a Registerer the server's own metrics are served.
	own := newServer(t, gen, rest.Config{})
	get(t, own.Handler(), "/genid")
	if r := get(t, own.Handler(), "/metrics"); !strings.Contains(r.Body, `vesta_ids_issued_total{method="rest"} 1`) {
		t.Errorf("private registry: /metrics lacks the issued counter:\n%s", r.Body)
	}

	// A conflicting registration is an error, not a silent second series.
	bad := prometheus.NewRegistry()
	bad.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "vesta_ids_issued_total", Help: "something else"}))
	if _, err := rest.NewServer(gen, rest.Config{Registerer: bad}); err == nil {
		t.Errorf("NewServer with a conflicting vesta_ids_issued_total: no error")
	}
}

func TestPageAndOpenAPIServed(t *testing.T) {
	gen, _ := vestaGen(t)
	open := newServer(t, gen, rest.Config{})
	r := get(t, open.Handler(), "/")
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || !strings.Contains(r.Body, `data-auth="off"`) {
		t.Fatalf("GET / = %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'sha256-") {
		t.Fatalf("CSP %q", csp)
	}
	for _, external := range []string{"http://", "https://", "//fonts", "@import"} {
		if strings.Contains(r.Body, external) {
			t.Errorf("the page refers to something external: %q", external)
		}
	}
	locked := newServer(t, gen, rest.Config{Token: token})
	if r := get(t, locked.Handler(), "/"); !strings.Contains(r.Body, `data-auth="bearer"`) {
		t.Fatalf("with a token, the page does not ask for it")
	}
	if r := get(t, open.Handler(), "/openapi.json"); r.Status != 200 || !strings.Contains(r.Body, `"openapi": "3.`) {
		t.Fatalf("/openapi.json = %d", r.Status)
	}
}

func TestServeLifecycle(t *testing.T) {
	gen, _ := vestaGen(t)
	s, err := rest.NewServer(gen, rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr() != nil {
		t.Fatalf("Addr before Serve = %v", s.Addr())
	}
	ln := nettest.Loopback(t)
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	url := "http://" + ln.Addr().String()
	res, err := client.Get(url + "/genid")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if s.Addr().String() != ln.Addr().String() {
		t.Fatalf("Addr = %v, want %v", s.Addr(), ln.Addr())
	}
	ln2 := nettest.Loopback(t)
	if err := s.Serve(ln2); !errors.Is(err, rest.ErrServing) {
		t.Fatalf("second Serve = %v, want ErrServing", err)
	}
	ln2.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Serve after Shutdown = %v, want nil", err)
	}
	wantJSONError(t, get(t, s.Handler(), "/readyz"), 503, "unavailable", "shutting down")
	if _, err := client.Get(url + "/genid"); err == nil {
		t.Fatalf("the listener still answers after Shutdown")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close after Shutdown: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ln3 := nettest.Loopback(t)
	defer ln3.Close()
	if err := s.Serve(ln3); !errors.Is(err, rest.ErrClosed) {
		t.Fatalf("Serve after Close = %v, want ErrClosed", err)
	}
}

func TestTLS(t *testing.T) {
	pki := tlstest.New(t)
	cert, pool := pki.Server, pki.Pool
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	base := strings.Replace(serve(t, s), "http://", "https://", 1)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	defer client.CloseIdleConnections()
	res, err := client.Get(base + "/v1/id")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || res.TLS == nil || !strings.HasPrefix(string(b), `{"id":"`) {
		t.Fatalf("over TLS: %d %s (TLS %v)", res.StatusCode, b, res.TLS != nil)
	}
	if res.ProtoMajor != 2 {
		t.Errorf("over TLS: %s, want HTTP/2", res.Proto)
	}
	// Plain HTTP to the TLS port does not get an ID.
	plain := &http.Client{Transport: &http.Transport{}}
	defer plain.CloseIdleConnections()
	if res, err := plain.Get(strings.Replace(base, "https://", "http://", 1) + "/v1/id"); err == nil {
		res.Body.Close()
		if res.StatusCode == 200 {
			t.Fatalf("plain HTTP to the TLS listener got 200")
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   rest.Config
		field string // "" = valid
	}{
		{"zero", rest.Config{}, ""},
		{"default", rest.DefaultConfig(), ""},
		{"token", rest.Config{Token: "abc.DEF-_~+/=ghi"}, ""},
		{"token with space", rest.Config{Token: "abc def-ghi-jkl-mno"}, "Token"},
		{"token with newline", rest.Config{Token: "abc-def-ghi-jkl\n"}, "Token"},
		{"short token", rest.Config{Token: "abc.DEF-_~+/=gh"}, "Token"}, // 15 bytes
		{"negative batch", rest.Config{MaxBatch: -1}, "MaxBatch"},
		{"huge batch", rest.Config{MaxBatch: 1 << 30}, "MaxBatch"},
		{"negative body", rest.Config{BodyLimit: -1}, "BodyLimit"},
		{"negative timeout", rest.Config{RequestTimeout: -time.Second}, "RequestTimeout"},
		{"tls without cert", rest.Config{TLS: &tls.Config{}}, "TLS"},
		{"allowed hosts", rest.Config{AllowedHosts: []string{"ids.example.com", "*.corp.example", "10.0.0.5", "[fd00::1]", "fd00::2", "vesta", "Host.Example.", "a_b.example"}}, ""},
		{"any host with a token", rest.Config{AllowedHosts: []string{"*"}, Token: "t-t-t-t-t-t-t-t-t"}, ""},
		{"any host without a token", rest.Config{AllowedHosts: []string{"*"}}, "AllowedHosts"},
		{"allowed host with a port", rest.Config{AllowedHosts: []string{"ids.example.com:443"}}, "AllowedHosts[0]"},
		{"allowed host empty", rest.Config{AllowedHosts: []string{"a", ""}}, "AllowedHosts[1]"},
		{"allowed host with a scheme", rest.Config{AllowedHosts: []string{"https://ids.example.com"}}, "AllowedHosts[0]"},
		{"allowed host with a space", rest.Config{AllowedHosts: []string{"ids example"}}, "AllowedHosts[0]"},
		{"allowed host, empty label", rest.Config{AllowedHosts: []string{"ids..example"}}, "AllowedHosts[0]"},
		{"wildcard over a TLD", rest.Config{AllowedHosts: []string{"*.com"}}, "AllowedHosts[0]"},
		{"wildcard over an address", rest.Config{AllowedHosts: []string{"*.10.0.0.1"}}, "AllowedHosts[0]"},
		{"wildcard inside", rest.Config{AllowedHosts: []string{"a.*.example"}}, "AllowedHosts[0]"},
		{"bad bracketed address", rest.Config{AllowedHosts: []string{"[ids.example]"}}, "AllowedHosts[0]"},
		{"registerer not gatherer", rest.Config{Registerer: prometheus.WrapRegistererWith(nil, prometheus.NewRegistry())}, "Gatherer"},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errtest.Wraps(err, rest.ErrConfig, tc.field+":")):
			t.Errorf("%s: %v, want ErrConfig naming %s", tc.name, err, tc.field)
		}
		if tc.field == "Token" && err != nil && strings.Contains(err.Error(), tc.cfg.Token) {
			t.Errorf("%s: the error shows the token", tc.name)
		}
	}
	if _, err := rest.NewServer(nil, rest.Config{}); !errors.Is(err, rest.ErrConfig) {
		t.Errorf("NewServer(nil) = %v", err)
	}
	gen, _ := vestaGen(t)
	if _, err := rest.NewServer(gen, rest.Config{MaxBatch: -5}); !errors.Is(err, rest.ErrConfig) {
		t.Errorf("NewServer with a bad config = %v", err)
	}
}

// TestShutdownDrains: Shutdown waits for a request in flight (here one
// waiting for the clock, its sequence run out) and lets it finish.
func TestShutdownDrains(t *testing.T) {
	gen, clock := newGen(t, core.Config{Layout: core.Vesta, Type: core.MinGranularity, Machine: 1022})
	s, err := rest.NewServer(gen, rest.Config{RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ln := nettest.Loopback(t)
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.Serve(ln) }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	type answer struct {
		status int
		body   string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := client.Get("http://" + ln.Addr().String() + "/v1/ids?count=1025") // one more than a millisecond holds
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		got <- answer{res.StatusCode, string(b), err}
	}()
	waittest.Sleepers(t, clock, 1) // the request sleeps on the clock
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()
	waittest.Until(t, "Shutdown to close the listener (its first step)", func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	case a := <-got:
		t.Fatalf("the request ended before the clock moved: %+v", a)
	default:
	}
	clock.Advance(time.Millisecond)
	a := <-got
	if a.err != nil || a.status != http.StatusOK || strings.Count(a.body, `"`) != 2*1025+2 {
		t.Fatalf("the drained request: %d %.80s %v", a.status, a.body, a.err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-serveErr; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	s.Close()
}
