package nettest_test

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/nettest"
)

// echo serves an echo of every connection on loopback until the test
// ends.
func echo(t *testing.T) string {
	ln := nettest.Loopback(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// TestForward: bytes go through both ways; each direction holds its
// chunks at least its delay; the end of the test closes the connections
// it forwards.
func TestForward(t *testing.T) {
	target := echo(t)
	var client net.Conn
	t.Run("forwarding", func(t *testing.T) {
		fw := nettest.Forward(t, nettest.Loopback(t), target, nil)
		c, err := net.Dial("tcp", fw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		client = c
		c.SetDeadline(time.Now().Add(30 * time.Second))
		r := bufio.NewReader(c)
		roundTrip := func(line string) time.Duration {
			t.Helper()
			start := time.Now()
			if _, err := io.WriteString(c, line+"\n"); err != nil {
				t.Fatal(err)
			}
			got, err := r.ReadString('\n')
			if err != nil || got != line+"\n" {
				t.Fatalf("echo of %q: %q, %v", line, got, err)
			}
			return time.Since(start)
		}
		roundTrip("at once")
		const d = 150 * time.Millisecond
		for _, tc := range []struct {
			name     string
			to, from time.Duration
		}{{"toward the target", d, 0}, {"back", 0, d}, {"both ways", d, d}} {
			fw.SetDelay(tc.to, tc.from)
			if rt := roundTrip(tc.name); rt < tc.to+tc.from {
				t.Errorf("a round trip with delays %v and %v took %v; want at least their sum", tc.to, tc.from, rt)
			}
		}
	})
	client.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a read after the forwarder's test ended: %v; want EOF", err)
	}
	client.Close()
}
