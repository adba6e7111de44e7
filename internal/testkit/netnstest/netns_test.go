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

	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
)

// echo serves one line back on every connection, until the test ends.
func echo(t *testing.T, h *netnstest.Host, addr string) string {
	t.Helper()
	l, err := h.Listen("tcp", addr)
	testkit.Closed(t, "h.Listen", l, err)
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
		// reaches and timesOut check a call from h to addr: through, or
		// hanging until it times out (a silent cut).
		reaches := func(h *netnstest.Host, addr, what string) {
			t.Helper()
			if err := call(h, addr, 5*time.Second); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
		timesOut := func(h *netnstest.Host, addr, what string) {
			t.Helper()
			if err := call(h, addr, short); !timedOut(err) {
				t.Errorf("%s: %v; want a timeout", what, err)
			}
		}
		for _, h := range []*netnstest.Host{b, c} {
			if err := call(h, srv, 5*time.Second); err != nil {
				t.Fatalf("%s -> a: %v", h.Name, err)
			}
		}
		if err := call(b, local, short); err == nil {
			t.Fatal("b reached a's loopback")
		}

		a.Drop(b)
		timesOut(b, srv, "b -> a with a dropping b")
		reaches(c, srv, "c -> a with a dropping only b")
		a.Heal()
		a.Drop()
		timesOut(c, srv, "c -> a with a dropping everyone")
		reaches(a, local, "a's loopback with a cut off")
		a.Heal()
		reaches(b, srv, "b -> a healed")

		a.LinkDown()
		start := time.Now()
		if err := call(a, net.JoinHostPort(b.Addr.String(), "7000"), 5*time.Second); !errors.Is(err, syscall.ENETUNREACH) {
			t.Errorf("a -> b with a's link down: %v; want %v", err, syscall.ENETUNREACH)
		} else if d := time.Since(start); d > 2*time.Second {
			t.Errorf("a -> b with a's link down failed after %v; want at once", d)
		}
		reaches(a, local, "a's loopback with its link down")
		a.Heal()
		reaches(c, srv, "c -> a healed")

		netnstest.Split([]*netnstest.Host{a}, []*netnstest.Host{b})
		timesOut(b, srv, "b -> a split")
		a.Heal() // b's rules still cut it
		timesOut(b, srv, "b -> a split, a healed")
		reaches(c, srv, "c -> a with a split from b only")
		b.Heal()
		reaches(b, srv, "b -> a healed on both")

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
