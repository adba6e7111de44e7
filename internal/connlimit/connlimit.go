// Package connlimit bounds a server's open connections, in all and per
// peer address, shedding idle connections before refusing new ones.
//
// A server calls Admit for each accepted connection and Release when it
// closes. At a cap, Admit first closes a victim to make room: the oldest
// connection that has not yet sent a complete request (state New), else
// the connection idle the longest (state Idle); only when every
// connection is in the middle of a request (Active) is the new one
// refused. So connections opened and left silent (an exhaustion attack)
// cannot lock out a client that speaks: each new connection pushes out
// the oldest silent one, which the first-request deadline would close
// soon anyway.
//
// Both the central (MessagePack-RPC) and the REST server use it, so the
// two follow one rule.
package connlimit

import (
	"container/list"
	"net"
	"sync"
	"sync/atomic"
)

// Reason is why Admit refused a connection or shed one: the label of the
// servers' metrics.
type Reason string

// Reasons.
const (
	// MaxConns: the server-wide cap.
	MaxConns Reason = "max_conns"
	// MaxConnsPerPeer: the cap of the peer's address.
	MaxConnsPerPeer Reason = "max_conns_per_peer"
)

// Limiter tracks open connections. A connection is new until its first
// complete request (Proven), then idle or busy: SetIdle and SetBusy are
// atomic stores, cheap enough for every read of a hot connection; the
// lock is taken only to admit, prove and release.
type Limiter struct {
	max, perPeer int

	mu    sync.Mutex
	n     int
	all   [2]list.List // [fresh], [proven]: *Conn, oldest first
	peers map[string]*peer
}

const (
	fresh  = 0
	proven = 1
)

type peer struct {
	n     int
	lists [2]list.List // [fresh], [proven]
}

// Conn is an admitted connection.
type Conn struct {
	l     *Limiter
	peer  string
	close func()

	busy      atomic.Bool  // proven and mid-request: never shed
	idleSince atomic.Int64 // when it last became idle, by the caller's clock

	// Guarded by l.mu.
	list     int
	released bool
	elem     *list.Element // in l.all[list]
	pelem    *list.Element // in peer.lists[list]
}

// NewLimiter returns a limiter of at most max connections in all and
// perPeer per peer address; both must be at least 1.
func NewLimiter(max, perPeer int) *Limiter {
	return &Limiter{max: max, perPeer: perPeer, peers: make(map[string]*peer)}
}

// PeerOf returns the key a connection's remote address counts under: its
// IP address without the port (the whole address when it has no port).
func PeerOf(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	if ta, ok := addr.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// Admit counts a new connection of peer. close closes it: Admit calls it
// (outside its lock, before returning) on another connection it sheds to
// make room, whose Release may follow at any time. It returns the
// connection, or nil and the cap that refused it; shed is the cap that
// made it shed a victim, "" when none.
func (l *Limiter) Admit(peerKey string, close func()) (c *Conn, shed, refused Reason) {
	l.mu.Lock()
	p := l.peers[peerKey]
	var victim *Conn
	switch {
	case p != nil && p.n >= l.perPeer:
		victim = pick(&p.lists)
		shed = MaxConnsPerPeer
	case l.n >= l.max:
		victim = pick(&l.all)
		shed = MaxConns
	}
	if shed != "" && victim == nil {
		l.mu.Unlock()
		return nil, "", shed
	}
	if victim != nil {
		l.releaseLocked(victim)
	}
	if p == nil {
		p = &peer{}
		l.peers[peerKey] = p
	}
	c = &Conn{l: l, peer: peerKey, close: close, list: fresh}
	c.elem = l.all[fresh].PushBack(c)
	c.pelem = p.lists[fresh].PushBack(c)
	l.n++
	p.n++
	l.mu.Unlock()
	if victim != nil {
		victim.close()
	}
	return c, shed, ""
}

// pick returns the victim: the oldest fresh connection, else the proven
// one idle the longest, else nil.
func pick(lists *[2]list.List) *Conn {
	if e := lists[fresh].Front(); e != nil {
		return e.Value.(*Conn)
	}
	var victim *Conn
	var since int64
	for e := lists[proven].Front(); e != nil; e = e.Next() {
		c := e.Value.(*Conn)
		if c.busy.Load() {
			continue
		}
		if s := c.idleSince.Load(); victim == nil || s < since {
			victim, since = c, s
		}
	}
	return victim
}

// Proven marks c as having sent a complete request, and busy: from now on
// it is shed only while idle, after the fresh ones.
func (c *Conn) Proven() {
	c.busy.Store(true)
	l := c.l
	l.mu.Lock()
	if !c.released && c.list == fresh {
		p := l.peers[c.peer]
		l.all[fresh].Remove(c.elem)
		p.lists[fresh].Remove(c.pelem)
		c.list = proven
		c.elem = l.all[proven].PushBack(c)
		c.pelem = p.lists[proven].PushBack(c)
	}
	l.mu.Unlock()
}

// SetIdle marks a proven c idle since now (any clock, the same for every
// connection of the limiter, such as Unix nanoseconds).
func (c *Conn) SetIdle(now int64) {
	c.idleSince.Store(now)
	c.busy.Store(false)
}

// SetBusy marks a proven c mid-request.
func (c *Conn) SetBusy() {
	if !c.busy.Load() {
		c.busy.Store(true)
	}
}

// Release uncounts c; it is idempotent.
func (c *Conn) Release() {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
}

func (l *Limiter) releaseLocked(c *Conn) {
	if c.released {
		return
	}
	c.released = true
	p := l.peers[c.peer]
	l.all[c.list].Remove(c.elem)
	p.lists[c.list].Remove(c.pelem)
	c.elem, c.pelem = nil, nil
	l.n--
	if p.n--; p.n == 0 {
		delete(l.peers, c.peer)
	}
}

// Len returns the connections counted.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}
