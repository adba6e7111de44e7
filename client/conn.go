package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// maxChunk caps the count of one Vesta.GenIDs or Vesta.TakeIDs call whatever a server's
// max_batch, which bounds the replies a connection must accept.
const maxChunk = 1 << 16

// maxGrace bounds the grace a timed-out call gives the reader (see call.expires).
const maxGrace = 50 * time.Millisecond

// errSilent closes a connection on which a call timed out while nothing at
// all was read: it may be stuck (a half-open TCP connection, a server that
// stopped reading), so the next call dials afresh.
var errSilent = errors.New("client: connection silent past a call's timeout")

// conn is one connection to a server, shared by any number of concurrent
// calls. A writer goroutine sends every call queued since its last write
// in one write; a reader goroutine matches replies to calls by msgid; a
// watchdog goroutine fails the calls that passed their deadline. The first
// call is Vesta.Info, whose answer is kept in info.
//
// Deadlines are the watchdog's, not a context's: a context with a timeout
// per call arms and stops a runtime timer per call, which cost about a
// fifth of the client's CPU at a few hundred thousand calls a second. The
// watchdog keeps one timer per connection, armed for the earliest expiry
// in flight, and wakes about once per Timeout under steady load.
type conn struct {
	nc   net.Conn
	addr string
	info identity // the server's, from the handshake
	// refused wraps ErrServerShape when info is shaped unlike the first
	// server's: calls for IDs fail with it (set before the conn is used).
	refused error

	graceFor time.Duration // see call.expires

	wake  chan struct{} // one slot: calls are queued
	watch chan struct{} // one slot: a call expires before the watchdog's timer
	done  chan struct{} // closed when the connection broke
	reads atomic.Uint64 // replies read, to tell a silent connection

	mu      sync.Mutex
	err     error // why it broke; nil while alive
	msgid   uint32
	pending map[uint32]*call
	queue   []*call
	// order holds the calls with a deadline, oldest first, from head on;
	// settled ones leave it when they reach the head. armed is the expiry
	// the watchdog's timer is set for, 0 when it is not set.
	order []*call
	head  int
	armed int64
	// group is the Vesta.TakeIDs of single-ID calls that callers join
	// until the writer takes it (or it is full): nil when none is open.
	// flying is the group sent last whose answer has not come: while it
	// flies, the open group is held back (not queued), so that every
	// single call made meanwhile rides the next request.
	group  *group
	flying *group
}

// call is one request in flight. Whoever settles it (the reader with a
// reply, the watchdog at its expiry, close, or its caller giving up) does
// so under conn.mu, exactly once; then it fills reply or err and closes
// done, except for a caller that gave up. The caller reads reply and err
// only after done.
type call struct {
	msgid  uint32
	proc   string
	params any
	// expires is the call's deadline plus the grace (Unix ns; 0: none).
	// The grace gives the reader a last chance: on a loaded machine the
	// client's own process may have been descheduled past the deadline,
	// and when it runs again the watchdog may run before the reader has
	// read the replies waiting in the socket; without a grace, one such
	// pause fails every call in flight at once and opens the breaker of a
	// healthy server.
	expires int64
	reads   uint64 // conn.reads when queued: unchanged at expiry means silent
	settled bool   // under conn.mu
	done    chan struct{}
	reply   wire.Response // Result copied out of the reader's buffer
	err     error         // the connection broke, or the deadline passed
	grp     *group        // the group this call is, or nil
}

// group is one Vesta.TakeIDs with singles set, made of the single-ID calls
// (NextID) queued on a connection while its previous write was being made:
// each rider takes one of its IDs, in the order they joined, so IDs are
// still issued when they are asked for (not ahead, as prefetch does), and
// the server takes all of them in one step. A short answer (the sequence's
// ceiling) leaves the last riders without one: for them the server is
// busy, as for a TakeIDs of one that got none. Whatever else ends the
// call (a timeout, a broken connection, an error answer) ends every
// rider's attempt alike, as it would have ended their calls one by one.
type group struct {
	call
	riders int      // under conn.mu until the writer seals the group
	queued bool     // under conn.mu: handed to the writer (else held back)
	ids    []uint64 // the answer, decoded once by the reader
	retry  uint64   // its retry_after_ms
	bad    error    // the answer did not decode, or held more IDs than riders
}

