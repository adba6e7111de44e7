package connlimit_test

import (
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/connlimit"
)

// unix is the clock's reading in the unit SetIdle and Await take.
func (c *clock) unix() int64 { return c.Now().UnixNano() }

// TestStuckShedAtCap: at a cap with every connection busy, one whose peer
// has kept it waiting mid-request past a second of owed time is shed for
// a lighter peer's newcomer (not for its own peer's); one that waits
// briefly, or whose server works for it, is not.
func TestStuckShedAtCap(t *testing.T) {
	clk := newClock()
	l := newLimiter(clk, 3, 3)
	var closed []string
	proven(t, l, "p", "work", &closed) // busy: its server works for it
	brief := proven(t, l, "p", "brief", &closed)
	stuck := proven(t, l, "p", "stuck", &closed)
	stuck.Await(clk.unix(), 10*time.Second)
	clk.advance(900 * time.Millisecond)
	brief.Await(clk.unix(), 10*time.Second)
	if c, _, refused := admit(t, l, "q", "early", &closed); c != nil || refused != connlimit.MaxConns {
		t.Fatalf("a wait of 0.9 s: refused %q, closed %v; want the newcomer refused", refused, closed)
	}
	clk.advance(400 * time.Millisecond) // stuck has waited 1.3 s: owed 1.14 s
	if c, _, refused := admit(t, l, "p", "own", &closed); c != nil || refused != connlimit.MaxConnsPerPeer {
		t.Fatalf("a newcomer of the stuck connection's own peer: refused %q, closed %v; want refused", refused, closed)
	}
	sheds(t, l, "q", "late", &closed, "stuck", connlimit.MaxConns, "a wait of 1.3 s beside one of 0.4 s and a busy one; want stuck shed")
}

// TestTrickleOwes: a peer that completes a request every few seconds and
// then keeps the connection waiting for the next (an RPC frame and one
// byte of the next; an HTTP body promised and sent late) owes ever more,
// although each wait alone is short: it is stuck once a second is owed,
// and its limit passes after about 8/7 of it. A client whose requests
// straddle a lost segment now and then owes nothing for long.
func TestTrickleOwes(t *testing.T) {
	clk := newClock()
	l := newLimiter(clk, 2, 2)
	var closed []string
	const limit = 10 * time.Second
	honest := proven(t, l, "p", "honest", &closed)
	for range 10_000 { // a segment lost every 10 s, the rest a round trip later
		honest.Await(clk.unix(), limit)
		clk.advance(200 * time.Millisecond)
		honest.Arrived(clk.unix())
		clk.advance(10 * time.Second)
	}
	if got := honest.Owed(clk.unix()); got != 0 {
		t.Errorf("a client waited on 200 ms every 10 s owes %v after 10,000 times; want 0", got)
	}

	trickle := proven(t, l, "p", "trickle", &closed)
	waited := time.Duration(0)
	for left := trickle.Await(clk.unix(), limit); left > 0; left = trickle.Await(clk.unix(), limit) {
		if waited > 2*limit {
			t.Fatalf("a peer waited on %v of every 300 ms still has %v left", waited, left)
		}
		clk.advance(250 * time.Millisecond) // a byte a quarter second...
		trickle.Arrived(clk.unix())
		clk.advance(50 * time.Millisecond) // ...and the server's work
		waited += 250 * time.Millisecond
	}
	trickle.Arrived(clk.unix())
	t.Logf("a peer keeping its connection waiting 5/6 of the time reached the limit of %v after %v of waits", limit, waited)
	// 250 ms owed less 300/8 ms drained a step: 10 s after 47 steps.
	if waited < limit || waited > 14*time.Second {
		t.Errorf("limit reached after %v of waits; want %v to 14 s", waited, limit)
	}

	honest.Await(clk.unix(), limit)
	clk.advance(500 * time.Millisecond)
	if c, _, refused := admit(t, l, "q", "new", &closed); c != nil || refused != connlimit.MaxConns || len(closed) != 0 {
		t.Fatalf("the honest client half a second into a wait, the trickle not waiting: refused %q, closed %v; want refused", refused, closed)
	}
	trickle.Await(clk.unix(), limit)
	sheds(t, l, "q", "new", &closed, "trickle", connlimit.MaxConns, "the trickle waiting again; want it shed at once")
}

