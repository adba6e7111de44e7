package rest_test

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/tlstest"
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
	for deadline := time.Now().Add(5 * time.Second); count() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if c := count(); c != 1 || !strings.Contains(logs.String(), "level=WARN") ||
		!strings.Contains(logs.String(), "client sent an HTTP request to an HTTPS server") {
		t.Fatalf("%d lines for %d plaintext connections; want one warning with net/http's reason:\n%s", c, n, logs.String())
	}
}
