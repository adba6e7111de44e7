package netnstest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vesta-go/vesta/internal/testkit"
)

// prefix starts the name of every namespace this package makes; the pid of
// the test process follows, so that a later run can tell stale ones.
const prefix = "vestatest-"

// subnet is the test network's: 10.231.0.0/24, the bridge's namespace
// holding no address. Only the test's own namespaces ever see it.
var subnet = netip.MustParsePrefix("10.231.0.0/24")

// nets numbers the networks of this process, so that names stay unique
// when tests run in parallel.
var nets atomic.Int64

// Net is one test network: a bridge in a namespace of its own and the
// hosts joined to it.
type Net struct {
	t      testing.TB
	name   string // prefix + pid + "-" + n
	bridge string // the bridge's namespace

	mu    sync.Mutex
	hosts []*Host
}

// Host is one test host: a network namespace with a veth "eth0" on the
// bridge and an address of the test subnet.
type Host struct {
	// Name is the host's name in the test, NS its namespace's.
	Name, NS string
	// Addr is the host's address on the test network.
	Addr netip.Addr
	net  *Net
	port string // the veth's end on the bridge
}

// New makes a test network, removed (with every host) when the test ends.
func New(t testing.TB) *Net {
	t.Helper()
	testkit.SkipShort(t, "root, ip and iptables (network namespaces, internal/testkit/netnstest)")
	if os.Geteuid() != 0 {
		t.Fatalf("netnstest: network namespaces need root (CAP_NET_ADMIN); run the tests as root, as CI does")
	}
	for _, bin := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("netnstest: %s is not on PATH (%v); install it with scripts/deps.sh", bin, err)
		}
	}
	sweep(t)
	n := &Net{t: t, name: fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), nets.Add(1))}
	n.bridge = n.name + "-br"
	t.Cleanup(n.remove)
	n.ip("netns", "add", n.bridge)
	n.ip("-n", n.bridge, "link", "set", "lo", "up")
	n.ip("-n", n.bridge, "link", "add", "br0", "type", "bridge")
	n.ip("-n", n.bridge, "link", "set", "br0", "up")
	return n
}

// Host adds a host named name (letters and digits, unique in the network).
func (n *Net) Host(name string) *Host {
	n.t.Helper()
	n.mu.Lock()
	i := len(n.hosts)
	n.mu.Unlock()
	if i >= 250 {
		n.t.Fatalf("netnstest: at most 250 hosts per network")
	}
	h := &Host{Name: name, NS: n.name + "-" + name, net: n, port: "h" + strconv.Itoa(i)}
	a := subnet.Addr().As4()
	a[3] = byte(i + 1)
	h.Addr = netip.AddrFrom4(a)
	n.ip("netns", "add", h.NS)
	n.mu.Lock()
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	// Both ends are made inside their namespaces: no interface name ever
	// appears in the machine's own namespace.
	n.ip("link", "add", "eth0", "netns", h.NS, "type", "veth", "peer", "name", h.port, "netns", n.bridge)
	n.ip("-n", n.bridge, "link", "set", h.port, "master", "br0", "up")
	n.ip("-n", h.NS, "link", "set", "lo", "up")
	n.ip("-n", h.NS, "addr", "add", netip.PrefixFrom(h.Addr, subnet.Bits()).String(), "dev", "eth0")
	n.ip("-n", h.NS, "link", "set", "eth0", "up")
	return h
}

// ip runs the ip command and fails the test when it fails.
func (n *Net) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("netnstest: ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// remove deletes every namespace of the network; their veths go with them.
func (n *Net) remove() {
	n.mu.Lock()
	hosts := n.hosts
	n.mu.Unlock()
	for _, h := range hosts {
		del(h.NS)
	}
	del(n.bridge)
}

func del(ns string) {
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
}

// sweep removes namespaces of this package left by runs whose process is
// gone (killed before its cleanup ran).
func sweep(t testing.TB) {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			t.Logf("netnstest: removing namespace %s of a run that is gone (pid %d)", e.Name(), pid)
			del(e.Name())
		}
	}
}