// TestIdleEndsWaits: a connection that turns idle owes nothing more
// (HTTP/1.1's wait for the rest of a body ends when the connection takes
// its next request).
func TestIdleEndsWaits(t *testing.T) {
	clk := newClock()
	l := newLimiter(clk, 1, 1)
	var closed []string
	c := proven(t, l, "p", "c", &closed)
	c.Await(clk.unix(), time.Minute)
	clk.advance(2 * time.Second)
	c.SetIdle(clk.unix())
	owed := c.Owed(clk.unix())
	clk.advance(time.Hour)
	if o := c.Owed(clk.unix()); owed < time.Second || o != 0 {
		t.Fatalf("owed %v when it turned idle, %v an hour later; want about 1.75 s, then 0", owed, o)
	}
}

// TestStreamsWaitTogether: an HTTP/2 connection waits on its peer only
// while each of its open streams does; a stream the server works for
// keeps it off the victims.
func TestStreamsWaitTogether(t *testing.T) {
	clk := newClock()
	l := newLimiter(clk, 2, 2)
	var closed []string
	h2, _, _ := admit(t, l, "p", "h2", &closed)
	h2.StreamStart()
	h2.StreamStart()                  // two places
	h2.Await(clk.unix(), time.Minute) // one stream's body is late
	clk.advance(3 * time.Second)
	if c, _, refused := admit(t, l, "q", "new", &closed); c != nil || refused != connlimit.MaxConns {
		t.Fatalf("one of two streams waiting: refused %q, closed %v; want refused", refused, closed)
	}
	h2.StreamEnd() // the other one is answered: every open stream waits
	proven(t, l, "p", "filler", &closed)
	clk.advance(1200 * time.Millisecond)
	sheds(t, l, "q", "new", &closed, "h2", connlimit.MaxConns, "its one open stream waiting 1.2 s; want it shed")
}

// TestBudgetReserves: each listener keeps its reserve of the descriptor
// budget: connections of another that cannot be shed (the server works
// for them) do not keep its newcomers out, and at the budget a newcomer
// sheds only a connection whose going makes room for it.
func TestBudgetReserves(t *testing.T) {
	b := connlimit.NewBudget(80) // a reserve of 10 each
	clk := newClock()
	rpc := connlimit.NewLimiter(connlimit.Config{MaxConns: 1000, MaxConnsPerPeer: 1000, Budget: b, Now: clk.Now})
	rest := connlimit.NewLimiter(connlimit.Config{MaxConns: 1000, MaxConnsPerPeer: 1000, Budget: b, Now: clk.Now})
	metrics := connlimit.NewLimiter(connlimit.Config{MaxConns: 5, MaxConnsPerPeer: 5, Budget: b, Now: clk.Now})
	var closed []string
	flood := 0
	for {
		c, _, refused := admit(t, rpc, "flood", "flood", &closed)
		if c == nil {
			if refused != connlimit.FDBudget {
				t.Fatalf("the flood refused for %q; want fd_budget", refused)
			}
			break
		}
		c.Proven() // busy: the server works for it
		flood++
	}
	if flood != 80-10-5 {
		t.Fatalf("a flood of busy RPC connections held %d of 80; want 65 (REST's 10 and metrics' 5 kept)", flood)
	}
	for i := range 10 {
		c, shed, refused := admit(t, rest, "probe", "probe", &closed)
		if c == nil || shed != "" {
			t.Fatalf("REST newcomer %d beside the flood: shed %q refused %q; want admitted from its reserve", i, shed, refused)
		}
		c.Proven()
	}
	if c, _, refused := admit(t, rest, "probe", "probe", &closed); c != nil || refused != connlimit.FDBudget {
		t.Fatalf("REST past its reserve, the rest busy: refused %q; want fd_budget", refused)
	}
	// A silent metrics connection past its grace is no victim for REST:
	// shedding it would give REST nothing, the place being metrics'.
	m, _, _ := admit(t, metrics, "scraper", "m1", &closed)
	clk.advance(2 * time.Second)
	if c, _, refused := admit(t, rest, "probe", "probe", &closed); c != nil || len(closed) != 0 {
		t.Fatalf("REST at the budget beside a silent metrics connection within its reserve: refused %q, closed %v; want refused, none shed", refused, closed)
	}
	m.Release()
	if b.Len() != 75 {
		t.Fatalf("budget Len %d; want 75", b.Len())
	}
}
