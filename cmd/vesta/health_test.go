package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
	tlsOK := httptest.NewTLSServer(status(204))
	t.Cleanup(tlsOK.Close)
	// A port nobody listens on: listen, note it, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
			if r.code != tc.code || !strings.Contains(got, tc.out) {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q (want %q)", r.code, tc.code, r.stdout, r.stderr, tc.out)
			}
		})
	}
}