// dial opens a connection to s, starts its goroutines (owned by the
// client's WaitGroup) and makes the Vesta.Info handshake, all within ctx.
func (c *Client) dial(ctx context.Context, addr string) (*conn, error) {
	nc, err := c.cfg.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConnection, err)
	}
	if c.cfg.TLS != nil {
		tc := tls.Client(nc, c.tlsConfig(addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("%w: TLS: %w", ErrConnection, err)
		}
		nc = tc
	}
	cn := newConn(nc, addr, min(c.cfg.Timeout/4, maxGrace))
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		nc.Close()
		return nil, ErrClosed
	}
	c.conns[cn] = struct{}{}
	c.wg.Go(cn.writeLoop)
	c.wg.Go(cn.watchLoop)
	c.wg.Go(func() {
		cn.readLoop()
		c.mu.Lock()
		delete(c.conns, cn)
		c.mu.Unlock()
	})
	c.mu.Unlock()
	info, err := cn.handshake(ctx)
	if err != nil {
		cn.close(err)
		return nil, err
	}
	cn.info = info
	cn.refused = c.adopt(addr, info)
	return cn, nil
}

// newConn makes the conn of nc; its goroutines are the caller's to start:
// writeLoop, watchLoop and readLoop.
func newConn(nc net.Conn, addr string, grace time.Duration) *conn {
	return &conn{
		nc: nc, addr: addr, graceFor: grace,
		wake: make(chan struct{}, 1), watch: make(chan struct{}, 1), done: make(chan struct{}),
		pending: make(map[uint32]*call),
	}
}

// tlsConfig is Config.TLS with the server's host as ServerName if unset.
func (c *Client) tlsConfig(addr string) *tls.Config {
	tc := c.cfg.TLS
	if tc.ServerName == "" {
		tc = tc.Clone()
		tc.ServerName, _, _ = net.SplitHostPort(addr)
	}
	return tc
}

// handshake asks Vesta.Info and checks the answer.
func (cn *conn) handshake(ctx context.Context) (identity, error) {
	var info wire.Info
	if err := cn.invoke(ctx, time.Time{}, wire.ProcInfo, nil, &info); err != nil {
		return identity{}, err
	}
	codec, err := info.Codec()
	if err != nil || info.Type > 1 || info.Version > 1 || info.Machine > uint64(core.MaxMachine) || info.MaxBatch < 1 {
		return identity{}, fmt.Errorf("%w: Vesta.Info: %+v (%v)", ErrProtocol, info, err)
	}
	return identity{
		codec: codec, typ: core.Type(info.Type), version: uint8(info.Version),
		machine: core.MachineID(info.Machine), maxBatch: int(min(info.MaxBatch, maxChunk)),
		takeIDs: info.TakeIDs == 1, singles: info.TakeIDs == 1 && info.Singles == 1,
	}, nil
}

// alive reports whether the connection can take calls.
func (cn *conn) alive() bool {
	select {
	case <-cn.done:
		return false
	default:
		return true
	}
}

