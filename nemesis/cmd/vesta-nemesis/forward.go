package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
)

// proxy forwards connections made to addr inside h's namespace to target
// in the nemesis's own namespace, until the run ends (a server reaches
// its segment store so, and the faults cut it there).
func proxy(t *tb, h *netnstest.Host, addr, target string) *nettest.Forwarder {
	ln, err := h.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy on %s %s: %v", h.Name, addr, err)
	}
	return nettest.Forward(t, ln, target, nil)
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
func leaseForwarders(t *tb, h *netnstest.Host, endpoints []string) []*nettest.Forwarder {
	var out []*nettest.Forwarder
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
		out = append(out, nettest.Forward(t, ln, ep, dial))
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
