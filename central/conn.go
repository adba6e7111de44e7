package central

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/connlimit"
)

// readBufSize is the read buffer a connection starts with, and returns to
// after a large frame: room for a few hundred pipelined requests.
const readBufSize = 4096

// conn serves one connection. Its goroutine (serve) reads frames and
// answers at once every call that need not wait, into out; it writes out
// only when no further complete frame is buffered (or out is large), so
// pipelined calls are answered with few writes. Calls that must wait for
// the generator wait in the server's core.Share, with no goroutine; their
// answers are written by a goroutine of the connection (see pending).
// Both are tracked by calls.
type conn struct {
	s      *Server
	nc     net.Conn
	ctx    context.Context // ends when the connection breaks or the server closes
	cancel context.CancelFunc
	limit  *connlimit.Conn // its place under the connection caps: fresh, idle or busy
	opened time.Time       // when accepted: FirstFrameTimeout runs from here

	draining   atomic.Bool  // Shutdown: read only what arrives before drainUntil
	drainUntil atomic.Int64 // Unix ns
	broken     atomic.Bool  // a write failed
	waiting    atomic.Int32 // calls on goroutines of their own
	calls      sync.WaitGroup

	// key identifies the connection to the server's core.Share. The calls
	// of the connection that wait there are answered through pending:
	// the Share's goroutine must never block on a peer, so it only queues
	// the answer, and one goroutine at a time (flushing) writes them.
	// owed counts the IDs of waiting calls and of their answers not yet
	// written, for the per-connection bound.
	key      uint64
	pmu      sync.Mutex
	pending  []waited
	flushing bool
	owed     int

	singles []core.ID // the read loop's: a coalesced TakeIDs' IDs until written

	wmu      sync.Mutex
	enc      *wire.Encoder
	out      []byte
	batching bool  // the read loop will write out soon
	werr     error // the first write error: nothing more is written
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	return &conn{s: s, nc: nc, ctx: ctx, cancel: cancel, enc: wire.NewEncoder(), key: s.keys.Add(1), opened: time.Now()}
}

// drainGrace is how long a connection keeps reading after Shutdown began:
// calls the peer sent before it (in flight, or in the socket's buffer) are
// read and answered; what comes later is not read.
const drainGrace = 100 * time.Millisecond

// drain makes the read loop stop reading once drainGrace has passed; it
// then answers what it has read.
func (c *conn) drain() {
	until := time.Now().Add(drainGrace)
	c.drainUntil.Store(until.UnixNano())
	c.draining.Store(true)
	c.nc.SetReadDeadline(until) // bounds a blocked Read
}

func (c *conn) serve() {
	defer c.s.done(c)
	defer c.cancel()
	defer c.nc.Close()
	log := c.s.log.With("remote", c.nc.RemoteAddr().String())
	if tc, ok := c.nc.(*tls.Conn); ok {
		c.nc.SetDeadline(time.Now().Add(c.s.cfg.ReadTimeout))
		if err := tc.HandshakeContext(c.ctx); err != nil {
			// A client speaking plaintext to the TLS port fails like this on
			// every connection: one line per peer a minute says so.
			if c.ctx.Err() == nil { // not the server closing
				c.s.handshakeLog.Warn(log, c.s.limit.PeerOf(c.nc.RemoteAddr()), "central: TLS handshake failed", "err", err)
			}
			return
		}
		c.nc.SetDeadline(time.Time{})
	}
	if err := c.readLoop(); err != nil {
		log.Debug("central: closing connection", "err", err)
	}
	// Answer the calls still waiting, then close.
	c.calls.Wait()
	c.wmu.Lock()
	c.flushLocked()
	c.wmu.Unlock()
	if !c.broken.Load() {
		c.linger()
	}
}

// Lingering close: how long and how much a connection the server closes
// keeps reading, and dropping, of what the peer still sends.
const (
	lingerTime  = time.Second
	lingerBytes = 1 << 20
)

// linger half-closes the connection, so the peer reads every answer and
// then the end, and drops what the peer still sends for a while: closing
// with unread input would make the kernel reset the connection, which can
// destroy answers not yet delivered (a peer still pipelining at Shutdown).
func (c *conn) linger() {
	raw := c.nc
	if tc, ok := c.nc.(*tls.Conn); ok {
		tc.CloseWrite() // close_notify
		raw = tc.NetConn()
	}
	hc, ok := raw.(interface{ CloseWrite() error })
	if !ok || hc.CloseWrite() != nil {
		return
	}
	raw.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, raw, lingerBytes)
}

