package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit/nettest"
)

func TestHealth(t *testing.T) {
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
	}
	ok := httptest.NewServer(status(200))
	t.Cleanup(ok.Close)
	unready := httptest.NewServer(status(503))
	t.Cleanup(unready.Close)
	stalls := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(stalls.Close)
	// A status line with terminal escapes: printed escaped, on success
	// and failure.
	reason := func(code string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			nc, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				io.WriteString(nc, "HTTP/1.1 "+code+" OK\x1b]0;owned\a\x1b[2J\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				nc.Close()
			}
		}
	}
	escOK := httptest.NewServer(reason("200"))
	t.Cleanup(escOK.Close)
	escBad := httptest.NewServer(reason("500"))
	t.Cleanup(escBad.Close)
	tlsOK := httptest.NewTLSServer(status(204))
	t.Cleanup(tlsOK.Close)
	// A port nobody listens on: listen, note it, close.
	ln := nettest.Loopback(t)
	refused := "http://" + ln.Addr().String() + "/healthz"
	ln.Close()

	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // in stdout (code 0) or stderr
	}{
		{"2xx", []string{"--url", ok.URL + "/healthz"}, 0, "200 OK"},
		{"503", []string{"--url", unready.URL + "/readyz"}, 1, "503"},
		{"refused", []string{"--url", refused}, 1, "health:"},
		{"timeout", []string{"--url", stalls.URL, "--timeout", "50ms"}, 1, "deadline"},
		{"escapes", []string{"--url", escOK.URL}, 0, `200 OK\x1b]0;owned\a\x1b[2J`},
		{"escapes failing", []string{"--url", escBad.URL}, 1, `500 OK\x1b]0;owned\a\x1b[2J`},
		{"tls unverified", []string{"--url", tlsOK.URL}, 1, "certificate"},
		{"tls insecure", []string{"--url", tlsOK.URL, "--insecure"}, 0, "204"},
		{"not a URL", []string{"--url", "127.0.0.1:7080/healthz"}, 2, "--url"},
		{"ftp", []string{"--url", "ftp://127.0.0.1/"}, 2, "--url"},
		{"zero timeout", []string{"--url", ok.URL, "--timeout", "0s"}, 2, "--timeout"},
		{"argument", []string{"extra"}, 2, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", append([]string{"health"}, tc.args...)...)
			got := r.stderr
			if tc.code == 0 {
				got = r.stdout
			}
			if r.code != tc.code || !strings.Contains(got, tc.out) || strings.ContainsAny(r.stdout+r.stderr, "\x1b\a") {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q (want %q)", r.code, tc.code, r.stdout, r.stderr, tc.out)
			}
		})
	}
}
