// Package connlimit is the listener policy of every port vesta serves
// (central's MessagePack-RPC, REST, the metrics listener): it bounds a
// server's open connections, in all, per peer and against the process's
// file descriptors, shedding connections that hold a place without using
// it before refusing new ones, and bounds what peers that do not read
// can make the server hold.
//
// A Limiter is one listener's policy. Listen wraps the net.Listener: each
// accepted connection is admitted (Admit) and released when it closes. At
// a cap, Admit first closes a victim to make room: the oldest connection
// that has not yet sent a complete request (fresh), else the one idle the
// longest, else the one its peer holds up the longest — answers waiting
// for a peer that does not read them (stalled), or a request whose rest
// (a frame's, a body) the peer keeps the server waiting for (stuck,
// wait.go); only when the server works for every connection is the new
// one refused. So connections opened and left silent, idle, unread or
// half-sent (an exhaustion attack) cannot lock out a client that speaks:
// each new connection pushes out one of them, which a deadline would
// close soon anyway.
//
// The caps:
//
//   - MaxConns, for the listener. An HTTP/2 connection's streams beyond
//     its first take a place each (StreamStart), so the caps bound the
//     requests served at once whatever the protocol.
//   - MaxConnsPerPeer, for one peer: an IPv4 address, or an IPv6 prefix
//     (PeerPrefixV6, /64 by default, as one host commonly holds a whole
//     /64). At the per-peer cap the victim is that peer's own, so one peer
//     cannot push out another's connections.
//   - A Budget shared by every listener of the process: the connections
//     the file descriptors allow, with a reserve kept for the time guard,
//     the lease and the segment stores (Descriptors). Each listener keeps
//     a share of it (an eighth, at most its MaxConns) that the others'
//     connections cannot take; past its share, the victim may be any
//     listener's whose going makes room.
//   - MaxUnsentBytes: the bytes of answers held for the listener's peers in
//     writes not yet taken by the kernel (Hold); each peer gets the share
//     MaxUnsentBytes × MaxConnsPerPeer / MaxConns. Past it the connections
//     whose answers have waited longest are closed.
//
// Shedding is safe because a fresh connection has sent nothing, an idle
// one has nothing in flight (its client redials), a stalled one is not
// reading its answers and a stuck one has not sent its request; the cost
// is that at a cap a client's idle pooled connection may be closed.
package connlimit

