package central_test

import (
	"net"
	"testing"
	"time"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
)

// halfFrame is the first bytes of a Vesta.GenID request: a connection that
// sent it is mid-call.
var halfFrame = []byte{0x94, 0x00, 0x01, 0xab, 'V', 'e', 's'}

// dialFrom dials addr from the local IP from (any 127/8 address works on
// Linux loopback), so a test can play several peers.
func dialFrom(t testing.TB, addr net.Addr, from string) *peer {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	nc, err := d.Dial("tcp", addr.String())
	testkit.Closed(t, "dial", nc, err)
	return newPeer(t, nc)
}

// busy returns a connection that has been served and is now mid-call: one
// that no newcomer may shed.
func busy(t testing.TB, addr net.Addr) *peer {
	return makeBusy(dial(t, addr))
}

// makeBusy sends a call and half of another in one write, and waits for
// the answer: the server read both at once, so the connection is mid-call
// from the answer on.
func makeBusy(p *peer) *peer {
	p.t.Helper()
	p.id++
	b, err := p.enc.AppendRequest(nil, p.id, wire.ProcGenID, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	p.write(append(b, halfFrame...))
	if resp := p.recv(); resp.Error != nil {
		p.t.Fatal(resp.Error)
	}
	return p
}

// TestMaxConnsAllBusy: at MaxConns with every connection mid-call, a new
// connection is closed at once and counted as rejected; the busy ones go
// on.
func TestMaxConnsAllBusy(t *testing.T) {
	gen := newGen(t, core.Config{})
	addr, reg := serveMetered(t, gen, central.Config{MaxConns: 3})
	var held []*peer
	for range 3 {
		held = append(held, busy(t, addr))
	}
	for range 5 {
		dial(t, addr).closed()
	}
	if got := metric(t, reg, "vesta_rpc_connections_rejected_total", "reason", "max_conns"); got != 5 {
		t.Errorf("rejected{max_conns} = %v; want 5", got)
	}
	for _, p := range held { // the rest of the frame: each is answered
		p.write([]byte{'t', 'a', '.', 'G', 'e', 'n', 'I', 'D', 0x90})
		if resp := p.recv(); resp.Error != nil {
			t.Fatal(resp.Error)
		}
	}
}

// TestShedSilentFirst: at MaxConns a newcomer pushes out the oldest
// connection that never sent a frame, not a served idle one.
func TestShedSilentFirst(t *testing.T) {
	gen := newGen(t, core.Config{})
	addr, reg := serveMetered(t, gen, central.Config{MaxConns: 3})
	good := dial(t, addr)
	good.genID() // served, idle from now on
	silent1, silent2 := dial(t, addr), dial(t, addr)
	// Silent past a newcomer's grace (a second), they go before the idle
	// one; the server accepts in the order of dialling: silent1 is the
	// oldest.
	time.Sleep(1100 * time.Millisecond)
	late := dial(t, addr)
	late.genID()
	silent1.closed()
	good.genID()
	silent2.write(halfFrame) // still open: its turn comes next
	newer := dial(t, addr)
	newer.genID()
	silent2.closed()
	if got := metric(t, reg, "vesta_rpc_connections_shed_total", "reason", "max_conns"); got != 2 {
		t.Errorf("shed{max_conns} = %v; want 2", got)
	}
}

// TestShedIdleLongest: with only served connections, the one idle the
// longest goes.
func TestShedIdleLongest(t *testing.T) {
	gen := newGen(t, core.Config{})
	_, addr := serve(t, gen, central.Config{MaxConns: 2})
	a, b := dial(t, addr), dial(t, addr)
	a.genID()
	// a's idle mark is set just after its answer is written: give the
	// server time to set it before b's.
	time.Sleep(100 * time.Millisecond)
	b.genID()
	time.Sleep(100 * time.Millisecond)
	c := dial(t, addr)
	c.genID()
	a.closed()
	b.genID()
}

// TestMaxConnsPerPeer: one address cannot hold more than MaxConnsPerPeer;
// its newcomers shed its own silent connections, never another peer's.
func TestMaxConnsPerPeer(t *testing.T) {
	gen := newGen(t, core.Config{})
	addr, reg := serveMetered(t, gen, central.Config{MaxConns: 100, MaxConnsPerPeer: 2})
	other := dialFrom(t, addr, "127.0.0.3") // silent, and older than all (accepted in order)
	x1 := dialFrom(t, addr, "127.0.0.2")
	dialFrom(t, addr, "127.0.0.2")
	dialFrom(t, addr, "127.0.0.2").genID()
	x1.closed()
	other.genID()
	if got := metric(t, reg, "vesta_rpc_connections_shed_total", "reason", "max_conns_per_peer"); got != 1 {
		t.Errorf("shed{max_conns_per_peer} = %v; want 1", got)
	}
	// With both of its connections mid-call, the peer is refused.
	makeBusy(dialFrom(t, addr, "127.0.0.4"))
	makeBusy(dialFrom(t, addr, "127.0.0.4"))
	dialFrom(t, addr, "127.0.0.4").closed()
	if got := metric(t, reg, "vesta_rpc_connections_rejected_total", "reason", "max_conns_per_peer"); got != 1 {
		t.Errorf("rejected{max_conns_per_peer} = %v; want 1", got)
	}
}

// TestFirstFrameTimeout: a connection that sends no complete frame in
// FirstFrameTimeout is closed, silent or trickling; once served, only the
// idle timeout applies.
func TestFirstFrameTimeout(t *testing.T) {
	gen := newGen(t, core.Config{})
	_, addr := serve(t, gen, central.Config{FirstFrameTimeout: 100 * time.Millisecond})
	silent := dial(t, addr)
	half := dial(t, addr)
	half.write(halfFrame)
	good := dial(t, addr)
	good.genID()
	t0 := time.Now()
	silent.closed()
	half.closed()
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("closed after %v; want about 100ms", d)
	}
	time.Sleep(300 * time.Millisecond)
	good.genID()
}