// Wrap is the command line that runs a program in the host's namespace:
// append the program and its arguments. `ip netns exec` execs the program,
// so its pid is the program's own (signals reach it).
func (h *Host) Wrap() []string { return []string{"ip", "netns", "exec", h.NS} }

// Command is exec.Command of name and args inside the host's namespace.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	w := h.Wrap()
	return exec.Command(w[0], append(append(w[1:], name), args...)...)
}

// Dial connects from inside the host's namespace: to another host's
// address, or to a server on the host's own loopback.
func (h *Host) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.in(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// DialFrom is Dial from the local address from (an address of the host,
// or one its routes make local).
func (h *Host) DialFrom(ctx context.Context, from netip.Addr, network, addr string) (net.Conn, error) {
	return h.DialWith(ctx, &net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0))}, network, addr)
}

// DialWith is Dial with d: a local address, or a Control that marks the
// socket (SO_MARK) so that the host's own iptables rules can tell it.
func (h *Host) DialWith(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.in(func() (err error) {
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen listens inside the host's namespace.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := h.in(func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// in runs f on a thread switched into the host's namespace; the sockets f
// makes belong to it for good. The thread is switched back afterwards:
// ending it instead would kill the children it forked before (started
// with Pdeathsig, which follows the forking thread). Should switching back
// fail, the goroutine exits locked and the runtime discards the thread.
func (h *Host) in(f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- fmt.Errorf("netnstest: the thread's own namespace: %w", err)
			return
		}
		defer own.Close()
		ns, err := os.Open(filepath.Join("/run/netns", h.NS))
		if err != nil {
			ch <- fmt.Errorf("netnstest: host %s: %w", h.Name, err)
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- fmt.Errorf("netnstest: host %s: setns: %w", h.Name, err)
			return
		}
		err = f()
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// Drop cuts the host off silently from peers (from every other host when
// none is given): iptables in the host's namespace drops every packet to
// and from them, so connections hang rather than fail, as behind a dead
// switch or a firewall. The host's loopback is untouched. Heal undoes it.
func (h *Host) Drop(peers ...*Host) {
	h.net.t.Helper()
	if len(peers) == 0 {
		h.iptables("-A", "INPUT", "-i", "eth0", "-j", "DROP")
		h.iptables("-A", "OUTPUT", "-o", "eth0", "-j", "DROP")
		return
	}
	for _, p := range peers {
		h.iptables("-A", "INPUT", "-i", "eth0", "-s", p.Addr.String(), "-j", "DROP")
		h.iptables("-A", "OUTPUT", "-o", "eth0", "-d", p.Addr.String(), "-j", "DROP")
	}
}

// Split cuts the hosts of side off silently from those of other, as a
// network split would: each host drops every host across (Drop), in the
// rules of both, so that healing one host alone does not end it. Hosts on
// the same side still reach each other.
func Split(side, other []*Host) {
	for _, h := range side {
		h.Drop(other...)
	}
	for _, h := range other {
		h.Drop(side...)
	}
}

// LinkDown cuts the host off loudly: its veth goes down, so its route to
// the subnet goes and sends fail at once. Heal undoes it.
func (h *Host) LinkDown() {
	h.net.t.Helper()
	h.net.ip("-n", h.NS, "link", "set", "eth0", "down")
}

// Heal removes every rule of Drop and brings the veth up again.
func (h *Host) Heal() {
	h.net.t.Helper()
	h.iptables("-F", "INPUT")
	h.iptables("-F", "OUTPUT")
	h.net.ip("-n", h.NS, "link", "set", "eth0", "up")
}

// iptables runs iptables in the host's namespace (-w: the lock file is
// shared by every namespace of the machine).
func (h *Host) iptables(args ...string) {
	h.net.t.Helper()
	cmd := h.Command("iptables", append([]string{"-w", "5"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		h.net.t.Fatalf("netnstest: iptables %s in %s: %v\n%s", strings.Join(args, " "), h.NS, err, out)
	}
}