// invoke makes one call and decodes its result into v. A server error is
// returned as a *api.Error. Past deadline (zero: none) and the grace, the
// call fails with ErrTimeout, and the connection closes if nothing at all
// was read meanwhile (errSilent): it may be stuck (a half-open TCP
// connection, a server that stopped reading), so the next call dials
// afresh. When ctx ends first, the call fails with ctx's error and the
// connection stays: the caller merely gave up.
func (cn *conn) invoke(ctx context.Context, deadline time.Time, proc string, params, v any) error {
	cl := &call{proc: proc, params: params, done: make(chan struct{})}
	if !deadline.IsZero() {
		cl.expires = deadline.Add(cn.graceFor).UnixNano()
	}
	cn.mu.Lock()
	if cn.err != nil {
		err := cn.err
		cn.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrConnection, err)
	}
	rearm := cn.queueLocked(cl)
	cn.mu.Unlock()
	signal(cn.wake)
	if rearm {
		signal(cn.watch)
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		cn.mu.Lock()
		gone := !cl.settled
		if gone {
			cl.settled = true
			delete(cn.pending, cl.msgid)
		}
		cn.mu.Unlock()
		if gone {
			return ctx.Err()
		}
		<-cl.done // settled meanwhile: done is closed at once
	}
	if err := cl.failure(); err != nil {
		return err
	}
	if err := wire.DecodeResult(cl.reply.Result, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrProtocol, proc, err)
	}
	return nil
}

// failure is why a settled call got no result: a timeout, the connection,
// or the server's error answer; nil when it has one.
func (cl *call) failure() error {
	if cl.err != nil {
		if errors.Is(cl.err, errAttemptTimeout) {
			return fmt.Errorf("%w: %s", ErrTimeout, cl.proc)
		}
		return fmt.Errorf("%w: %w", ErrConnection, cl.err)
	}
	if cl.reply.Error != nil {
		return cl.reply.Error
	}
	return nil
}

// single asks for one ID by joining the connection's open group (opening
// one if none is), and returns it, or, when the server gave the group too
// few for this rider, how long the server asks it to wait (retry above
// zero). A rider whose ctx ends leaves at once; the ID the server may
// still give it is dropped: a number lost, never one issued twice. The
// group's deadline is the opener's: timeout (zero: none) from when it
// opened it; a rider reads no clock.
func (cn *conn) single(ctx context.Context, timeout time.Duration) (core.ID, time.Duration, error) {
	cn.mu.Lock()
	if cn.err != nil {
		err := cn.err
		cn.mu.Unlock()
		return 0, 0, fmt.Errorf("%w: %w", ErrConnection, err)
	}
	g := cn.group
	wake, rearm := false, false
	if g == nil {
		g = &group{call: call{proc: wire.ProcTakeIDs, done: make(chan struct{})}}
		g.grp = g
		if timeout > 0 {
			g.expires = time.Now().Add(timeout + cn.graceFor).UnixNano()
		}
		cn.group = g
		if cn.flying == nil {
			wake, rearm = true, cn.queueGroupLocked(g)
		}
	}
	i := g.riders
	g.riders++
	if g.riders >= cn.info.maxBatch { // full: it goes now, whatever flies
		if !g.queued {
			wake, rearm = true, cn.queueGroupLocked(g) || rearm
		}
		cn.sealLocked()
	}
	cn.mu.Unlock()
	cn.wakeUp(wake, rearm) // a rider of a group queued already wakes no one
	if cd := ctx.Done(); cd == nil {
		<-g.done
	} else {
		select {
		case <-g.done:
		case <-cd:
			return 0, 0, ctx.Err()
		}
	}
	if err := g.failure(); err != nil {
		return 0, 0, err
	}
	if g.bad != nil {
		return 0, 0, fmt.Errorf("%w: %s: %w", ErrProtocol, wire.ProcTakeIDs, g.bad)
	}
	if i < len(g.ids) {
		return core.ID(g.ids[i]), 0, nil
	}
	// Short: busy. A retry_after_ms of 0 would be a server's bug; a
	// millisecond keeps the client from spinning on it.
	ms := min(max(g.retry, 1), uint64(maxRetryAfter/time.Millisecond))
	return 0, time.Duration(ms) * time.Millisecond, nil
}

// queueGroupLocked hands g to the writer; cn.mu is held.
func (cn *conn) queueGroupLocked(g *group) (rearm bool) {
	g.queued = true
	return cn.queueLocked(&g.call)
}

