package connlimit_test

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/connlimit"
)

// clock is a fake clock for the grace periods; it moves only by advance.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1e9, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newLimiter is a limiter of max connections in all and perPeer per peer
// on clk.
func newLimiter(clk *clock, max, perPeer int) *connlimit.Limiter {
	return connlimit.NewLimiter(connlimit.Config{MaxConns: max, MaxConnsPerPeer: perPeer, Now: clk.Now})
}

// admit admits a connection whose close is recorded in closed.
func admit(t testing.TB, l *connlimit.Limiter, peer, name string, closed *[]string) (*connlimit.Conn, connlimit.Reason, connlimit.Reason) {
	t.Helper()
	return l.Admit(peer, func() { *closed = append(*closed, name) })
}

// proven admits name of peer, failing the test if it is not admitted, and
// marks it proven (it has sent a request).
func proven(t testing.TB, l *connlimit.Limiter, peer, name string, closed *[]string) *connlimit.Conn {
	t.Helper()
	c, shed, refused := admit(t, l, peer, name, closed)
	if c == nil {
		t.Fatalf("%s of %s: refused %q (shed %q); want it admitted", name, peer, refused, shed)
	}
	c.Proven()
	return c
}

// sheds admits name of peer at a cap and fails the test, saying what it
// wants and why, unless the newcomer is admitted by closing exactly one
// connection, victim, for the cap reason.
func sheds(t testing.TB, l *connlimit.Limiter, peer, name string, closed *[]string, victim string, reason connlimit.Reason, why string) {
	t.Helper()
	before := len(*closed)
	c, shed, _ := admit(t, l, peer, name, closed)
	if c == nil || shed != reason || len(*closed) != before+1 || (*closed)[before] != victim {
		t.Fatalf("%s (admitted %v, shed %q, closed %v after %d; want %s shed for %s)", why, c != nil, shed, *closed, before, victim, reason)
	}
}

func TestShedsNewThenIdleThenRefuses(t *testing.T) {
	var closed []string
	clk := newClock()
	l := newLimiter(clk, 3, 3)
	a, _, _ := admit(t, l, "p1", "a", &closed)
	b, _, _ := admit(t, l, "p2", "b", &closed)
	c, _, _ := admit(t, l, "p3", "c", &closed)
	a.Proven()
	b.Proven()
	b.SetIdle(1)
	clk.advance(2 * time.Second)
	// c is silent past the newcomer's grace: shed first although b has
	// been idle longer.
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
	clk := newClock()
	l := newLimiter(clk, 100, 2)
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
	// With both of its connections active, the peer is refused.
	l2 := newLimiter(clk, 100, 1)
	proven(t, l2, "bad", "y", &closed)
	if z, _, refused := admit(t, l2, "bad", "z", &closed); z != nil || refused != connlimit.MaxConnsPerPeer {
		t.Fatalf("peer at cap, all active: refused %q; want max_conns_per_peer", refused)
	}
	if z, _, refused := admit(t, l2, "good", "z", &closed); z == nil || refused != "" {
		t.Fatalf("another peer: refused %q; want admitted", refused)
	}
}

func TestReleaseAndSetAfterRelease(t *testing.T) {
	l := newLimiter(newClock(), 1, 1)
	c, _, _ := l.Admit("p", func() {})
	c.Release()
	c.Release()
	c.Proven()
	c.SetIdle(5)
	c.Hold(10)
	c.Unhold(10)
	if n := l.Len(); n != 0 || l.Unsent() != 0 {
		t.Fatalf("Len %d, Unsent %d; want 0, 0", n, l.Unsent())
	}
	if d, _, refused := l.Admit("p", func() {}); d == nil || refused != "" {
		t.Fatalf("refused %q after release", refused)
	}
}

