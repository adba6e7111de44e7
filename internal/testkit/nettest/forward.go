package nettest

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dialTimeout bounds a Forwarder's dial of its target; it bounds a hang,
// it times nothing.
const dialTimeout = 3 * time.Second

// Forwarder accepts connections on a listener and copies each to a target
// and back, holding every chunk for the delay of its direction first
// (SetDelay; zero passes it at once): a slow network, in one place the
// test controls. Its methods are safe for concurrent use.
type Forwarder struct {
	ln     net.Listener
	target string
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	// Nanoseconds a chunk waits from when it was read, toward the
	// target and back from it; read at each write, so a change applies
	// to what is on its way.
	to, from atomic.Int64

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// Forward serves ln until the test ends, sending every connection to
// target through dial (nil: a net.Dialer's). At cleanup it closes ln and
// every connection, and waits for its goroutines.
func Forward(tb testing.TB, ln net.Listener, target string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Forwarder {
	tb.Helper()
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	fw := &Forwarder{ln: ln, target: target, dial: dial, conns: map[net.Conn]bool{}}
	tb.Cleanup(fw.close)
	fw.wg.Go(fw.accept)
	return fw
}

// Addr is the address the Forwarder listens on.
func (fw *Forwarder) Addr() net.Addr { return fw.ln.Addr() }

// SetDelay makes every chunk toward the target wait to from when it was
// read, and every chunk back wait from.
func (fw *Forwarder) SetDelay(to, from time.Duration) {
	fw.to.Store(int64(to))
	fw.from.Store(int64(from))
}

func (fw *Forwarder) close() {
	fw.ln.Close()
	fw.mu.Lock()
	fw.closed = true
	for c := range fw.conns {
		c.Close()
	}
	fw.mu.Unlock()
	fw.wg.Wait()
}

// track keeps c for close; a connection that comes after close is closed
// and false returned.
func (fw *Forwarder) track(c net.Conn) bool {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.closed {
		c.Close()
		return false
	}
	fw.conns[c] = true
	return true
}

func (fw *Forwarder) untrack(c net.Conn) {
	fw.mu.Lock()
	delete(fw.conns, c)
	fw.mu.Unlock()
	c.Close()
}

func (fw *Forwarder) accept() {
	for {
		c, err := fw.ln.Accept()
		if err != nil || !fw.track(c) {
			return
		}
		fw.wg.Go(func() { fw.serve(c) })
	}
}

// serve forwards c until either end closes.
func (fw *Forwarder) serve(c net.Conn) {
	defer fw.untrack(c)
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	u, err := fw.dial(ctx, "tcp", fw.target)
	cancel()
	if err != nil || !fw.track(u) {
		return
	}
	defer fw.untrack(u)
	done := make(chan struct{})
	go func() { pipe(u, c, &fw.to); close(done) }()
	pipe(c, u, &fw.from)
	<-done
}

// pipe copies src to dst, each chunk held for delay from when it was
// read; at the end of either it closes both, so the other direction ends
// too.
func pipe(dst, src net.Conn, delay *atomic.Int64) {
	type chunk struct {
		at time.Time
		b  []byte
	}
	ch := make(chan chunk, 256)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{time.Now(), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		if d := time.Duration(delay.Load()); d > 0 {
			time.Sleep(time.Until(c.at.Add(d)))
		}
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	for range ch { // let the reader end
	}
}