import (
	"cmp"
	"container/list"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Reason is why a connection was refused or shed (or an HTTP/2 stream
// refused): the label of the servers' metrics.
type Reason string

// Reasons.
const (
	// MaxConns: the listener's cap.
	MaxConns Reason = "max_conns"
	// MaxConnsPerPeer: the cap of the peer.
	MaxConnsPerPeer Reason = "max_conns_per_peer"
	// FDBudget: the process's descriptor budget, over every listener.
	FDBudget Reason = "fd_budget"
	// MaxUnsentBytes: the listener's bound on answers its peers have not read.
	MaxUnsentBytes Reason = "max_unsent_bytes"
	// MaxUnsentBytesPerPeer: the peer's share of it.
	MaxUnsentBytesPerPeer Reason = "max_unsent_bytes_per_peer"
)

// reasons are every Reason, for the metrics' label values; caps are those
// that refuse connections.
var (
	reasons = []Reason{MaxConns, MaxConnsPerPeer, FDBudget, MaxUnsentBytes, MaxUnsentBytesPerPeer}
	caps    = reasons[:3]
)

// ErrConfig: a Config field has a value the limiter cannot use;
// the message names the field.
var ErrConfig = errors.New("connlimit: invalid config")

// Bounds and defaults of Config.
const (
	// MaxConnsLimit bounds MaxConns and MaxConnsPerPeer: above is a typo.
	MaxConnsLimit = 1_000_000
	// DefaultPeerPrefixV6 groups IPv6 peers by /64: the block one host,
	// or one customer, commonly gets, so that an attacker cannot be
	// countless peers by the addresses of its own /64.
	DefaultPeerPrefixV6 = 64
	// DefaultMaxUnsentBytes is MaxUnsentBytes' zero: 8 MiB, what a
	// listener of a few scrapers needs (the servers set their own).
	DefaultMaxUnsentBytes = 8 << 20
	// MaxUnsentLimit bounds MaxUnsentBytes (1 GiB): above is a typo, as a
	// server holding that much for peers that do not read has no memory
	// left for the others.
	MaxUnsentLimit = 1 << 30
)

// stallAfter is how long a connection's answers may wait for its peer to
// read them before, at a cap, the connection may be shed as stalled. Its
// answers are at most a few hundred KiB: a reader that has not taken them
// in a second is not keeping up, and at a cap it gives way to one that
// speaks.
const stallAfter = time.Second

// freshGrace is how long a new connection counts as a newcomer still
// sending its first request (a TLS handshake and the request: a round trip
// or two) rather than a silent one: till then it goes before an idle
// connection only if it has been silent longer, and after a stalled one
// (see pick).
const freshGrace = time.Second

// Config is one listener's policy.
type Config struct {
	// MaxConns bounds the listener's connections, and the streams an
	// HTTP/2 connection has beyond its first; 1 to MaxConnsLimit (zero
	// does not validate).
	MaxConns int
	// MaxConnsPerPeer bounds those of one peer; 1 to MaxConnsLimit (zero
	// does not validate).
	MaxConnsPerPeer int
	// PeerPrefixV6 is the prefix length that groups IPv6 addresses into
	// one peer (IPv4 addresses, IPv4-mapped ones included, are a peer
	// each); zero is DefaultPeerPrefixV6, else 1 to 128.
	PeerPrefixV6 int
	// MaxUnsentBytes bounds, in bytes, the answers held for the listener's
	// peers in writes the kernel has not taken yet; each peer may hold
	// MaxUnsentBytes × MaxConnsPerPeer / MaxConns. One answer alone is never
	// cut. Zero is DefaultMaxUnsentBytes, a negative value bounds nothing;
	// at most MaxUnsentLimit.
	MaxUnsentBytes int64
	// FirstRequest closes a connection that has not sent a complete
	// request this long after accept (a TLS handshake included); zero
	// sets no deadline.
	FirstRequest time.Duration
	// Budget is the process's descriptor budget, shared with the other
	// listeners; nil counts this listener's connections only.
	Budget *Budget
	// Metrics counts refusals and sheds; nil counts nothing.
	Metrics *Metrics
	// Logger receives a warning, at most once a minute, while
	// connections are refused or shed for stalling; nil discards.
	Logger *slog.Logger
	// Name names the listener in log records ("central", "rest", ...).
	Name string
	// Now is the clock of the grace periods (freshGrace, stallAfter) and
	// of SetIdle's callers in this package; nil is time.Now.
	Now func() time.Time
}

// Validate reports the first field that cannot be used, by name.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxConns", c.MaxConns}, {"MaxConnsPerPeer", c.MaxConnsPerPeer}} {
		if f.v < 1 || f.v > MaxConnsLimit {
			return fmt.Errorf("%w: %s %d; want 1-%d", ErrConfig, f.name, f.v, MaxConnsLimit)
		}
	}
	if c.PeerPrefixV6 < 0 || c.PeerPrefixV6 > 128 {
		return fmt.Errorf("%w: PeerPrefixV6 %d; want 0 (meaning %d) or 1-128", ErrConfig, c.PeerPrefixV6, DefaultPeerPrefixV6)
	}
	if c.MaxUnsentBytes > MaxUnsentLimit {
		return fmt.Errorf("%w: MaxUnsentBytes %d; want 0 (meaning %d), 1-%d bytes or negative (no bound)",
			ErrConfig, c.MaxUnsentBytes, DefaultMaxUnsentBytes, int64(MaxUnsentLimit))
	}
	if c.FirstRequest < 0 {
		return fmt.Errorf("%w: FirstRequest %v; want 0 (none) or more", ErrConfig, c.FirstRequest)
	}
	return nil
}

