package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/netnstest"
)

// forwarder accepts connections on a listener and copies each to a
// target and back, holding every chunk for its delay first (zero: at
// once): a slow network, in one place the nemesis controls.
type forwarder struct {
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	target string
	delay  atomic.Int64 // nanoseconds, each way
}

// forward serves ln until the run ends; dial reaches target.
func forward(t *tb, ln net.Listener, target string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *forwarder {
	fw := &forwarder{dial: dial, target: target}
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	closed := false
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			c.Close()
			return false
		}
		conns[c] = true
		return true
	}
	untrack := func(c net.Conn) {
		mu.Lock()
		delete(conns, c)
		mu.Unlock()
		c.Close()
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !track(c) {
				return
			}
			go func() {
				defer untrack(c)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				u, err := fw.dial(ctx, "tcp", fw.target)
				cancel()
				if err != nil || !track(u) {
					return
				}
				defer untrack(u)
				done := make(chan struct{})
				go func() { fw.pipe(u, c); close(done) }()
				fw.pipe(c, u)
				<-done
			}()
		}
	}()
	return fw
}

// setDelay makes every chunk wait d from when it was read, each way.
func (fw *forwarder) setDelay(d time.Duration) { fw.delay.Store(int64(d)) }

// pipe copies src to dst, each chunk held for the delay; at the end of
// either it closes both, so the other direction ends too.
func (fw *forwarder) pipe(dst, src net.Conn) {
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
		if d := time.Duration(fw.delay.Load()); d > 0 {
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

// proxy forwards connections made to addr inside h's namespace to target
// in the nemesis's own namespace, until the run ends (a server reaches
// its segment store so, and the faults cut it there).
func proxy(t *tb, h *netnstest.Host, addr, target string) *forwarder {
	ln, err := h.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy on %s %s: %v", h.Name, addr, err)
	}
	var d net.Dialer
	return forward(t, ln, target, d.DialContext)
}

// fwdMark marks the forwarders' own connections to the lease store, so
// that the NAT rule that sends a server's connections to them lets theirs
// pass.
const fwdMark = 0x6e6

// leaseForwarders put a forwarder between a leasing server's host and
// every lease store endpoint (an etcd member; a Redis server or a
// Sentinel): a NAT rule in the host's namespace redirects the server's
// connections to each endpoint to a forwarder of its own on the host's
// loopback, which dials the endpoint from the host (so the host's cuts
// still cut it) with its socket marked past the rule. The faults slow
// renewals there.
func leaseForwarders(t *tb, h *netnstest.Host, endpoints []string) []*forwarder {
	var out []*forwarder
	mark := func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_MARK, fwdMark) }); err != nil {
			return err
		}
		return serr
	}
	d := &net.Dialer{Control: mark}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return h.DialWith(ctx, d, network, addr)
	}
	for i, ep := range endpoints {
		host, port, err := net.SplitHostPort(ep)
		if err != nil {
			t.Fatalf("lease forwarder for %s: %v", ep, err)
		}
		local := 21000 + i
		ln, err := h.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", local))
		if err != nil {
			t.Fatalf("lease forwarder on %s: %v", h.Name, err)
		}
		out = append(out, forward(t, ln, ep, dial))
		iptablesT(t, h, "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-d", host, "--dport", port,
			"-m", "mark", "!", "--mark", strconv.Itoa(fwdMark), "-j", "REDIRECT", "--to-ports", strconv.Itoa(local))
	}
	return out
}

// iptablesT runs iptables in h's namespace, failing the run if it fails.
func iptablesT(t *tb, h *netnstest.Host, args ...string) {
	cmd := h.Command("iptables", append([]string{"-w", "5"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("iptables %v in %s: %v\n%s", args, h.NS, err, out)
	}
}