// TestPeerKey: an IPv4 address is a peer (mapped or not); IPv6 addresses
// are grouped by their prefix, /64 by default.
func TestPeerKey(t *testing.T) {
	tcp := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s), Port: 5} }
	for _, tc := range []struct {
		addr net.Addr
		bits int
		want string
	}{
		{tcp("10.0.0.1"), 64, "10.0.0.1"},
		{tcp("::ffff:10.0.0.1"), 64, "10.0.0.1"},
		{tcp("::1"), 64, "::/64"},
		{tcp("2001:db8:1:2:aaaa::1"), 64, "2001:db8:1:2::/64"},
		{tcp("2001:db8:1:2:ffff:ffff:ffff:ffff"), 64, "2001:db8:1:2::/64"},
		{tcp("2001:db8:1:3::1"), 64, "2001:db8:1:3::/64"},
		{tcp("2001:db8:1:2:aaaa::1"), 48, "2001:db8:1::/48"},
		{tcp("2001:db8:1:2:aaaa::1"), 128, "2001:db8:1:2:aaaa::1"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0"}, 64, "fe80::/64"},
		{&net.UnixAddr{Name: "/x", Net: "unix"}, 64, "/x"},
		{nil, 64, ""},
	} {
		if got := connlimit.PeerKey(tc.addr, tc.bits); got != tc.want {
			t.Errorf("PeerKey(%v, %d) = %q; want %q", tc.addr, tc.bits, got, tc.want)
		}
	}
}

// TestIPv6PrefixIsOnePeer: connections from many addresses of one /64
// share its per-peer cap; another /64 is another peer.
func TestIPv6PrefixIsOnePeer(t *testing.T) {
	l := connlimit.NewLimiter(connlimit.Config{MaxConns: 100, MaxConnsPerPeer: 3})
	var closed []string
	for i := range 10 { // each newcomer sheds the /64's oldest, the young included
		ip := net.ParseIP("2001:db8:0:1::").To16()
		ip[15] = byte(i + 1)
		ip[8] = byte(i * 17) // another interface ID each
		c, _, refused := l.Admit(l.PeerOf(&net.TCPAddr{IP: ip, Port: 4000 + i}), func() { closed = append(closed, ip.String()) })
		if c == nil {
			t.Fatalf("%v refused (%s); want its /64's oldest silent one shed", ip, refused)
		}
	}
	if len(closed) != 7 || l.Len() != 3 {
		t.Fatalf("10 addresses of one /64 with max_conns_per_peer 3: %d shed, %d held; want 7, 3", len(closed), l.Len())
	}
	if c, shed, _ := l.Admit(l.PeerOf(&net.TCPAddr{IP: net.ParseIP("2001:db8:0:2::1")}), func() {}); c == nil || shed != "" {
		t.Fatalf("another /64: shed %q; want admitted beside them", shed)
	}
}

// TestIdleLongestFirst: among proven connections the one idle the longest
// goes; busy ones never do.
func TestIdleLongestFirst(t *testing.T) {
	var closed []string
	l := newLimiter(newClock(), 3, 3)
	conns := map[string]*connlimit.Conn{}
	for _, n := range []string{"a", "b", "c"} {
		conns[n] = proven(t, l, "p", n, &closed)
	}
	conns["a"].SetIdle(30)
	conns["b"].SetIdle(10)
	conns["c"].SetIdle(20)
	conns["b"].SetBusy() // idle longest, but busy again
	sheds(t, l, "q", "d", &closed, "c", connlimit.MaxConns, "a newcomer; want c, idle since 20 (b is busy)")
}

// TestYoungNewcomersShedIdleFirst: a newcomer still within its grace
// (sending its first request) goes after an idle connection silent longer
// than it, so that newcomers at a cap full of long-idle connections do not
// push out each other; with nothing else to shed, the oldest newcomer
// goes. A connection idle for a moment between calls outlives a flood of
// newcomers silent longer (TestPooledOutlivesFlood).
func TestYoungNewcomersShedIdleFirst(t *testing.T) {
	var closed []string
	clk := newClock()
	l := newLimiter(clk, 3, 3)
	idle := proven(t, l, "flood", "idle", &closed)
	idle.SetIdle(clk.Now().UnixNano())
	clk.advance(time.Hour)
	admit(t, l, "good", "n1", &closed)
	admit(t, l, "good", "n2", &closed)
	sheds(t, l, "good", "n3", &closed, "idle", connlimit.MaxConns, "a newcomer beside younger ones and an idle one; want the idle one")
	sheds(t, l, "good", "n4", &closed, "n1", connlimit.MaxConnsPerPeer, "only newcomers left; want the oldest, n1")
}

// TestFloodSparesOthersNewcomers: at a cap full of newcomers within
// their grace, a flood's newcomer pushes out the flood's own oldest, not
// a lighter peer's (a caller's TLS handshake), although that one is older;
// another light peer's newcomer pushes out the flood's too.
func TestFloodSparesOthersNewcomers(t *testing.T) {
	var closed []string
	l := newLimiter(newClock(), 3, 3)
	admit(t, l, "caller", "caller", &closed)
	admit(t, l, "flood", "f1", &closed)
	admit(t, l, "flood", "f2", &closed)
	sheds(t, l, "flood", "f3", &closed, "f1", connlimit.MaxConns, "a flood's newcomer at a cap of newcomers; want f1, the flood's oldest")
	sheds(t, l, "other", "o1", &closed, "f2", connlimit.MaxConns, "another caller's newcomer; want f2, the heavier peer's, not caller")
}

