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

// maxGrace bounds the grace a timed-out call gives the reader (see grace).
const maxGrace = 50 * time.Millisecond

// errSilent closes a connection on which a call timed out while nothing at
// all was read: it may be stuck (a half-open TCP connection, a server that
// stopped reading), so the next call dials afresh.
var errSilent = errors.New("client: connection silent past a call's timeout")

// conn is one connection to a server, shared by any number of concurrent
// calls. A writer goroutine sends every call queued since its last write
// in one write; a reader goroutine matches replies to calls by msgid. The
// first call is Vesta.Info, whose answer is kept in info.
type conn struct {
	nc   net.Conn
	addr string
	info identity // the server's, from the handshake

	graceFor time.Duration // see grace

	wake  chan struct{} // one slot: calls are queued
	done  chan struct{} // closed when the connection broke
	reads atomic.Uint64 // replies read, to tell a silent connection

	mu      sync.Mutex
	err     error // why it broke; nil while alive
	msgid   uint32
	pending map[uint32]*call
	queue   []*call
}

// call is one request in flight. The reader fills reply and then signals
// done; the caller reads reply only after done, and never after it gave up.
type call struct {
	msgid  uint32
	method string
	params any
	done   chan struct{}
	reply  wire.Response // Result copied out of the reader's buffer
	err    error         // the connection broke before a reply
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
	cn := &conn{
		nc: nc, addr: addr, graceFor: min(c.cfg.Timeout/4, maxGrace),
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		pending: make(map[uint32]*call),
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		nc.Close()
		return nil, ErrClosed
	}
	c.conns[cn] = struct{}{}
	c.wg.Go(cn.writeLoop)
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
	c.adopt(info)
	return cn, nil
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
	if err := cn.invoke(ctx, wire.MethodInfo, nil, &info); err != nil {
		return identity{}, err
	}
	codec, err := info.Codec()
	if err != nil || info.Type > 1 || info.Version > 1 || info.Machine > uint64(core.MaxMachine) || info.MaxBatch < 1 {
		return identity{}, fmt.Errorf("%w: Vesta.Info: %+v (%v)", ErrProtocol, info, err)
	}
	return identity{
		codec: codec, typ: core.Type(info.Type), version: uint8(info.Version),
		machine: core.MachineID(info.Machine), maxBatch: int(min(info.MaxBatch, maxChunk)),
		takeIDs: info.TakeIDs == 1,
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
// returned as a *wire.Error.
func (cn *conn) invoke(ctx context.Context, method string, params, v any) error {
	cl := &call{method: method, params: params, done: make(chan struct{})}
	cn.mu.Lock()
	if cn.err != nil {
		err := cn.err
		cn.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrConnection, err)
	}
	cn.msgid++
	cl.msgid = cn.msgid
	cn.pending[cl.msgid] = cl
	cn.queue = append(cn.queue, cl)
	reads := cn.reads.Load()
	cn.mu.Unlock()
	select {
	case cn.wake <- struct{}{}:
	default:
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		timedOut := errors.Is(context.Cause(ctx), errAttemptTimeout)
		if !timedOut || !cn.grace(cl) {
			cn.mu.Lock()
			delete(cn.pending, cl.msgid)
			cn.mu.Unlock()
			if timedOut && cn.reads.Load() == reads {
				cn.close(errSilent) // not when the caller merely gave up early
			}
			return ctx.Err()
		}
	}
	if cl.err != nil {
		return fmt.Errorf("%w: %w", ErrConnection, cl.err)
	}
	if cl.reply.Error != nil {
		return cl.reply.Error
	}
	if err := wire.DecodeResult(cl.reply.Result, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrProtocol, method, err)
	}
	return nil
}

// grace gives the reader a last chance once a call's attempt timed out:
// on a loaded machine the client's own process may have been descheduled
// past the deadline, and when it runs again every timer fires before the
// reader has read the replies waiting in the socket; without a grace, one
// such pause fails every call in flight at once and opens the breaker of a
// healthy server. It reports whether the reply (or the connection's end)
// came within the grace.
func (cn *conn) grace(cl *call) bool {
	t := time.NewTimer(cn.graceFor)
	defer t.Stop()
	select {
	case <-cl.done: // close() ends every pending call too
		return true
	case <-t.C:
		return false
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
		cn.mu.Unlock()
		buf = buf[:0]
		for i, cl := range batch {
			var err error
			if buf, err = enc.AppendRequest(buf, cl.msgid, cl.method, cl.params); err != nil {
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
		delete(cn.pending, resp.MsgID)
		cn.mu.Unlock()
		if cl == nil {
			continue // its caller gave up
		}
		resp.Result = append([]byte(nil), resp.Result...) // the frame is reused
		cl.reply = resp
		close(cl.done)
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
	cn.pending, cn.queue = nil, nil
	cn.mu.Unlock()
	close(cn.done)
	cn.nc.Close()
	for _, cl := range pending {
		cl.err = err
		close(cl.done)
	}
}
