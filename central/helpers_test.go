package central_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start is 2025-06-01, a little after the sorted layout's epoch.
var start = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

// newGen starts a generator for machine 1000 (unless cfg says), closed at
// cleanup.
func newGen(t testing.TB, cfg core.Config) *core.Generator {
	t.Helper()
	if cfg.Machine == 0 {
		cfg.Machine = 1000
	}
	return gentest.New(t, cfg)
}

// manualGen is a min-granularity generator on a manual clock that never
// borrows ahead, so a test can run a unit out of sequence and make issuing
// calls wait.
func manualGen(t testing.TB) (*core.Generator, *core.ManualClock) {
	clock := core.NewManualClock(start)
	return newGen(t, core.Config{Type: core.MinGranularity, Clock: clock}), clock
}

// exhaust issues the rest of the current unit, so the next issuing call
// waits for the clock.
func exhaust(t testing.TB, gen *core.Generator) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the generator fails instead of waiting
	for i := 0; ; i++ {
		if _, err := gen.NextID(ctx, core.Central); err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			return
		}
		if i > 1<<21 {
			t.Fatal("the unit never ran out")
		}
	}
}

// serve runs a server of gen on 127.0.0.1 until cleanup, which closes it
// and checks that Serve returned ErrServerClosed.
func serve(t testing.TB, gen *core.Generator, cfg central.Config) (*central.Server, net.Addr) {
	t.Helper()
	srv, err := central.NewServer(gen, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, nettest.Serve(t, srv, nil, central.ErrServerClosed)
}

// serveMetered is serve with the server's metrics on a registry of their
// own, which it returns.
func serveMetered(t testing.TB, gen *core.Generator, cfg central.Config) (net.Addr, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	_, addr := serve(t, gen, cfg)
	return addr, reg
}

// metric reads a metric of reg: name with the label pairs given, -1 when
// there is none (the server registers every series it counts up front,
// so a missing one is a bug, never a zero).
func metric(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	return promtest.ValueOr(t, reg, -1, name, labels...)
}

// peer is a test's end of one connection: it writes frames (built by the
// encoder or by hand) and reads responses.
type peer struct {
	t   testing.TB
	nc  net.Conn
	r   *wire.Reader
	enc *wire.Encoder
	id  uint32
}

func dial(t testing.TB, addr net.Addr) *peer {
	t.Helper()
	nc, err := net.Dial("tcp", addr.String())
	testkit.Closed(t, "net.Dial", nc, err)
	return newPeer(t, nc)
}

func newPeer(t testing.TB, nc net.Conn) *peer {
	return &peer{t: t, nc: nc, r: wire.NewReader(nc, wire.MaxResponseBytes(central.DefaultMaxBatch)), enc: wire.NewEncoder()}
}

// send writes a request and returns its msgid.
func (p *peer) send(proc string, params any) uint32 {
	p.t.Helper()
	p.id++
	b, err := p.enc.AppendRequest(nil, p.id, proc, params)
	if err != nil {
		p.t.Fatal(err)
	}
	p.write(b)
	return p.id
}

func (p *peer) write(b []byte) {
	p.t.Helper()
	if _, err := p.nc.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

// recv reads the next response; a test that waits this long is broken.
func (p *peer) recv() wire.Response {
	p.t.Helper()
	resp, err := p.tryRecv()
	if err != nil {
		p.t.Fatal(err)
	}
	return resp
}

func (p *peer) tryRecv() (wire.Response, error) {
	p.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	f, err := p.r.Next()
	if err != nil {
		return wire.Response{}, err
	}
	return wire.DecodeResponse(f)
}

// call sends a request and returns its answer, which must come next.
func (p *peer) call(proc string, params any) wire.Response {
	p.t.Helper()
	id := p.send(proc, params)
	resp := p.recv()
	if resp.MsgID != id {
		p.t.Fatalf("answer to %d; want %d", resp.MsgID, id)
	}
	return resp
}

// result calls and decodes a successful result into v.
func (p *peer) result(proc string, params, v any) {
	p.t.Helper()
	resp := p.call(proc, params)
	if resp.Error != nil {
		p.t.Fatalf("%s: %v", proc, resp.Error)
	}
	if err := wire.DecodeResult(resp.Result, v); err != nil {
		p.t.Fatal(err)
	}
}

// refused reports whether e is an error of code whose message holds want.
func refused(e *api.Error, code api.Code, want string) bool {
	return e != nil && e.Code == code && strings.Contains(e.Message, want)
}

// genID must succeed: the well-behaved client beside a hostile one.
func (p *peer) genID() core.ID {
	p.t.Helper()
	var id uint64
	p.result(wire.ProcGenID, nil, &id)
	return core.ID(id)
}

// closed waits until the server closes the connection, failing on any
// frame that arrives instead.
func (p *peer) closed() {
	p.t.Helper()
	resp, err := p.tryRecv()
	if err == nil {
		p.t.Fatalf("got %+v; want the connection closed", resp)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		p.t.Fatal("the connection stayed open")
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		p.t.Fatalf("read: %v; want the connection closed", err)
	}
}

// isReset reports a connection reset: the server closed with unread input.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