// readLoop reads and serves frames until the peer closes, an error, or
// Shutdown. It returns nil when there is nothing to report.
func (c *conn) readLoop() error {
	cfg := &c.s.cfg
	buf := make([]byte, readBufSize)
	start, end := 0, 0
	var frameSince time.Time // when the partial frame at buf[start:end] began
	proven := false          // a complete frame has arrived
	for {
		served := false
		for {
			n, err := wire.Split(buf[start:end], cfg.MaxRequestBytes)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			err = c.handle(buf[start : start+n])
			start += n
			served = true
			if err != nil {
				return err
			}
		}
		if served && !proven { // before the answers go: then it is no longer fresh
			proven = true
			c.limit.Proven()
		}
		c.endBatch()
		if c.broken.Load() {
			return nil
		}

		// Make room: move a partial frame to the front, grow the buffer
		// for a large one, or return to the small buffer after one.
		if start == end {
			start, end = 0, 0
			frameSince = time.Time{}
			if len(buf) > readBufSize {
				buf = make([]byte, readBufSize)
			}
		} else {
			if served || frameSince.IsZero() {
				frameSince = time.Now()
			}
			end = copy(buf, buf[start:end])
			start = 0
			if end == len(buf) { // Split has checked it is below the limit
				buf = append(buf, make([]byte, min(2*len(buf), cfg.MaxRequestBytes)-len(buf))...)
			}
		}

		now := time.Now()
		deadline := now.Add(cfg.IdleTimeout)
		partial := !frameSince.IsZero()
		if partial {
			// The rest of the frame is a wait on the peer, bounded for
			// the frame and, through its owed time, for the connection
			// (package connlimit): completing a frame every few seconds
			// holds it no longer than one slow frame would.
			deadline = frameSince.Add(cfg.ReadTimeout)
			left := c.limit.Await(now.UnixNano(), cfg.ReadTimeout)
			if left <= 0 {
				return errors.New("the peer kept the connection waiting mid-frame past the read timeout")
			}
			if d := now.Add(left); d.Before(deadline) {
				deadline = d
			}
		}
		if first := c.opened.Add(cfg.FirstFrameTimeout); !proven && first.Before(deadline) {
			deadline = first
		}
		// A newcomer at a connection cap may shed a connection without
		// a complete frame yet, else an idle one, else one its peer
		// keeps waiting mid-frame (package connlimit).
		if proven && start == end && c.waiting.Load() == 0 {
			c.limit.SetIdle(now.UnixNano())
		}
		c.nc.SetReadDeadline(deadline)
		if c.draining.Load() { // after setting the deadline: see drain
			until := time.Unix(0, c.drainUntil.Load())
			if !time.Now().Before(until) {
				return nil
			}
			c.nc.SetReadDeadline(until)
		}
		n, err := c.nc.Read(buf[end:])
		if partial {
			c.limit.Arrived(time.Now().UnixNano())
		}
		if n > 0 {
			c.limit.SetBusy()
		}
		end += n
		if n > 0 || err == nil {
			continue // an error comes back on the next Read
		}
		switch {
		case c.draining.Load():
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded) && !proven:
			return errors.New("no complete frame within the first-frame timeout")
		case errors.Is(err, os.ErrDeadlineExceeded) && !frameSince.IsZero():
			return errors.New("read timeout within a frame")
		case errors.Is(err, os.ErrDeadlineExceeded) && c.waiting.Load() > 0:
			continue // idle, but waiting for our answers
		case errors.Is(err, os.ErrDeadlineExceeded):
			return errors.New("idle timeout")
		case errors.Is(err, io.EOF) && end > 0:
			return io.ErrUnexpectedEOF
		case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
			return nil
		}
		c.cancel() // a broken connection: nobody will read the answers
		return err
	}
}

// handle serves one frame. It returns an error only when the connection
// must close: a frame that cannot be answered.
func (c *conn) handle(frame []byte) error {
	var t0 time.Time
	if c.s.met != nil {
		t0 = time.Now()
	}
	req, err := wire.DecodeRequest(frame)
	if err != nil {
		var we *api.Error
		if errors.As(err, &we) {
			c.respond(true, req.MsgID, procIndex(req.Procedure), t0, answer{err: we})
			return nil
		}
		return err
	}
	if req.Notify {
		return nil
	}
	c.call(req, t0)
	return nil
}

// respond queues the answer to a call. The read loop's answers wait for
// its next write; others are written at once unless the read loop is about
// to write.
func (c *conn) respond(fromLoop bool, msgid uint32, proc int, t0 time.Time, a answer) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.s.met != nil {
		c.s.met.requests[proc][codeIndex(a.err)].Inc()
		c.s.met.duration[proc].Observe(time.Since(t0).Seconds())
	}
	if c.werr != nil {
		return
	}
	if a.err == nil && a.value == nil && a.take {
		one := [1]core.ID{core.ID(a.id)}
		c.out = wire.AppendTakeIDsResponse(c.out, msgid, one[:], 0)
	} else if a.err == nil && a.value == nil {
		c.out = wire.AppendIDResponse(c.out, msgid, a.id)
	} else if t, ok := a.value.(takeResult); ok && a.err == nil {
		c.out = wire.AppendTakeIDsResponse(c.out, msgid, t.ids, t.retryAfterMS)
	} else {
		var err error
		c.out, err = c.enc.AppendResponse(c.out, msgid, a.err, a.value)
		if err != nil { // a result of a type the codec cannot write: a bug
			c.s.log.Error("central: encoding a response", "err", err)
			c.out, _ = c.enc.AppendResponse(c.out, msgid, &api.Error{Code: api.Internal, Message: "internal error"}, nil)
		}
	}
	switch {
	case len(c.out) >= flushBytes: // a batch of large answers: do not hoard them
		c.flushLocked()
	case fromLoop:
		c.batching = true
	case !c.batching:
		c.flushLocked()
	}
}

// flushBytes is how much output a batch gathers at most before writing.
const flushBytes = 64 << 10

// endBatch writes what the read loop queued.
func (c *conn) endBatch() {
	c.wmu.Lock()
	c.batching = false
	c.flushLocked()
	c.wmu.Unlock()
}

// flushLocked writes out; c.wmu is held.
func (c *conn) flushLocked() {
	if len(c.out) == 0 || c.werr != nil {
		return
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
	// Held while the kernel has not taken it: a peer that does not read
	// cannot make the server hold more than its share (package connlimit).
	n := len(c.out)
	c.limit.Hold(n)
	_, err := c.nc.Write(c.out)
	c.limit.Unhold(n)
	if err != nil {
		c.werr = err
		c.broken.Store(true)
		c.cancel()
		c.nc.Close() // wakes the read loop
	}
	c.out = c.out[:0]
	if cap(c.out) > 2*flushBytes { // do not keep a large answer's buffer
		c.out = nil
	}
}