// sealLocked closes the open group, queued, to new riders, fixes its
// count and marks it flying; cn.mu is held.
func (cn *conn) sealLocked() {
	if g := cn.group; g != nil && g.queued {
		g.params = &wire.TakeIDsParams{Count: uint64(g.riders), Singles: 1}
		cn.group, cn.flying = nil, g
	}
}

// landedLocked notes that cl, answered or expired, no longer flies: if it
// was the flying group, the group held back meanwhile is queued. It
// reports whether the writer (and the watchdog) must be woken. cn.mu is
// held.
func (cn *conn) landedLocked(cl *call) (wake, rearm bool) {
	if cl.grp == nil || cl.grp != cn.flying {
		return false, false
	}
	cn.flying = nil
	if g := cn.group; g != nil && !g.queued {
		return true, cn.queueGroupLocked(g)
	}
	return false, false
}

// wakeUp signals the writer and, when rearm, the watchdog.
func (cn *conn) wakeUp(wake, rearm bool) {
	if wake {
		signal(cn.wake)
	}
	if rearm {
		signal(cn.watch)
	}
}

// queueLocked gives cl a msgid and queues it for the writer and, with a
// deadline, for the watchdog; it reports whether the watchdog's timer must
// be rearmed. cn.mu is held.
func (cn *conn) queueLocked(cl *call) (rearm bool) {
	cn.msgid++
	cl.msgid = cn.msgid
	cl.reads = cn.reads.Load()
	cn.pending[cl.msgid] = cl
	cn.queue = append(cn.queue, cl)
	if cl.expires != 0 {
		cn.order = append(cn.order, cl)
		if cn.armed == 0 || cl.expires < cn.armed {
			cn.armed, rearm = cl.expires, true
		}
	}
	return rearm
}

// signal wakes the goroutine behind a one-slot channel.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// watchLoop fails calls past their expiry until the connection breaks.
func (cn *conn) watchLoop() {
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-cn.watch:
		case <-t.C:
		case <-cn.done:
			return
		}
		now := time.Now().UnixNano()
		if next := cn.expire(now); next != 0 {
			t.Reset(time.Duration(next - now))
		}
	}
}

// expire fails the calls whose expiry is at or before now, closes the
// connection when one of them saw nothing read since it was queued, and
// returns the earliest expiry still in flight (0: none), for which it
// marks the watchdog armed. Calls are queued in about the order of their
// expiries, but not exactly (a call may wait for a dial before it is
// queued), so it looks at every call in flight.
func (cn *conn) expire(now int64) int64 {
	var expired []*call
	silent, wake, rearm := false, false, false
	cn.mu.Lock()
	cn.trimLocked()
	next := int64(0)
	for _, cl := range cn.order[cn.head:] {
		switch {
		case cl.settled:
		case cl.expires <= now:
			cl.settled = true
			delete(cn.pending, cl.msgid)
			expired = append(expired, cl)
			silent = silent || cn.reads.Load() == cl.reads
			if cl.grp != nil && cl.grp == cn.group {
				cn.group = nil // expired before the writer took it: no one may join it now
			}
			w, r := cn.landedLocked(cl)
			wake, rearm = wake || w, rearm || r
		case next == 0 || cl.expires < next:
			next = cl.expires
		}
	}
	cn.trimLocked()
	if rearm && cn.group != nil && cn.group.expires != 0 && (next == 0 || cn.group.expires < next) {
		next = cn.group.expires // the held group, queued just now
	}
	cn.armed = next
	cn.mu.Unlock()
	cn.wakeUp(wake, false)
	for _, cl := range expired {
		cl.err = errAttemptTimeout
		close(cl.done)
	}
	if silent {
		cn.close(errSilent)
	}
	return next
}

// trimLocked drops settled calls from the head of order, and reuses its
// array once it is empty or mostly dropped; cn.mu is held.
func (cn *conn) trimLocked() {
	for cn.head < len(cn.order) && cn.order[cn.head].settled {
		cn.order[cn.head] = nil
		cn.head++
	}
	switch {
	case cn.head == len(cn.order):
		cn.order, cn.head = cn.order[:0], 0
	case cn.head > 1024 && cn.head > len(cn.order)/2:
		n := copy(cn.order, cn.order[cn.head:])
		clear(cn.order[n:])
		cn.order, cn.head = cn.order[:n], 0
	}
}

