package central_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/logtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// TestShutdown: every call read before Shutdown is answered, even one that
// waits for the clock; idle connections close at once; new ones are
// refused; Shutdown returns when all is done.
func TestShutdown(t *testing.T) {
	gen, clock := manualGen(t)
	srv, addr := serve(t, gen, central.Config{})
	busy := dial(t, addr)
	idle := dial(t, addr)
	idle.genID()
	exhaust(t, gen)
	waiting := busy.send(wire.ProcGenID, nil)
	var info wire.Info
	busy.result(wire.ProcInfo, nil, &info) // so the GenID was read before

	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	idle.closed()
	idle.nc.Close() // ends the server's lingering read at once
	if nc, err := net.Dial("tcp", addr.String()); err == nil {
		nc.Close()
		t.Fatal("a new connection was accepted during Shutdown")
	}
	waittest.Sleepers(t, clock, 1)
	clock.Advance(time.Millisecond)
	if resp := busy.recv(); resp.MsgID != waiting || resp.Error != nil {
		t.Fatalf("waiting call: %+v", resp)
	}
	busy.closed()
	busy.nc.Close()
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := srv.Serve(nettest.Loopback(t)); !errors.Is(err, central.ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	srv.Close() // idempotent
}

// TestShutdownPipelining: a client still pipelining when Shutdown comes
// gets an answer to every call the server read, then a clean end of
// stream, not a reset that could have destroyed answers on the way.
func TestShutdownPipelining(t *testing.T) {
	gen := newGen(t, core.Config{})
	srv, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)
	e := wire.NewEncoder()
	var burst []byte
	for i := range 10 {
		burst, _ = e.AppendRequest(burst, uint32(i), wire.ProcGenID, nil)
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for range 300 {
			if _, err := p.nc.Write(burst); err != nil {
				return // the server has closed
			}
		}
	}()
	shut := make(chan error, 1)
	answers := 0
	for {
		resp, err := p.tryRecv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("after %d answers: %v; want the end of the stream", answers, err)
			}
			break
		}
		if resp.Error != nil {
			t.Fatal(resp.Error)
		}
		if answers++; answers == 1 {
			go func() { shut <- srv.Shutdown(context.Background()) }()
		}
	}
	p.nc.Close()
	<-wrote
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d answers of %d calls before Shutdown closed the connection", answers, 3000)
}

// TestShutdownDeadline: when ctx ends first, Shutdown closes everything and
// says so; waiting calls end unanswered.
func TestShutdownDeadline(t *testing.T) {
	gen, _ := manualGen(t)
	srv, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)
	exhaust(t, gen)
	p.send(wire.ProcGenID, nil)
	var info wire.Info
	p.result(wire.ProcInfo, nil, &info)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v", err)
	}
	p.closed()
}

// dialTLS calls Vesta.GenID over TLS and returns the error, if any.
func dialTLS(t *testing.T, addr net.Addr, cfg *tls.Config) error {
	nc, err := tls.Dial("tcp", addr.String(), cfg)
	if err != nil {
		return err
	}
	defer nc.Close()
	p := newPeer(t, nc)
	p.send(wire.ProcGenID, nil)
	resp, err := p.tryRecv()
	if err == nil && resp.Error != nil {
		err = resp.Error
	}
	return err
}

