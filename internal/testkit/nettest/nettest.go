// Package nettest gives tests network addresses with known behaviour.
package nettest

import (
	"net"
	"testing"
)

// DeadAddr returns a loopback TCP address where nothing listens: a port
// that was free a moment ago, so a dial is refused at once.
func DeadAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