// Budget is a cap on the connections of every listener of a process,
// which the process's file descriptors bound (Descriptors). Limiters sharing
// a Budget share its lock.
type Budget struct {
	mu  sync.Mutex
	max int
	n   int
	all [2]list.List // [fresh], [proven]: *Conn, oldest first

	// Each listener keeps a reserve of the budget (reserveShare): its
	// newcomers are admitted while it holds fewer, whatever the others
	// hold, so that no listener's flood takes the places of another's
	// callers. claimed is, over the listeners, the greater of what each
	// holds and its reserve; it never passes max. reserved is the sum of
	// the reserves.
	claimed, reserved int
}

// reserveShare: each listener keeps 1/reserveShare of the budget (at
// most its MaxConns), and the listeners together at most half of it.
const reserveShare = 8

// join counts l's reserve in b.
func (b *Budget) join(l *Limiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l.reserve = max(min(l.cfg.MaxConns, b.max/reserveShare, b.max/2-b.reserved), 0)
	b.reserved += l.reserve
	b.claimed += l.reserve
}

// countLocked adds d to l's connections and the claims on b; the caller
// holds b.mu.
func (b *Budget) countLocked(l *Limiter, d int) {
	before := max(l.fds, l.reserve)
	l.fds += d
	b.n += d
	b.claimed += max(l.fds, l.reserve) - before
}

// fullFor reports whether b has no place for a newcomer of l: l holds its
// reserve, and the others' reserves and connections claim the rest.
func (b *Budget) fullFor(l *Limiter) bool {
	return l.fds >= l.reserve && b.claimed >= b.max
}

// freesFor reports whether shedding v makes room in b for a newcomer of
// l: v is l's own, or of a listener holding more than its reserve.
func freesFor(l *Limiter) func(v *Conn) bool {
	return func(v *Conn) bool { return v.l == l || v.l.fds > v.l.reserve }
}

// NewBudget returns a budget of n connections; below 1 is 1.
func NewBudget(n int) *Budget { return &Budget{max: max(n, 1)} }

// Max returns the budget's cap.
func (b *Budget) Max() int { return b.max }

// Len returns the connections counted, over every listener.
func (b *Budget) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// Limiter is one listener's policy and the state of its connections. A
// connection is fresh until its first complete request (Proven), then
// idle or busy: SetIdle and SetBusy are atomic stores, cheap enough for
// every read of a hot connection, and so are Hold and Unhold below their
// bounds; the lock is taken to admit, prove, release and shed.
type Limiter struct {
	b             *Budget
	cfg           Config
	maxUnsentPeer int64

	// Guarded by b.mu.
	n     int          // places taken: connections and extra streams
	all   [2]list.List // [fresh], [proven]
	peers map[string]*peer

	// Guarded by b.mu: its connections (descriptors; n counts HTTP/2
	// streams too) and the share of the budget kept for them (reserve).
	fds, reserve int

	held     atomic.Int64           // bytes held by Hold, over the listener
	lastWarn [3]atomic.Int64        // unix ns of the last warning of each kind
	tooLarge atomic.Pointer[[]byte] // HTTPServer's 431, for NetConn.Write
}

// Kinds of warnings, each logged at most once a minute.
const (
	warnRefused = iota
	warnUnread
	warnAccept
)

const (
	fresh  = 0
	proven = 1
)

type peer struct {
	n     int          // guarded by b.mu
	lists [2]list.List // guarded by b.mu
	held  atomic.Int64
}

// Conn is an admitted connection.
type Conn struct {
	l     *Limiter
	key   string
	p     *peer
	close func()
	timer *time.Timer // the first-request deadline, if any

	admitted  int64        // unix ns
	busy      atomic.Bool  // proven and mid-request: shed only when held up (stalled, stuck)
	idleSince atomic.Int64 // when it last became idle, by the caller's clock
	isProven  atomic.Bool
	// answers counts its answers up to 2: a connection answered again
	// is a client's pooled one, not a flood's one-request connection.
	answers atomic.Uint32

	// Guarded by l.b.mu.
	list     int
	released bool
	streams  int           // open HTTP/2 streams
	elem     *list.Element // in l.all[list]
	pelem    *list.Element // in p.lists[list]
	belem    *list.Element // in l.b.all[list]

	hmu       sync.Mutex
	held      int64 // bytes in writes not yet returned
	heldSince int64 // unix ns: since held last rose from zero
	dropped   bool  // released: held is no longer counted above the connection

	// What its peer owes mid-request (wait.go); open mirrors streams for
	// Await, which does not take b.mu.
	open     atomic.Int32
	wmu      sync.Mutex
	awaiting atomic.Int32 // Awaits not yet Arrived; changed under wmu
	waitFrom int64        // since when it waits on its peer; 0 when it does not
	owed     int64        // owed time (ns) at owedAt
	owedAt   int64
}