func TestTLS(t *testing.T) {
	ca, other := tlstest.New(t), tlstest.New(t)
	gen := newGen(t, core.Config{})

	_, addr := serve(t, gen, central.Config{TLS: &tls.Config{Certificates: []tls.Certificate{ca.Server}}})
	if err := dialTLS(t, addr, &tls.Config{RootCAs: ca.Pool}); err != nil {
		t.Fatalf("TLS: %v", err)
	}
	if err := dialTLS(t, addr, &tls.Config{RootCAs: other.Pool}); err == nil {
		t.Fatal("TLS: a client trusted a certificate of another CA")
	}
	plain := dial(t, addr) // msgpack where a TLS handshake belongs
	plain.send(wire.ProcGenID, nil)
	plain.closed()

	mtls := &tls.Config{
		Certificates: []tls.Certificate{ca.Server},
		ClientCAs:    ca.Pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	_, addr = serve(t, gen, central.Config{TLS: mtls})
	if err := dialTLS(t, addr, &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{ca.Client}}); err != nil {
		t.Fatalf("mTLS with a client certificate: %v", err)
	}
	if err := dialTLS(t, addr, &tls.Config{RootCAs: ca.Pool}); err == nil {
		t.Fatal("mTLS: a client without a certificate was served")
	}
	if err := dialTLS(t, addr, &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{other.Client}}); err == nil {
		t.Fatal("mTLS: a client with a certificate of another CA was served")
	}
	if mtls.ClientAuth != tls.RequireAndVerifyClientCert || len(mtls.Certificates) != 1 {
		t.Fatal("the server changed the caller's tls.Config")
	}
}

// TestTLSHandshakeFailuresLoggedOnce: a client that speaks plaintext to
// the TLS port, connection after connection, gets one warning a minute,
// not one a connection.
func TestTLSHandshakeFailuresLoggedOnce(t *testing.T) {
	ca := tlstest.New(t)
	var logs logtest.Buffer
	gen := newGen(t, core.Config{})
	_, addr := serve(t, gen, central.Config{TLS: &tls.Config{Certificates: []tls.Certificate{ca.Server}},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 20 {
		plain := dial(t, addr)
		plain.send(wire.ProcGenID, nil)
		plain.closed()
	}
	if n := strings.Count(logs.String(), "TLS handshake failed"); n != 1 || !strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("%d lines for 20 plaintext connections; want one warning:\n%s", n, logs.String())
	}
	if err := dialTLS(t, addr, &tls.Config{RootCAs: ca.Pool}); err != nil {
		t.Fatalf("TLS after the plaintext ones: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	gen := newGen(t, core.Config{})
	addr, reg := serveMetered(t, gen, central.Config{})
	// A second server on the same registry shares the metrics.
	if _, err := central.NewServer(gen, central.Config{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	p := dial(t, addr)
	for range 3 {
		p.genID()
	}
	var ids []uint64
	p.result(wire.ProcGenIDs, &wire.GenIDsParams{Count: 10}, &ids)
	p.call(wire.ProcGenIDs, &wire.GenIDsParams{Count: 0})
	for _, m := range []string{"Vesta.Foo", "Vesta.Bar", "x"} {
		p.call(m, nil)
	}
	dial(t, addr).genID() // the connection metrics of the caps: limits_test.go

	tests := []struct {
		name   string
		labels []string // pairs
		want   float64
	}{
		{"vesta_rpc_requests_total", []string{"procedure", "Vesta.GenID", "code", "ok"}, 4},
		{"vesta_rpc_requests_total", []string{"procedure", "Vesta.GenIDs", "code", "ok"}, 1},
		{"vesta_rpc_requests_total", []string{"procedure", "Vesta.GenIDs", "code", "invalid_argument"}, 1},
		{"vesta_rpc_requests_total", []string{"procedure", "unknown", "code", "invalid_argument"}, 3},
		{"vesta_rpc_request_duration_seconds", []string{"procedure", "Vesta.GenID"}, 4},
		{"vesta_ids_issued_total", []string{"method", "central"}, 14},
		{"vesta_rpc_connections", nil, 2},
	}
	for _, tt := range tests {
		if got, found := promtest.Value(t, reg, tt.name, tt.labels...); !found || got != tt.want {
			t.Errorf("%s%q = %v (found %v); want %v", tt.name, tt.labels, got, found, tt.want)
		}
	}
	for _, s := range promtest.Series(t, reg, "vesta_rpc_requests_total") {
		if m := s.Labels["procedure"]; m != "unknown" && !methodOK(m) {
			t.Errorf("label value %q", m)
		}
	}
}

func methodOK(m string) bool {
	for _, k := range wire.Procedures() {
		if k == m {
			return true
		}
	}
	return false
}

// value returns the value of the metric with labels (a histogram's count).
