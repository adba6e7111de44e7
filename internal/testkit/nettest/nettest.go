package nettest

import (
	"errors"
	"net"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// DeadAddr returns a loopback TCP address where nothing listens: a port
// that was free a moment ago, so a dial is refused at once.
func DeadAddr(tb testing.TB) string {
	tb.Helper()
	ln := Loopback(tb)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Loopback returns a listener on a free port of 127.0.0.1 (never a
// default port). It is closed at cleanup, if nothing closed it before.
func Loopback(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	return testkit.Closed(tb, "net.Listen", ln, err)
}

// Server is what Serve runs: central's and rest's servers, and an
// http.Server.
type Server interface {
	Serve(net.Listener) error
	Close() error
}

// addrServer is a Server that says when it serves: Addr is nil before
// Serve has begun (central's and rest's).
type addrServer interface {
	Addr() net.Addr
}

// Serve runs s.Serve on ln (a Loopback listener when ln is nil) in a
// goroutine of its own, and returns the address it serves on. A server
// with an Addr method (nil before Serve) is waited for until Serve has
// begun, so that the test meets a serving server (a rest.Server applies
// its listener's Host policy from then on) and a Close at once is not a
// Close before Serve. At cleanup
// it closes s and waits for Serve to return, failing the test unless
// Close returned nil and Serve returned closed (errors.Is: nil for a
// server whose Serve returns nil after Close, http.ErrServerClosed for an
// http.Server): a server that cannot be stopped, or that stops with an
// error of its own, fails the test that ran it.
func Serve(tb testing.TB, s Server, ln net.Listener, closed error) net.Addr {
	tb.Helper()
	if ln == nil {
		ln = Loopback(tb)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("nettest: Close of the server on %s: %v", ln.Addr(), err)
		}
		if err := <-served; !errors.Is(err, closed) {
			tb.Errorf("nettest: Serve on %s returned %v after Close; want %v", ln.Addr(), err, closed)
		}
	})
	if as, ok := s.(addrServer); ok {
		waittest.Until(tb, "Serve to begin", func() bool { return as.Addr() != nil })
	}
	return ln.Addr()
}