// NewLimiter returns the limiter of cfg, which must be valid (Validate).
func NewLimiter(cfg Config) *Limiter {
	cfg.PeerPrefixV6 = cmp.Or(cfg.PeerPrefixV6, DefaultPeerPrefixV6)
	cfg.MaxUnsentBytes = cmp.Or(cfg.MaxUnsentBytes, DefaultMaxUnsentBytes)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := cfg.Budget
	if b == nil {
		b = NewBudget(math.MaxInt)
	}
	l := &Limiter{b: b, cfg: cfg, peers: make(map[string]*peer)}
	b.join(l)
	if cfg.MaxUnsentBytes > 0 {
		// The peer's share, as its share of the connections; computed in
		// floating point, as MaxUnsentBytes × MaxConnsPerPeer may not fit.
		share := float64(cfg.MaxUnsentBytes) * float64(cfg.MaxConnsPerPeer) / float64(cfg.MaxConns)
		l.maxUnsentPeer = int64(min(share, float64(cfg.MaxUnsentBytes)))
	}
	cfg.Metrics.watch(l)
	return l
}

// PeerOf returns the key a connection's remote address counts under: its
// IPv4 address, or its IPv6 address's prefix of PeerPrefixV6 bits.
func (l *Limiter) PeerOf(addr net.Addr) string { return PeerKey(addr, l.cfg.PeerPrefixV6) }