// TestPooledOutlivesFlood: a busy client's pooled connection, idle for a
// moment between calls, is not shed for newcomers while a newcomer silent
// longer than it is there to go.
func TestPooledOutlivesFlood(t *testing.T) {
	var closed []string
	clk := newClock()
	l := newLimiter(clk, 3, 3)
	pooled := proven(t, l, "client", "pooled", &closed)
	admit(t, l, "flood", "f1", &closed)
	admit(t, l, "flood", "f2", &closed)
	clk.advance(50 * time.Millisecond)
	pooled.SetIdle(clk.Now().UnixNano()) // answered; its next call is coming
	sheds(t, l, "flood", "f3", &closed, "f1", connlimit.MaxConns, "a flood's newcomer beside a pooled connection just idle; want f1, the flood's oldest")
}

// TestStarvedPooledOutlivesFlood: on a starved machine a pooled
// connection's gap between calls can outlast a flood's newest arrivals;
// idle for less than a newcomer may stay silent (freshGrace), it still
// outlives them, and only past that does it give way. A connection
// answered once, then idle (an idle flood's), gets no such grace.
func TestStarvedPooledOutlivesFlood(t *testing.T) {
	var closed []string
	clk := newClock()
	l := newLimiter(clk, 4, 4)
	once := proven(t, l, "flood", "once", &closed)
	once.SetIdle(clk.Now().UnixNano()) // one request, then silence
	pooled := proven(t, l, "client", "pooled", &closed)
	pooled.SetIdle(clk.Now().UnixNano())
	pooled.SetBusy()
	pooled.SetIdle(clk.Now().UnixNano()) // answered again; its next call is late
	clk.advance(300 * time.Millisecond)
	admit(t, l, "flood", "f1", &closed)
	admit(t, l, "flood", "f2", &closed)
	clk.advance(300 * time.Millisecond) // both idle 600 ms, longer than f1 has been silent
	sheds(t, l, "good", "n1", &closed, "once", connlimit.MaxConns, "a connection answered once, idle 600 ms, beside newcomers of 300 ms; want it (once)")
	sheds(t, l, "flood", "f3", &closed, "f1", connlimit.MaxConns, "a pooled connection idle 600 ms beside newcomers of 300 ms; want f1, the flood's oldest")
	clk.advance(500 * time.Millisecond) // idle 1.1 s; f2, n1 and f3 within their grace
	sheds(t, l, "flood", "f4", &closed, "pooled", connlimit.MaxConns, "a pooled connection idle past freshGrace beside young newcomers; want it (pooled)")
}

// TestBudgetShedsAnyListener: at the process's budget a newcomer of one
// listener sheds the oldest silent connection of any, and is refused when
// all are busy, counted as fd_budget.
func TestBudgetShedsAnyListener(t *testing.T) {
	b := connlimit.NewBudget(3)
	clk := newClock()
	rpc := connlimit.NewLimiter(connlimit.Config{MaxConns: 100, MaxConnsPerPeer: 100, Budget: b, Now: clk.Now})
	metrics := connlimit.NewLimiter(connlimit.Config{MaxConns: 100, MaxConnsPerPeer: 100, Budget: b, Now: clk.Now})
	var closed []string
	s1, _, _ := admit(t, metrics, "flood", "s1", &closed)
	admit(t, metrics, "flood", "s2", &closed)
	admit(t, metrics, "flood", "s3", &closed)
	clk.advance(2 * time.Second)
	good, shed, _ := admit(t, rpc, "good", "good", &closed)
	if good == nil || shed != connlimit.FDBudget || len(closed) != 1 || closed[0] != "s1" {
		t.Fatalf("newcomer at the budget: shed %q, closed %v; want s1 of the other listener shed for fd_budget", shed, closed)
	}
	s1.Release()
	if b.Len() != 3 || metrics.Len() != 2 || rpc.Len() != 1 {
		t.Fatalf("budget %d, metrics %d, rpc %d; want 3, 2, 1", b.Len(), metrics.Len(), rpc.Len())
	}
	good.Proven()
	for _, n := range []string{"x", "y"} {
		c, _, _ := admit(t, rpc, "good", n, &closed)
		c.Proven()
	}
	if c, _, refused := admit(t, metrics, "flood", "z", &closed); c != nil || refused != connlimit.FDBudget {
		t.Fatalf("budget full of busy connections: refused %q; want fd_budget", refused)
	}
}

