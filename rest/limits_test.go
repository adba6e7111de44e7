package rest_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/promtest"

	"github.com/vesta-go/vesta/rest"
)

// rawDial opens a TCP connection to the server at base from local IP from.
func rawDial(t testing.TB, base, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	return testkit.Closed(t, "dial", nc, err)
}

// rawGet sends GET path on nc and returns the status, or 0 when the
// connection was closed instead.
func rawGet(t testing.TB, nc net.Conn, path string) int {
	t.Helper()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(nc, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// closedByServer waits until the server closes nc.
func closedByServer(t testing.TB, nc net.Conn) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if n, err := nc.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatal("the connection stayed open")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection stayed open")
	}
}

// TestRESTConnCaps: silent connections are shed first, then idle ones,
// per peer before server-wide; when all are mid-request a newcomer is
// refused; each counted by reason.
func TestRESTConnCaps(t *testing.T) {
	gen, _ := vestaGen(t)
	reg := prometheus.NewRegistry()
	base := serve(t, newServer(t, gen, rest.Config{MaxConns: 3, MaxConnsPerPeer: 2, Registerer: reg}))
	count := func(name, reason string) float64 { return promtest.ValueOr(t, reg, -1, name, "reason", reason) }

	// Per peer: the third connection of 127.0.0.2 sheds its oldest silent one.
	s1 := rawDial(t, base, "127.0.0.2")
	rawDial(t, base, "127.0.0.2")
	if got := rawGet(t, rawDial(t, base, "127.0.0.2"), "/healthz"); got != http.StatusOK {
		t.Fatalf("third of a peer: %d; want 200", got)
	}
	closedByServer(t, s1)
	if got := count("vesta_http_connections_shed_total", "max_conns_per_peer"); got != 1 {
		t.Errorf("shed{max_conns_per_peer} = %v; want 1", got)
	}

	// Server-wide: 3 open (one silent, one idle); a newcomer sheds the silent one.
	good := rawDial(t, base, "127.0.0.3")
	if got := rawGet(t, good, "/healthz"); got != http.StatusOK {
		t.Fatalf("good: %d", got)
	}
	// Now 127.0.0.2 holds a silent and an idle connection, 127.0.0.3 one
	// idle: once the silent one is past a newcomer's grace (a second), the
	// next one sheds it, not an idle one.
	time.Sleep(1100 * time.Millisecond)
	if got := rawGet(t, rawDial(t, base, "127.0.0.4"), "/healthz"); got != http.StatusOK {
		t.Fatalf("newcomer at max_conns: %d; want 200", got)
	}
	if got := rawGet(t, good, "/healthz"); got != http.StatusOK {
		t.Fatalf("the idle connection was shed before a silent one: %d", got)
	}
	if got := count("vesta_http_connections_shed_total", "max_conns"); got != 1 {
		t.Errorf("shed{max_conns} = %v; want 1", got)
	}
}

// TestRESTConnRefusedWhenBusy: with every connection mid-request (a body
// still arriving), a newcomer is closed on accept and counted.
func TestRESTConnRefusedWhenBusy(t *testing.T) {
	gen, _ := vestaGen(t)
	reg := prometheus.NewRegistry()
	base := serve(t, newServer(t, gen, rest.Config{MaxConns: 2, Registerer: reg}))
	for range 2 { // headers and half a body: mid-request
		nc := rawDial(t, base, "127.0.0.1")
		io.WriteString(nc, "POST /v1/make HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{\"time\":")
	}
	// Give the server time to read both headers: from then on both are
	// mid-request.
	time.Sleep(300 * time.Millisecond)
	if got := rawGet(t, rawDial(t, base, "127.0.0.5"), "/healthz"); got != 0 {
		t.Fatalf("a newcomer was answered %d while every connection was mid-request", got)
	}
	if got := promtest.ValueOr(t, reg, -1, "vesta_http_connections_rejected_total", "reason", "max_conns"); got != 1 {
		t.Errorf("rejected{max_conns} = %v; want 1", got)
	}
}