// PeerKey returns the peer of addr: an IPv4 address (an IPv4-mapped IPv6
// one unmapped) as is, an IPv6 address as its prefix of v6bits bits (its
// zone dropped); an address that is not IP (a Unix socket), whole.
func PeerKey(addr net.Addr, v6bits int) string {
	if addr == nil {
		return ""
	}
	var ip netip.Addr
	if ta, ok := addr.(*net.TCPAddr); ok {
		ip = ta.AddrPort().Addr()
	} else if ap, err := netip.ParseAddrPort(addr.String()); err == nil {
		ip = ap.Addr()
	} else {
		return addr.String()
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() || v6bits >= 128 {
		return ip.String()
	}
	return netip.PrefixFrom(ip, v6bits).Masked().String()
}

// Admit counts a new connection of peerKey. close closes it: Admit calls
// it (outside its lock, before returning) on another connection it sheds
// to make room, whose Release may follow at any time. It returns the
// connection, or nil and the cap that refused it; shed is the cap that
// made it shed a victim, "" when none. Both are counted in the metrics.
func (l *Limiter) Admit(peerKey string, close func()) (c *Conn, shed, refused Reason) {
	b := l.b
	now := l.cfg.Now().UnixNano()
	b.mu.Lock()
	p := l.peers[peerKey]
	weight := 1 // the peer's places with the newcomer's
	if p != nil {
		weight += p.n
	}
	var victim *Conn
	switch {
	case p != nil && p.n >= l.cfg.MaxConnsPerPeer:
		victim, shed = pick(&p.lists, now, nil, true, p, weight), MaxConnsPerPeer
	case l.n >= l.cfg.MaxConns:
		victim, shed = pick(&l.all, now, nil, true, p, weight), MaxConns
	case b.fullFor(l):
		victim, shed = pick(&b.all, now, freesFor(l), true, p, weight), FDBudget
	}
	if shed != "" && victim == nil {
		b.mu.Unlock()
		l.cfg.Metrics.refuse(shed)
		l.warn(warnRefused, "connection limit reached with every connection busy; refusing connections", "reason", string(shed))
		return nil, "", shed
	}
	if victim != nil {
		b.releaseLocked(victim)
	}
	if p == nil {
		p = &peer{}
		l.peers[peerKey] = p
	}
	c = &Conn{l: l, key: peerKey, p: p, close: close, list: fresh, admitted: now}
	c.elem = l.all[fresh].PushBack(c)
	c.pelem = p.lists[fresh].PushBack(c)
	c.belem = b.all[fresh].PushBack(c)
	l.n++
	p.n++
	b.countLocked(l, 1)
	b.mu.Unlock()
	if victim != nil {
		victim.close()
		l.cfg.Metrics.countShed(shed)
	}
	return c, shed, ""
}

// pick returns the victim among lists for which can holds (nil: any), or
// nil. self is the newcomer's peer (nil for a peer without a connection
// yet) and weight the places it holds with the newcomer. In order:
//
//   - the oldest fresh connection silent past freshGrace;
//   - else whichever has been silent the longest of the connection idle
//     the longest and, if young, the oldest newcomer (a fresh one within
//     its grace) — but a connection answered more than once only once idle
//     past freshGrace too;
//   - else the one its peer has held up the longest: stalled (answers held
//     since before now − stallAfter) or stuck (waiting on its peer
//     mid-request, its owed time past stuckAfter: wait.go), of a peer
//     holding more places than weight;
//   - else the newcomer (if young), else the idle one.
//
// So a flood of silent newcomers pushes out its own before a busy client's
// pooled connection, idle for a moment between calls (even a long moment,
// on a starved machine: a newcomer never goes after a pooled connection
// idle for less than a newcomer may stay silent), a flood of connections
// that asked once and went idle gives way to newcomers, newcomers at a cap
// full of long-idle connections push those out rather than each other,
// and a connection is never shed while the server works for it, only while
// its peer holds it up.
//
// A held-up connection goes only for a lighter peer's newcomer: were a
// peer's newcomers to shed its own or an equal's, a flood that redials
// what is shed would renew its connections (their owed time nothing
// again) as fast as newcomers found them, and keep every other caller
// out; a lighter peer's newcomer finds them held up again within a
// second. Likewise a newcomer within its grace goes only for its own
// peer's newcomer or a lighter peer's: a flood's redials do not push out
// another caller's TLS handshake. The caller holds b.mu.
func pick(lists *[2]list.List, now int64, can func(*Conn) bool, young bool, self *peer, weight int) *Conn {
	var newcomer *Conn // the oldest fresh one, not yet past freshGrace
	for e := lists[fresh].Front(); e != nil; e = e.Next() {
		c := e.Value.(*Conn)
		if can != nil && !can(c) {
			continue
		}
		if c.admitted < now-int64(freshGrace) {
			return c
		}
		if !young {
			break
		}
		if c.p == self || c.p.n > weight {
			newcomer = c
			break
		}
	}
	var idle, held *Conn
	var idleSince, heldSince int64
	for e := lists[proven].Front(); e != nil; e = e.Next() {
		c := e.Value.(*Conn)
		if can != nil && !can(c) {
			continue
		}
		if !c.busy.Load() {
			if s := c.idleSince.Load(); idle == nil || s < idleSince {
				idle, idleSince = c, s
			}
			continue
		}
		if c.p == self || c.p.n <= weight {
			continue
		}
		if s, ok := c.heldFrom(); ok && s < now-int64(stallAfter) && (held == nil || s < heldSince) {
			held, heldSince = c, s
		}
		if s, ok := c.stuckSince(now); ok && (held == nil || s < heldSince) {
			held, heldSince = c, s
		}
	}
	switch {
	case idle != nil && (newcomer == nil || idleSince <= newcomer.admitted && (idleSince < now-int64(freshGrace) || idle.answers.Load() < 2)):
		return idle
	case held != nil:
		return held
	case newcomer != nil:
		return newcomer
	}
	return idle
}

// not is pick's filter of every connection but c.
func not(c *Conn) func(*Conn) bool { return func(v *Conn) bool { return v != c } }

// heldFrom returns since when c has held unsent bytes, if it does.
func (c *Conn) heldFrom() (int64, bool) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	return c.heldSince, c.held > 0 && !c.dropped
}

// Proven marks c as having sent a complete request, and busy: from now on
// it is shed only while idle or stalled, after the fresh ones. It stops
// the first-request deadline.
func (c *Conn) Proven() {
	c.busy.Store(true)
	if c.isProven.Swap(true) {
		return
	}
	b := c.l.b
	b.mu.Lock()
	c.proveLocked()
	b.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
}