// TestStreamsTakePlaces: an HTTP/2 connection's streams beyond its first
// take places under the caps: they shed an idle connection, or are
// refused when none can go; ended, they give the places back.
func TestStreamsTakePlaces(t *testing.T) {
	l := newLimiter(newClock(), 10, 3)
	var closed []string
	h2, _, _ := admit(t, l, "p", "h2", &closed)
	idle := proven(t, l, "p", "idle", &closed)
	idle.SetIdle(1)
	if r := h2.StreamStart(); r != "" || l.Len() != 2 {
		t.Fatalf("first stream: refused %q, Len %d; want counted in the connection's own place", r, l.Len())
	}
	if r := h2.StreamStart(); r != "" || l.Len() != 3 {
		t.Fatalf("second stream: refused %q, Len %d; want a place of its own", r, l.Len())
	}
	if r := h2.StreamStart(); r != "" || len(closed) != 1 || closed[0] != "idle" {
		t.Fatalf("third stream at the peer's cap: refused %q, closed %v; want the idle connection shed", r, closed)
	}
	if r := h2.StreamStart(); r != connlimit.MaxConnsPerPeer {
		t.Fatalf("fourth stream, nothing to shed: refused %q; want max_conns_per_peer", r)
	}
	h2.StreamEnd()
	if r := h2.StreamStart(); r != "" {
		t.Fatalf("after a stream ended: refused %q; want counted", r)
	}
	for range 3 {
		h2.StreamEnd()
	}
	if l.Len() != 1 {
		t.Fatalf("all streams ended: Len %d; want 1", l.Len())
	}
	h2.StreamStart()
	h2.StreamStart()
	h2.Release()
	h2.StreamEnd()
	if l.Len() != 0 {
		t.Fatalf("released with streams open: Len %d; want 0", l.Len())
	}

	// A stream never pushes out a newcomer still sending its first
	// request: it is refused instead.
	clk := newClock()
	l2 := newLimiter(clk, 10, 2)
	h2, _, _ = admit(t, l2, "p", "h2", &closed)
	admit(t, l2, "p", "newcomer", &closed)
	h2.StreamStart()
	if r := h2.StreamStart(); r != connlimit.MaxConnsPerPeer || len(closed) != 1 {
		t.Fatalf("a stream beside a newcomer within its grace: refused %q, closed %v; want refused, the newcomer kept", r, closed)
	}
	clk.advance(2 * time.Second)
	if r := h2.StreamStart(); r != "" || len(closed) != 2 || closed[1] != "newcomer" {
		t.Fatalf("a stream beside a connection silent past its grace: refused %q, closed %v; want it shed", r, closed)
	}
}

// TestHoldShedsOldestHolder: past a peer's share of MaxUnsentBytes the
// connection that has held its answer the longest is closed, never the
// writer itself; one answer alone is never cut; other peers are not
// touched by one peer's share.
func TestHoldShedsOldestHolder(t *testing.T) {
	// 1000 bytes over 10 connections, 2 per peer: a peer's share is 200.
	clk := newClock()
	l := connlimit.NewLimiter(connlimit.Config{MaxConns: 10, MaxConnsPerPeer: 2, MaxUnsentBytes: 1000, Now: clk.Now})
	var closed []string
	a := proven(t, l, "slow", "a", &closed)
	b := proven(t, l, "slow", "b", &closed)
	o := proven(t, l, "other", "o", &closed)
	a.Hold(5000) // one answer alone, larger than anything: never cut
	if len(closed) != 0 {
		t.Fatalf("one answer past the bound: closed %v; want none", closed)
	}
	o.Hold(150)
	clk.advance(time.Millisecond)
	b.Hold(100) // the peer is past its share: a, holding longest, goes
	if len(closed) != 1 || closed[0] != "a" {
		t.Fatalf("peer past its share: closed %v; want a", closed)
	}
	a.Unhold(5000) // its write returns once closed: counted nothing twice
	if got := l.Unsent(); got != 250 {
		t.Fatalf("Unsent %d; want 250 (b's 100, o's 150)", got)
	}
	b.Unhold(100)
	o.Unhold(150)
	if got := l.Unsent(); got != 0 {
		t.Fatalf("Unsent %d after every write returned; want 0", got)
	}
}

