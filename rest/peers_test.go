package rest_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/tlstest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/rest"
)

// TestTLSHandshakeFailuresLoggedOnce: a client that speaks plain HTTP to
// the TLS port, request after request, gets one warning a minute, not one
// a connection; the server's other lines still reach the log.
func TestTLSHandshakeFailuresLoggedOnce(t *testing.T) {
	var logs syncBuffer
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{TLS: &tls.Config{Certificates: []tls.Certificate{tlstest.New(t).Server}},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	base := serve(t, s) // http://: plain HTTP to the TLS port
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer plain.CloseIdleConnections()
	const n = 20
	for range n {
		res, err := plain.Get(base + "/v1/id")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the TLS port: %d; want net/http's 400", res.StatusCode)
		}
	}
	// net/http logs after it closed the connection: wait for the line,
	// then a while for any more.
	count := func() int { return strings.Count(logs.String(), "TLS handshake failed") }
	waittest.Until(t, "net/http's log line", func() bool { return count() > 0 })
	time.Sleep(200 * time.Millisecond) // a window for a second line, which must not come
	if c := count(); c != 1 || !strings.Contains(logs.String(), "level=WARN") ||
		!strings.Contains(logs.String(), "client sent an HTTP request to an HTTPS server") {
		t.Fatalf("%d lines for %d plaintext connections; want one warning with net/http's reason:\n%s", c, n, logs.String())
	}
}

// clientFrom is an HTTP client whose connections come from ip (any of
// 127.0.0.0/8 on Linux).
func clientFrom(t testing.TB, ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func getWith(t testing.TB, c *http.Client, url, auth string) *http.Response {
	t.Helper()
	q := newReq(t, http.MethodGet, url)
	if auth != "" {
		q.Header.Set("Authorization", auth)
	}
	res, err := c.Do(q)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// TestAuthFailuresLimited: a burst of wrong tokens from one peer gets 401
// up to the burst, then 429 with Retry-After; the right token from that
// peer (another client behind the same proxy or NAT) still passes, every
// time; another peer is served meanwhile, and a request without a token
// counts for nothing. The limiter's table stays within its cap under many
// peers.
func TestAuthFailuresLimited(t *testing.T) {
	var logs syncBuffer
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{Token: token, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	base := serve(t, s)
	a, b := clientFrom(t, "127.0.0.1"), clientFrom(t, "127.0.0.2")
	for range 20 {
		if res := getWith(t, b, base+"/v1/id", ""); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("without a token: %d; want 401, and not counted", res.StatusCode)
		}
	}
	var unauthorized, limited int
	for range 30 {
		res := getWith(t, a, base+"/v1/id", "Bearer wrong-wrong-wrong-wrong")
		switch res.StatusCode {
		case http.StatusUnauthorized:
			unauthorized++
		case http.StatusTooManyRequests:
			limited++
			if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 {
				t.Fatalf("429 with Retry-After %q; want whole seconds", res.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("a wrong token: %d", res.StatusCode)
		}
	}
	if unauthorized > 12 || limited < 18 { // the burst, and a token or two back while it ran
		t.Fatalf("30 wrong tokens: %d answered 401, %d 429; want the burst of 10 then 429", unauthorized, limited)
	}
	for i := range 6 {
		if res := getWith(t, a, base+"/v1/id", "Bearer "+token); res.StatusCode != http.StatusOK {
			t.Errorf("the right token from the limited peer, try %d: %d; want 200", i, res.StatusCode)
		}
	}
	if res := getWith(t, a, base+"/v1/id", "Bearer wrong-wrong-wrong-wrong"); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a wrong token from the limited peer after the right ones: %d; want 429 still", res.StatusCode)
	}
	if res := getWith(t, b, base+"/v1/id", "Bearer "+token); res.StatusCode != http.StatusOK {
		t.Errorf("the right token from another peer: %d; want 200", res.StatusCode)
	}
	if res := getWith(t, b, base+"/v1/id", "Bearer wrong-wrong-wrong-wrong"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token from another peer: %d; want 401, from its own burst", res.StatusCode)
	}
	if n := strings.Count(logs.String(), "too many failed authentications"); n != 1 {
		t.Errorf("%d log lines for the limited peer; want one:\n%s", n, logs.String())
	}

	// Many peers failing: the table holds at most its cap.
	h := s.Handler()
	for i := range rest.AuthPeersMax + 1000 {
		q := req(http.MethodGet, "/v1/id", "", "")
		q.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:1234", i>>16&0xff, i>>8&0xff, i&0xff)
		q.Header.Set("Authorization", "Bearer wrong-wrong-wrong-wrong")
		h.ServeHTTP(httptest.NewRecorder(), q)
	}
	if n := rest.AuthPeers(s); n > rest.AuthPeersMax {
		t.Fatalf("%d peers in the table; want at most %d", n, rest.AuthPeersMax)
	}
}
