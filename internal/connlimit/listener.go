package connlimit

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// Listen returns ln under l's policy. Accept returns only admitted
// connections (a *NetConn each), closing those refused; a connection's
// Close releases its place. It retries, backing off up to a second,
// accept errors that pass with time (out of file descriptors, a
// connection aborted before it was accepted): a server on it never spins
// and never stops for them. Closing the listener ends that wait.
func (l *Limiter) Listen(ln net.Listener) net.Listener {
	return &listener{Listener: ln, l: l, done: make(chan struct{})}
}

type listener struct {
	net.Listener
	l    *Limiter
	done chan struct{} // closed by Close: ends a backoff
	once sync.Once
}

// Accept returns the next connection admitted.
func (ll *listener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		nc, err := ll.Listener.Accept()
		if err != nil {
			if !temporary(err) {
				return nil, err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			ll.l.warn(warnAccept, "accept failed; retrying", "err", err.Error(), "in", backoff.String())
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ll.done:
				t.Stop()
				return nil, net.ErrClosed
			}
			continue
		}
		backoff = 0
		lc, _, _ := ll.l.Admit(ll.l.PeerOf(nc.RemoteAddr()), func() { nc.Close() })
		if lc == nil {
			nc.Close()
			continue
		}
		tune(nc)
		if d := ll.l.cfg.FirstRequest; d > 0 {
			lc.timer = time.AfterFunc(d, func() {
				if !lc.isProven.Load() {
					nc.Close()
				}
			})
		}
		return &NetConn{Conn: nc, c: lc}, nil
	}
}

// Close closes the listener and ends a backoff of Accept.
func (ll *listener) Close() error {
	ll.once.Do(func() { close(ll.done) })
	return ll.Listener.Close()
}

// temporary reports accept errors that pass with time.
func temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// NetConn is an admitted connection; closing it gives its place back.
type NetConn struct {
	net.Conn
	c *Conn
}

// Limit returns the connection's place under the caps.
func (nc *NetConn) Limit() *Conn { return nc.c }

// netHTTP431 is what net/http writes, in one write to the connection and
// before any handler runs, to a request whose headers pass MaxHeaderBytes
// (its server.go; TestHeaderTooLargeJSON holds it to the Go in use).
const netHTTP431 = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"

// Write writes p, but for net/http's own 431, which it has no hook for:
// that goes as the listener's answer (HTTPConfig.HeaderTooLarge) instead.
// Over TLS net/http writes it to the TLS connection above, out of reach.
func (nc *NetConn) Write(p []byte) (int, error) {
	if len(p) == len(netHTTP431) {
		if a := nc.c.l.tooLarge.Load(); a != nil && string(p) == netHTTP431 {
			if _, err := nc.Conn.Write(*a); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return nc.Conn.Write(p)
}

// Close closes the connection and releases its place.
func (nc *NetConn) Close() error {
	err := nc.Conn.Close()
	nc.c.Release()
	return err
}

// CloseWrite half-closes the connection below, as a *net.TCPConn does:
// the central server's lingering close and net/http's close after a
// "Connection: close" answer need it, or the peer may get a reset instead
// of its last answers.
func (nc *NetConn) CloseWrite() error {
	if cw, ok := nc.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// Of returns the place of a connection Listen accepted (under TLS or
// not), or nil for another.
func Of(nc net.Conn) *Conn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if c, ok := nc.(*NetConn); ok {
		return c.c
	}
	return nil
}