// proveLocked moves c to the proven lists; the caller holds b.mu.
func (c *Conn) proveLocked() {
	if c.released || c.list != fresh {
		return
	}
	l, b := c.l, c.l.b
	l.all[fresh].Remove(c.elem)
	c.p.lists[fresh].Remove(c.pelem)
	b.all[fresh].Remove(c.belem)
	c.list = proven
	c.elem = l.all[proven].PushBack(c)
	c.pelem = c.p.lists[proven].PushBack(c)
	c.belem = b.all[proven].PushBack(c)
}

// SetIdle marks a proven c idle since now (any clock, the same for every
// connection of the limiter, such as Unix nanoseconds).
func (c *Conn) SetIdle(now int64) {
	c.endWaits(now)
	c.idleSince.Store(now)
	c.busy.Store(false)
	if c.answers.Load() < 2 {
		c.answers.Add(1)
	}
}

// SetBusy marks a proven c mid-request.
func (c *Conn) SetBusy() {
	if !c.busy.Load() {
		c.busy.Store(true)
	}
}

// StreamStart counts a new HTTP/2 stream of c, proving c on its first. The
// first open stream is the connection's own place; each further one takes
// a place of its own under MaxConns and MaxConnsPerPeer, shedding another
// connection as Admit does. It returns the cap that refused the stream
// ("" when counted); a counted stream ends with StreamEnd.
func (c *Conn) StreamStart() (refused Reason) {
	c.busy.Store(true)
	l, b := c.l, c.l.b
	now := l.cfg.Now().UnixNano()
	first := !c.isProven.Swap(true)
	b.mu.Lock()
	c.proveLocked()
	var victim *Conn
	var shed Reason
	if c.streams++; c.streams > 1 && !c.released {
		switch {
		case c.p.n >= l.cfg.MaxConnsPerPeer:
			victim, shed = pick(&c.p.lists, now, not(c), false, c.p, c.p.n+1), MaxConnsPerPeer
		case l.n >= l.cfg.MaxConns:
			victim, shed = pick(&l.all, now, not(c), false, c.p, c.p.n+1), MaxConns
		}
		if shed != "" && victim == nil {
			c.streams--
			b.mu.Unlock()
			l.cfg.Metrics.refuseStream(shed)
			l.warn(warnRefused, "connection limit reached with every connection busy; refusing HTTP/2 streams", "reason", string(shed))
			return shed
		}
		if victim != nil {
			b.releaseLocked(victim)
		}
		l.n++
		c.p.n++
	}
	c.open.Add(1)
	b.mu.Unlock()
	c.rewait(now) // a stream that does not wait on the peer ends c's wait
	if first && c.timer != nil {
		c.timer.Stop()
	}
	if victim != nil {
		victim.close()
		l.cfg.Metrics.countShed(shed)
	}
	return ""
}

// StreamEnd uncounts a stream StreamStart counted.
func (c *Conn) StreamEnd() {
	b := c.l.b
	b.mu.Lock()
	if c.streams > 1 && !c.released {
		c.l.n--
		c.p.n--
	}
	if c.streams > 0 {
		c.streams--
		c.open.Add(-1)
	}
	b.mu.Unlock()
	c.rewait(c.l.cfg.Now().UnixNano()) // its other streams may all wait on the peer
}

// Hold counts n bytes of an answer handed to a write to c that has not
// returned yet; Unhold uncounts them when it has. Past MaxUnsentBytes, or the
// peer's share of it, the limiter closes the connections (c excepted)
// whose held bytes have waited longest, until the rest fits: a peer that
// does not read cannot make the server hold more than its share, and
// nobody more than MaxUnsentBytes beside one answer.
func (c *Conn) Hold(n int) {
	if n <= 0 {
		return
	}
	c.hmu.Lock()
	if c.dropped {
		c.held += int64(n)
		c.hmu.Unlock()
		return
	}
	if c.held == 0 {
		c.heldSince = c.l.cfg.Now().UnixNano()
	}
	c.held += int64(n)
	c.hmu.Unlock()
	l := c.l
	pt, lt := c.p.held.Add(int64(n)), l.held.Add(int64(n))
	if l.cfg.MaxUnsentBytes > 0 && (lt > l.cfg.MaxUnsentBytes || pt > l.maxUnsentPeer) {
		l.shedHolders(c)
	}
}

