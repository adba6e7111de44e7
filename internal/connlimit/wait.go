package connlimit

import "time"

// A connection the server waits on, mid-request, for bytes its peer owes
// (the rest of a frame, a request body) is neither idle nor busy with
// work of the server's: its peer holds it. A client sends a request
// whole, so such waits last a round trip at most; a peer that keeps the
// server waiting (a frame completed every few seconds, a body promised
// and never sent) holds a place as long as it likes if each wait is
// judged alone, as a read deadline per frame does.
//
// So each connection keeps its owed time: it grows by the time its peer
// keeps it waiting and drains at 1/owedDrain of the clock's pace, so that
// a client whose requests now and then straddle a lost segment owes
// nothing for long, while a peer that keeps the server waiting most of the
// time owes more the longer it does. Past stuckAfter, a connection
// waiting on its peer is stuck: at a cap it is shed as a stalled reader
// is (pick). Past the caller's limit (Await), the connection is due to
// close whatever the caps: its time is bounded per connection, not per
// request.

// stuckAfter is the owed time past which a connection waiting on its
// peer may be shed at a cap, as a stalled one is past stallAfter.
const stuckAfter = time.Second

// owedDrain: owed time drains at 1/owedDrain of the clock's pace, so a
// peer that keeps its connection waiting more than that share of the
// time owes ever more.
const owedDrain = 8

// Await marks c as waiting, from now (the clock of SetIdle), for bytes
// its peer owes mid-request, until Arrived; an HTTP/2 connection waits
// only while each of its open streams does. It returns how much longer
// the peer may keep it waiting before c's owed time passes limit, which
// is at most limit: a deadline for the read; zero or less when it has
// passed, and the caller should close c. Waits already within the
// drain (a buffered body read, say) cost two calls and nothing more.
func (c *Conn) Await(now int64, limit time.Duration) time.Duration {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.awaiting.Add(1)
	c.rewaitLocked(now)
	owed := c.owedLocked(now)
	// The owed time grows at (owedDrain-1)/owedDrain of the clock's pace
	// while c waits.
	return time.Duration((int64(limit) - owed) * owedDrain / (owedDrain - 1))
}

// Arrived ends a wait Await began.
func (c *Conn) Arrived(now int64) {
	c.wmu.Lock()
	if c.awaiting.Load() > 0 {
		c.awaiting.Add(-1)
	}
	c.rewaitLocked(now)
	c.wmu.Unlock()
}

// endWaits ends every wait of c: it is idle, so its peer owes nothing.
func (c *Conn) endWaits(now int64) {
	if c.awaiting.Load() == 0 { // the common case: one atomic load
		return
	}
	c.wmu.Lock()
	c.awaiting.Store(0)
	c.rewaitLocked(now)
	c.wmu.Unlock()
}

// rewait is rewaitLocked with wmu taken.
func (c *Conn) rewait(now int64) {
	c.wmu.Lock()
	c.rewaitLocked(now)
	c.wmu.Unlock()
}

// rewaitLocked starts or ends c's wait at now as its streams and waits
// say: it waits while every open stream (one, outside HTTP/2) awaits its
// peer. The caller holds wmu.
func (c *Conn) rewaitLocked(now int64) {
	n := c.awaiting.Load()
	waiting := n > 0 && n >= c.open.Load()
	if waiting == (c.waitFrom != 0) {
		return
	}
	c.owed, c.owedAt = c.owedLocked(now), now
	if waiting {
		c.waitFrom = now
	} else {
		c.waitFrom = 0
	}
}

// owedLocked is c's owed time at now, in nanoseconds; the caller holds
// wmu.
func (c *Conn) owedLocked(now int64) int64 {
	d := max(now-c.owedAt, 0)
	if c.waitFrom != 0 {
		return c.owed + d - d/owedDrain
	}
	return max(c.owed-d/owedDrain, 0)
}

// stuckSince reports whether c is waiting on its peer with its owed time
// past stuckAfter, and since when it would have waited had it waited
// without a break (now less its owed time): the order of victims among
// stuck and stalled connections.
func (c *Conn) stuckSince(now int64) (int64, bool) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.waitFrom == 0 {
		return 0, false
	}
	owed := c.owedLocked(now)
	return now - owed, owed > int64(stuckAfter)
}

// Owed returns c's owed time at now: how long its peer has kept it
// waiting mid-request, net of the drain.
func (c *Conn) Owed(now int64) time.Duration {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return time.Duration(c.owedLocked(now))
}