// TestHoldServerWide: past MaxUnsentBytes over the listener, the oldest holder
// of any peer goes.
func TestHoldServerWide(t *testing.T) {
	clk := newClock()
	l := connlimit.NewLimiter(connlimit.Config{MaxConns: 4, MaxConnsPerPeer: 4, MaxUnsentBytes: 1000, Now: clk.Now})
	var closed []string
	for _, p := range []string{"p1", "p2", "p3"} {
		c, _, _ := admit(t, l, p, p, &closed)
		c.Proven()
		c.Hold(400)
		clk.advance(time.Millisecond)
	}
	if len(closed) != 1 || closed[0] != "p1" || l.Unsent() != 800 {
		t.Fatalf("1200 bytes held of 1000: closed %v, Unsent %d; want p1 closed, 800", closed, l.Unsent())
	}
}

// TestMaxUnsentBytesZeroAndOff: zero is DefaultMaxUnsentBytes, as the
// metrics listener's YAML reads it, and a negative value bounds nothing,
// as the YAML's -1 does: 9 MiB held over the listener sheds one holder at
// zero and none at -1.
func TestMaxUnsentBytesZeroAndOff(t *testing.T) {
	for _, tc := range []struct {
		unsent int64
		shed   int
	}{{0, 1}, {-1, 0}, {16 << 20, 0}} {
		clk := newClock()
		cfg := connlimit.Config{MaxConns: 4, MaxConnsPerPeer: 4, MaxUnsentBytes: tc.unsent, Now: clk.Now}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("MaxUnsentBytes %d: %v", tc.unsent, err)
		}
		l := connlimit.NewLimiter(cfg)
		var closed []string
		for _, p := range []string{"p1", "p2", "p3"} {
			c, _, _ := admit(t, l, p, p, &closed)
			c.Proven()
			c.Hold(3 << 20)
			clk.advance(time.Millisecond)
		}
		if len(closed) != tc.shed {
			t.Errorf("MaxUnsentBytes %d, 9 MiB held: closed %v; want %d shed", tc.unsent, closed, tc.shed)
		}
	}
}

// TestStalledShedAtCap: at a cap with every connection busy, one whose
// answer has waited for its peer longer than a second is shed for a
// lighter peer's newcomer; a busy one that holds nothing is not, and
// neither is one of the newcomer's own peer (a flood redialling what is
// shed would otherwise renew its connections as fast as they stall).
func TestStalledShedAtCap(t *testing.T) {
	clk := newClock()
	l := newLimiter(clk, 2, 2)
	var closed []string
	reader, _, _ := admit(t, l, "p", "reader", &closed)
	stalled, _, _ := admit(t, l, "p", "stalled", &closed)
	reader.Proven()
	stalled.Proven()
	stalled.Hold(100 << 10)
	if c, _, refused := admit(t, l, "q", "early", &closed); c != nil || refused != connlimit.MaxConns {
		t.Fatalf("an answer held for less than a second: refused %q; want the newcomer refused", refused)
	}
	clk.advance(1100 * time.Millisecond)
	if c, _, refused := admit(t, l, "p", "own", &closed); c != nil || refused != connlimit.MaxConnsPerPeer {
		t.Fatalf("a newcomer of the stalled connection's own peer: refused %q, closed %v; want refused", refused, closed)
	}
	sheds(t, l, "q", "late", &closed, "stalled", connlimit.MaxConns, "an answer held past a second; want stalled shed")
}

func TestConfigValidate(t *testing.T) {
	ok := connlimit.Config{MaxConns: 1, MaxConnsPerPeer: 1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		set  func(*connlimit.Config)
		want string
	}{
		{func(c *connlimit.Config) { c.MaxConns = 0 }, "MaxConns 0; want 1-1000000"},
		{func(c *connlimit.Config) { c.MaxConnsPerPeer = 1_000_001 }, "MaxConnsPerPeer 1000001"},
		{func(c *connlimit.Config) { c.PeerPrefixV6 = 129 }, "PeerPrefixV6 129"},
		{func(c *connlimit.Config) { c.MaxUnsentBytes = 1<<30 + 1 }, "MaxUnsentBytes 1073741825"},
		{func(c *connlimit.Config) { c.FirstRequest = -time.Second }, "FirstRequest -1s"},
	} {
		c := ok
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v; want %q", err, tc.want)
		}
	}
}
