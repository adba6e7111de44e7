package netnstest_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/netnstest"
)

// echo serves one line back on every connection, until the test ends.
func echo(t *testing.T, h *netnstest.Host, addr string) string {
	t.Helper()
	l, err := h.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

// call dials addr from h and round-trips a line within d.
func call(h *netnstest.Host, addr string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c, err := h.Dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	buf := make([]byte, 5)
	_, err = io.ReadFull(c, buf)
	return err
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// TestPartitions: hosts reach each other, a silent cut makes calls hang
// (time out) while the cut host's loopback still works, a loud one makes
// them fail at once, Heal restores both, a Split holds until both sides
// are healed, and the namespaces are gone when the test ends.
func TestPartitions(t *testing.T) {
	var names []string
	t.Run("net", func(t *testing.T) {
		n := netnstest.New(t)
		a, b, c := n.Host("a"), n.Host("b"), n.Host("c")
		names = append(names, a.NS, b.NS, c.NS)
		if !a.Addr.IsPrivate() || a.Addr == b.Addr || !netip.MustParsePrefix("10.231.0.0/24").Contains(c.Addr) {
			t.Fatalf("addresses %v %v %v", a.Addr, b.Addr, c.Addr)
		}
		srv := echo(t, a, net.JoinHostPort(a.Addr.String(), "7000"))
		local := echo(t, a, "127.0.0.1:7001")
		const short = 500 * time.Millisecond
		for _, h := range []*netnstest.Host{b, c} {
			if err := call(h, srv, 5*time.Second); err != nil {
				t.Fatalf("%s -> a: %v", h.Name, err)
			}
		}
		if err := call(b, local, short); err == nil {
			t.Fatal("b reached a's loopback")
		}

		a.Drop(b)
		if err := call(b, srv, short); !timedOut(err) {
			t.Errorf("b -> a with a dropping b: %v; want a timeout", err)
		}
		if err := call(c, srv, 5*time.Second); err != nil {
			t.Errorf("c -> a with a dropping only b: %v", err)
		}
		a.Heal()
		a.Drop()
		if err := call(c, srv, short); !timedOut(err) {
			t.Errorf("c -> a with a dropping everyone: %v; want a timeout", err)
		}
		if err := call(a, local, 5*time.Second); err != nil {
			t.Errorf("a's loopback with a cut off: %v", err)
		}
		a.Heal()
		if err := call(b, srv, 5*time.Second); err != nil {
			t.Errorf("b -> a healed: %v", err)
		}

		a.LinkDown()
		start := time.Now()
		if err := call(a, net.JoinHostPort(b.Addr.String(), "7000"), 5*time.Second); !errors.Is(err, syscall.ENETUNREACH) {
			t.Errorf("a -> b with a's link down: %v; want %v", err, syscall.ENETUNREACH)
		} else if d := time.Since(start); d > 2*time.Second {
			t.Errorf("a -> b with a's link down failed after %v; want at once", d)
		}
		if err := call(a, local, 5*time.Second); err != nil {
			t.Errorf("a's loopback with its link down: %v", err)
		}
		a.Heal()
		if err := call(c, srv, 5*time.Second); err != nil {
			t.Errorf("c -> a healed: %v", err)
		}

		netnstest.Split([]*netnstest.Host{a}, []*netnstest.Host{b})
		if err := call(b, srv, short); !timedOut(err) {
			t.Errorf("b -> a split: %v; want a timeout", err)
		}
		a.Heal() // b's rules still cut it
		if err := call(b, srv, short); !timedOut(err) {
			t.Errorf("b -> a split, a healed: %v; want a timeout", err)
		}
		if err := call(c, srv, 5*time.Second); err != nil {
			t.Errorf("c -> a with a split from b only: %v", err)
		}
		b.Heal()
		if err := call(b, srv, 5*time.Second); err != nil {
			t.Errorf("b -> a healed on both: %v", err)
		}

		out, err := b.Command("ip", "-4", "-o", "addr", "show", "dev", "eth0").CombinedOutput()
		if err != nil || !strings.Contains(string(out), b.Addr.String()) {
			t.Errorf("ip addr in b: %v\n%s", err, out)
		}
	})
	for _, ns := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s left after the test: %v", ns, err)
		}
	}
}
