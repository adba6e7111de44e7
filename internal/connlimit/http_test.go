package connlimit_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/connlimit"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"
)

// serveHTTP serves h under the policy of cfg, with TLS when pki is set,
// and returns the base URL and a client of it.
func serveHTTP(t *testing.T, cfg connlimit.Config, h http.Handler, pki *tlstest.PKI) (string, *http.Client) {
	return serveHTTPTimeout(t, cfg, h, pki, time.Second)
}

// serveHTTPTimeout is serveHTTP with a request timeout of rt.
func serveHTTPTimeout(t *testing.T, cfg connlimit.Config, h http.Handler, pki *tlstest.PKI, rt time.Duration) (string, *http.Client) {
	t.Helper()
	inner := nettest.Loopback(t)
	l := connlimit.NewLimiter(cfg)
	hc := connlimit.HTTPConfig{Handler: h, RequestTimeout: rt, MaxHeaderBytes: 1 << 10, HeaderTooLarge: []byte(tooLargeBody)}
	tr := &http.Transport{}
	scheme := "http"
	if pki != nil {
		hc.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
		tr.TLSClientConfig = &tls.Config{RootCAs: pki.Pool}
		tr.ForceAttemptHTTP2 = true
		tr.MaxConnsPerHost = 1 // every stream on one connection
		scheme = "https"
	}
	srv := l.HTTPServer(hc)
	ln := l.Listen(inner)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if pki != nil {
			srv.ServeTLS(ln, "", "")
		} else {
			srv.Serve(ln)
		}
	}()
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
		<-done
	})
	return scheme + "://" + inner.Addr().String(), &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestAnswerWhole: an answer written in many small pieces (as promhttp
// writes) goes whole, with its Content-Length, on GET and HEAD alike; an
// empty one is net/http's.
func TestAnswerWhole(t *testing.T) {
	body := strings.Repeat("metric_line 1\n", 5000)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/empty" {
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		for i := 0; i < len(body); i += 100 {
			io.WriteString(w, body[i:min(i+100, len(body))])
		}
	})
	base, c := serveHTTP(t, connlimit.Config{MaxConns: 10, MaxConnsPerPeer: 10}, h, nil)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, base+"/m", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) || len(resp.TransferEncoding) != 0 {
			t.Errorf("%s: Content-Length %q, Transfer-Encoding %v; want %d, none", method, resp.Header.Get("Content-Length"), resp.TransferEncoding, len(body))
		}
		if method == http.MethodGet && string(b) != body {
			t.Errorf("GET: %d bytes; want %d", len(b), len(body))
		}
	}
	resp, err := c.Get(base + "/empty")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != 0 {
		t.Errorf("empty answer: %d, length %d; want 200, 0", resp.StatusCode, resp.ContentLength)
	}
}

// TestH2StreamsTakePlaces: over HTTP/2, a connection's streams beyond its
// first take places under the caps: past them a stream is answered 503
// with Retry-After at once, and counted; the others are served.
func TestH2StreamsTakePlaces(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := connlimit.NewMetrics(reg, connlimit.Names{Rejected: "test_rejected_total", Shed: "test_shed_total",
		Streams: "test_http_streams_rejected_total", Protocol: "HTTP"})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var started sync.WaitGroup
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("served over HTTP/%d; want 2", r.ProtoMajor)
		}
		started.Done()
		<-release
		io.WriteString(w, "ok")
	})
	base, c := serveHTTP(t, connlimit.Config{MaxConns: 10, MaxConnsPerPeer: 3, Metrics: m}, h, tlstest.New(t))
	// One connection, three streams held open: the peer's three places.
	started.Add(3)
	results := make(chan int, 3)
	for range 3 {
		go func() {
			resp, err := c.Get(base + "/")
			if err != nil {
				t.Error(err)
				results <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- resp.StatusCode
		}()
	}
	started.Wait()
	resp, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || len(b) != 0 {
		t.Fatalf("a fourth stream at the peer's cap: %d %q %q; want 503, Retry-After 1, no body", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	close(release)
	for range 3 {
		if code := <-results; code != http.StatusOK {
			t.Errorf("a held stream: %d; want 200", code)
		}
	}
	if got := promtest.ValueOr(t, reg, -1, "test_http_streams_rejected_total", "reason", "max_conns_per_peer"); got != 1 {
		t.Errorf("streams_rejected{max_conns_per_peer} = %v; want 1", got)
	}
}

// TestAwaitedBodyIsShed: a connection whose request promised a body it
// does not send (read by the handler, or left for net/http to read before
// the next request) is waiting on its peer: at a cap, once a second is
// owed, a lighter peer's newcomer sheds it; before, the newcomer is
// refused.
func TestAwaitedBodyIsShed(t *testing.T) {
	for _, path := range []string{"/read", "/ignore"} {
		t.Run(path, func(t *testing.T) {
			clk := newClock()
			read := make(chan struct{}, 2)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/" {
					read <- struct{}{}
				}
				if r.URL.Path == "/read" {
					io.ReadAll(r.Body)
				}
				io.WriteString(w, "ok")
			})
			base, c := serveHTTPTimeout(t, connlimit.Config{MaxConns: 2, MaxConnsPerPeer: 2, Now: clk.Now}, h, nil, time.Minute)
			// Two of one peer (127.0.0.2) against the newcomers' one
			// (127.0.0.1).
			var conns []net.Conn
			for range 2 {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
				nc, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				io.WriteString(nc, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab")
				<-read
				conns = append(conns, nc)
			}
			time.Sleep(50 * time.Millisecond) // the handlers in their reads, or net/http in its
			if resp, err := c.Get(base + "/"); err == nil {
				resp.Body.Close()
				t.Fatalf("a newcomer beside a connection waiting for a body since now: %d; want refused", resp.StatusCode)
			}
			clk.advance(1200 * time.Millisecond)
			resp, err := c.Get(base + "/")
			if err != nil {
				t.Fatalf("a newcomer beside a connection owing 1.05 s of body: %v; want it shed and the newcomer served", err)
			}
			resp.Body.Close()
			conns[0].SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.Copy(io.Discard, conns[0]); err != nil && isTimeout(err) {
				t.Error("the connection waiting the longest is still open")
			}
		})
	}
}

// tooLargeBody is serveHTTP's HTTPConfig.HeaderTooLarge.
const tooLargeBody = `{"error":{"code":"invalid_argument","message":"headers: too large"}}` + "\n"

// TestHeaderTooLargeJSON: headers past what net/http reads get the
// listener's 431 (HTTPConfig.HeaderTooLarge), whole and with its length,
// where net/http would write its own plain text; the connection closes.
// net/http's text is matched exactly: were a Go release to change it,
// this fails.
func TestHeaderTooLargeJSON(t *testing.T) {
	base, _ := serveHTTP(t, connlimit.Config{MaxConns: 10, MaxConnsPerPeer: 10}, http.NotFoundHandler(), nil)
	nc, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 8<<10)+"\r\n\r\n")
	raw, err := io.ReadAll(nc)
	if err != nil && !isReset(err) {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(raw))), nil)
	if err != nil {
		t.Fatalf("%v: %q", err, raw)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != "application/json" ||
		resp.ContentLength != int64(len(tooLargeBody)) || string(b) != tooLargeBody || !resp.Close {
		t.Fatalf("headers past the limit: %d %q %q, close %v; want 431, the JSON body, Connection: close", resp.StatusCode, resp.Header.Get("Content-Type"), b, resp.Close)
	}
}

// isReset reports a connection reset (the server closed with unread
// input).
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
