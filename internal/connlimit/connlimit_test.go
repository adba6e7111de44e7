package connlimit_test

import (
	"net"
	"testing"

	"github.com/vesta-go/vesta/internal/connlimit"
)

// admit admits a connection whose close is recorded in closed.
func admit(t testing.TB, l *connlimit.Limiter, peer, name string, closed *[]string) (*connlimit.Conn, connlimit.Reason, connlimit.Reason) {
	t.Helper()
	return l.Admit(peer, func() { *closed = append(*closed, name) })
}

func TestShedsNewThenIdleThenRefuses(t *testing.T) {
	var closed []string
	l := connlimit.NewLimiter(3, 3)
	a, _, _ := admit(t, l, "p1", "a", &closed)
	b, _, _ := admit(t, l, "p2", "b", &closed)
	c, _, _ := admit(t, l, "p3", "c", &closed)
	a.Proven()
	b.Proven()
	b.SetIdle(1)
	// c is New: shed first although b has been idle longer.
	d, shed, refused := admit(t, l, "p4", "d", &closed)
	if d == nil || shed != connlimit.MaxConns || refused != "" || len(closed) != 1 || closed[0] != "c" {
		t.Fatalf("4th: conn %v shed %q refused %q closed %v; want c shed for max_conns", d, shed, refused, closed)
	}
	c.Release() // the victim's own release later counts nothing
	if n := l.Len(); n != 3 {
		t.Fatalf("Len %d; want 3", n)
	}
	d.Proven()
	e, shed, _ := admit(t, l, "p5", "e", &closed)
	if e == nil || shed != connlimit.MaxConns || closed[1] != "b" {
		t.Fatalf("5th: conn %v shed %q closed %v; want idle b shed", e, shed, closed)
	}
	e.Proven()
	f, shed, refused := admit(t, l, "p6", "f", &closed)
	if f != nil || shed != "" || refused != connlimit.MaxConns || len(closed) != 2 {
		t.Fatalf("6th with all active: conn %v shed %q refused %q closed %v; want refused", f, shed, refused, closed)
	}
	a.Release()
	if g, shed, refused := admit(t, l, "p6", "g", &closed); g == nil || shed != "" || refused != "" {
		t.Fatalf("after a release: conn %v shed %q refused %q; want admitted", g, shed, refused)
	}
}

func TestPerPeerShedsOnlyThePeersOwn(t *testing.T) {
	var closed []string
	l := connlimit.NewLimiter(100, 2)
	other, _, _ := admit(t, l, "good", "other", &closed) // New, oldest of all
	x1, _, _ := admit(t, l, "bad", "x1", &closed)
	admit(t, l, "bad", "x2", &closed)
	x3, shed, _ := admit(t, l, "bad", "x3", &closed)
	if x3 == nil || shed != connlimit.MaxConnsPerPeer || len(closed) != 1 || closed[0] != "x1" {
		t.Fatalf("3rd of peer: shed %q closed %v; want x1 shed for max_conns_per_peer", shed, closed)
	}
	x1.Release()
	if other.Proven(); l.Len() != 3 {
		t.Fatalf("Len %d; want 3", l.Len())
	}
	// With both of the peer's connections active, the peer is refused.
	l2 := connlimit.NewLimiter(100, 1)
	y, _, _ := admit(t, l2, "bad", "y", &closed)
	y.Proven()
	if z, _, refused := admit(t, l2, "bad", "z", &closed); z != nil || refused != connlimit.MaxConnsPerPeer {
		t.Fatalf("peer at cap, all active: refused %q; want max_conns_per_peer", refused)
	}
	if z, _, refused := admit(t, l2, "good", "z", &closed); z == nil || refused != "" {
		t.Fatalf("another peer: refused %q; want admitted", refused)
	}
}

func TestReleaseAndSetAfterRelease(t *testing.T) {
	l := connlimit.NewLimiter(1, 1)
	c, _, _ := l.Admit("p", func() {})
	c.Release()
	c.Release()
	c.Proven()
	c.SetIdle(5)
	if n := l.Len(); n != 0 {
		t.Fatalf("Len %d; want 0", n)
	}
	if d, _, refused := l.Admit("p", func() {}); d == nil || refused != "" {
		t.Fatalf("refused %q after release", refused)
	}
}

func TestPeerOf(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 5}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 5}, "::1"},
		{&net.UnixAddr{Name: "/x", Net: "unix"}, "/x"},
		{nil, ""},
	} {
		if got := connlimit.PeerOf(tc.addr); got != tc.want {
			t.Errorf("PeerOf(%v) = %q; want %q", tc.addr, got, tc.want)
		}
	}
}

// TestIdleLongestFirst: among proven connections the one idle the longest
// goes; busy ones never do.
func TestIdleLongestFirst(t *testing.T) {
	var closed []string
	l := connlimit.NewLimiter(3, 3)
	conns := map[string]*connlimit.Conn{}
	for _, n := range []string{"a", "b", "c"} {
		c, _, _ := admit(t, l, "p", n, &closed)
		c.Proven()
		conns[n] = c
	}
	conns["a"].SetIdle(30)
	conns["b"].SetIdle(10)
	conns["c"].SetIdle(20)
	conns["b"].SetBusy() // idle longest, but busy again
	if d, _, _ := admit(t, l, "q", "d", &closed); d == nil || len(closed) != 1 || closed[0] != "c" {
		t.Fatalf("closed %v; want c, idle since 20 (b is busy)", closed)
	}
}