// TestShedStuck: at MaxConns with every connection mid-call, one whose
// peer has kept it waiting for the rest of a frame past a second is shed
// for a lighter peer's newcomer, the one held up longest first: half a
// frame is no hold on a place.
func TestShedStuck(t *testing.T) {
	gen := newGen(t, core.Config{})
	// A newcomer refused is closed at once, long before its first frame
	// would be due.
	addr, reg := serveMetered(t, gen, central.Config{MaxConns: 2, FirstFrameTimeout: time.Minute})
	first := makeBusy(dialFrom(t, addr, "127.0.0.2"))
	time.Sleep(100 * time.Millisecond)
	second := makeBusy(dialFrom(t, addr, "127.0.0.2"))
	dialFrom(t, addr, "127.0.0.3").closed() // neither has waited a second yet
	time.Sleep(1200 * time.Millisecond)
	dialFrom(t, addr, "127.0.0.2").closed() // their own peer's newcomer sheds neither
	dialFrom(t, addr, "127.0.0.3").genID()
	first.closed()
	second.write([]byte{'t', 'a', '.', 'G', 'e', 'n', 'I', 'D', 0x90}) // the rest of its frame: answered
	if resp := second.recv(); resp.Error != nil {
		t.Fatal(resp.Error)
	}
	if got := metric(t, reg, "vesta_rpc_connections_shed_total", "reason", "max_conns"); got != 1 {
		t.Errorf("shed{max_conns} = %v; want 1", got)
	}
}

// TestTrickleBoundedPerConnection: a peer that completes each frame
// within ReadTimeout and keeps the connection waiting for the next is
// closed once the waits add up past ReadTimeout (net of their drain): the
// bound is the connection's, not each frame's.
func TestTrickleBoundedPerConnection(t *testing.T) {
	gen := newGen(t, core.Config{})
	const readTimeout = 400 * time.Millisecond
	_, addr := serve(t, gen, central.Config{ReadTimeout: readTimeout})
	p := makeBusy(dial(t, addr))
	rest := []byte{'t', 'a', '.', 'G', 'e', 'n', 'I', 'D', 0x90}
	t0 := time.Now()
	for frames := 0; ; frames++ {
		time.Sleep(readTimeout * 3 / 4) // each frame within the read timeout
		p.id++
		next, err := p.enc.AppendRequest(nil, p.id, wire.ProcGenID, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.nc.Write(append(rest, next[:len(halfFrame)]...))
		if _, err := p.tryRecv(); err != nil {
			t.Logf("closed after %d frames, %v", frames, time.Since(t0).Round(time.Millisecond))
			if frames < 1 {
				t.Errorf("closed after %d frames; want a frame within the read timeout answered", frames)
			}
			return
		}
		if time.Since(t0) > 10*readTimeout {
			t.Fatalf("%v of a frame every %v, and the connection is still open", time.Since(t0), readTimeout*3/4)
		}
	}
}