// Unhold uncounts n bytes Hold counted.
func (c *Conn) Unhold(n int) {
	if n <= 0 {
		return
	}
	c.hmu.Lock()
	c.held -= int64(n)
	dropped := c.dropped
	c.hmu.Unlock()
	if !dropped {
		c.p.held.Add(-int64(n))
		c.l.held.Add(-int64(n))
	}
}

// shedHolders closes, the oldest held first, connections of c's peer
// until the peer is within its share, then of the listener until it is
// within MaxUnsentBytes; never c.
func (l *Limiter) shedHolders(c *Conn) {
	b := l.b
	var victims []*Conn
	var why []Reason
	b.mu.Lock()
	for c.p.held.Load() > l.maxUnsentPeer {
		v := oldestHolder(&c.p.lists, c)
		if v == nil {
			break
		}
		b.releaseLocked(v)
		victims, why = append(victims, v), append(why, MaxUnsentBytesPerPeer)
	}
	for l.held.Load() > l.cfg.MaxUnsentBytes {
		v := oldestHolder(&l.all, c)
		if v == nil {
			break
		}
		b.releaseLocked(v)
		victims, why = append(victims, v), append(why, MaxUnsentBytes)
	}
	b.mu.Unlock()
	for i, v := range victims {
		v.close()
		l.cfg.Metrics.countShed(why[i])
		l.warn(warnUnread, "closing connections whose peers do not read their answers", "reason", string(why[i]))
	}
}

// oldestHolder returns the connection of lists, not not, that has held
// unsent bytes the longest, or nil; the caller holds b.mu.
func oldestHolder(lists *[2]list.List, not *Conn) *Conn {
	var victim *Conn
	var since int64
	for i := range lists {
		for e := lists[i].Front(); e != nil; e = e.Next() {
			c := e.Value.(*Conn)
			if c == not {
				continue
			}
			if s, ok := c.heldFrom(); ok && (victim == nil || s < since) {
				victim, since = c, s
			}
		}
	}
	return victim
}

// Release uncounts c; it is idempotent.
func (c *Conn) Release() {
	b := c.l.b
	b.mu.Lock()
	b.releaseLocked(c)
	b.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
}

// releaseLocked uncounts c everywhere: its places (one, plus its extra
// streams), its connection in the budget and its held bytes.
func (b *Budget) releaseLocked(c *Conn) {
	if c.released {
		return
	}
	c.released = true
	l, p := c.l, c.p
	l.all[c.list].Remove(c.elem)
	p.lists[c.list].Remove(c.pelem)
	b.all[c.list].Remove(c.belem)
	c.elem, c.pelem, c.belem = nil, nil, nil
	places := 1 + max(c.streams-1, 0)
	l.n -= places
	b.countLocked(l, -1)
	if p.n -= places; p.n == 0 {
		delete(l.peers, c.key)
	}
	c.hmu.Lock()
	h := c.held
	c.dropped = true
	c.hmu.Unlock()
	p.held.Add(-h)
	l.held.Add(-h)
}

// Len returns the places taken: connections, and HTTP/2 streams beyond
// each connection's first.
func (l *Limiter) Len() int {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	return l.n
}

// Unsent returns the bytes held (Hold) over the listener.
func (l *Limiter) Unsent() int64 { return l.held.Load() }

// warn logs msg, with the caps, at most once a minute for each kind.
func (l *Limiter) warn(kind int, msg string, args ...any) {
	now := l.cfg.Now().UnixNano()
	last := l.lastWarn[kind].Load()
	if now-last > int64(time.Minute) && l.lastWarn[kind].CompareAndSwap(last, now) {
		l.cfg.Logger.Warn(l.cfg.Name+": "+msg, append(args,
			"max_conns", l.cfg.MaxConns, "max_conns_per_peer", l.cfg.MaxConnsPerPeer,
			"fd_budget", l.b.max, "max_unsent_bytes", l.cfg.MaxUnsentBytes)...)
	}
}