// writeLoop sends queued calls until the connection breaks.
func (cn *conn) writeLoop() {
	enc := wire.NewEncoder()
	var buf []byte
	var batch []*call
	for {
		select {
		case <-cn.wake:
		case <-cn.done:
			return
		}
		// Let callers that are about to queue do so first: a write costs
		// a system call, so fewer, fuller writes are the whole game.
		runtime.Gosched()
		cn.mu.Lock()
		batch, cn.queue = cn.queue, batch[:0]
		cn.sealLocked() // callers from now on ride the next group
		for i, cl := range batch {
			if cl.settled { // expired (or given up) before it was sent
				batch[i] = nil
			}
		}
		cn.mu.Unlock()
		buf = buf[:0]
		for i, cl := range batch {
			if cl == nil {
				continue
			}
			var err error
			if buf, err = enc.AppendRequest(buf, cl.msgid, cl.proc, cl.params); err != nil {
				cn.close(err) // our own params always encode; this is a bug
				return
			}
			batch[i] = nil
		}
		if len(buf) == 0 {
			continue
		}
		if _, err := cn.nc.Write(buf); err != nil {
			cn.close(err)
			return
		}
		if cap(buf) > 64<<10 {
			buf = nil
		}
	}
}

// readLoop hands each reply to its call until the connection breaks.
func (cn *conn) readLoop() {
	r := wire.NewReader(cn.nc, wire.MaxResponseBytes(maxChunk))
	for {
		frame, err := r.Next()
		if err != nil {
			cn.close(err)
			return
		}
		resp, err := wire.DecodeResponse(frame)
		if err != nil {
			cn.close(fmt.Errorf("%w: %w", ErrProtocol, err))
			return
		}
		cn.reads.Add(1)
		cn.mu.Lock()
		cl := cn.pending[resp.MsgID]
		wake, rearm := false, false
		if cl != nil {
			delete(cn.pending, resp.MsgID)
			cl.settled = true
			cn.trimLocked()
			wake, rearm = cn.landedLocked(cl)
		}
		cn.mu.Unlock()
		cn.wakeUp(wake, rearm)
		if cl == nil {
			continue // its caller gave up, or it expired
		}
		if g := cl.grp; g != nil {
			g.take(resp)
		} else {
			resp.Result = append([]byte(nil), resp.Result...) // the frame is reused
			cl.reply = resp
		}
		close(cl.done)
	}
}

// take keeps a group's answer, decoded once for all its riders.
func (g *group) take(resp wire.Response) {
	frame := resp.Result // the reader's buffer, reused after this call
	resp.Result = nil
	g.reply = resp
	if resp.Error != nil {
		return
	}
	var res wire.TakeIDsResult
	switch err := wire.DecodeResult(frame, &res); {
	case err != nil:
		g.bad = err
	case len(res.IDs) > g.riders:
		g.bad = fmt.Errorf("%d IDs for a count of %d", len(res.IDs), g.riders)
	default:
		g.ids, g.retry = res.IDs, res.RetryAfterMS
	}
}

// close breaks the connection: every pending call fails with err, and the
// goroutines stop. It is idempotent.
func (cn *conn) close(err error) {
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return
	}
	cn.err = err
	pending := cn.pending
	for _, cl := range pending {
		cl.settled = true
	}
	var held *group // held back, so not pending
	if g := cn.group; g != nil && !g.queued {
		held = g
	}
	cn.pending, cn.queue, cn.order, cn.head, cn.armed, cn.group, cn.flying = nil, nil, nil, 0, 0, nil, nil
	cn.mu.Unlock()
	if held != nil {
		held.err = err
		close(held.done)
	}
	close(cn.done)
	cn.nc.Close()
	for _, cl := range pending {
		cl.err = err
		close(cl.done)
	}
}
