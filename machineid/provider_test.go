package machineid_test

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/logtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/machineid"
)

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

// deadAddr is an address where nothing listens.
var deadAddr = nettest.DeadAddr

func acquire(t testing.TB, c machineid.Config, method core.Method) (*machineid.Lease, error) {
	t.Helper()
	l, err := machineid.Acquire(context.Background(), c, method)
	if err == nil {
		t.Cleanup(func() { l.Close(context.Background()) })
	}
	return l, err
}

func mustAcquire(t testing.TB, c machineid.Config, method core.Method) *machineid.Lease {
	t.Helper()
	l, err := acquire(t, c, method)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return l
}

func TestProviders(t *testing.T) {
	table := map[string]core.MachineID{"10.0.0.1": 924, "10.0.0.2": 925, "fd00::7": 926, "192.168.1.5": 3}
	for _, tc := range []struct {
		name   string
		method core.Method
		edit   func(*machineid.Config)
		want   core.MachineID
		errs   []error  // the error wraps all of these; nil = success
		msg    []string // and says all of these
	}{
		{"static server", core.Central, func(c *machineid.Config) { c.Static = new(core.MachineID(1023)) }, 1023, nil, nil},
		{"static embedded", core.Embedded, func(c *machineid.Config) { c.Static = new(core.MachineID(7)) }, 7, nil, nil},
		{"static outside the server range", core.Central, func(c *machineid.Config) { c.Static = new(core.MachineID(7)) },
			0, []error{machineid.ErrConfig, machineid.ErrRange}, []string{"Static", "7", "server range 924-1023"}},
		{"static outside the embedded range", core.Embedded, func(c *machineid.Config) { c.Static = new(core.MachineID(1000)) },
			0, []error{machineid.ErrRange}, []string{"1000", "embedded range 0-923"}},
		{"static inside a moved range", core.Central, func(c *machineid.Config) {
			c.EmbeddedRange, c.ServerRange, c.Static = core.MachineRange{First: 100, Count: 924}, core.MachineRange{First: 0, Count: 100}, new(core.MachineID(99))
		}, 99, nil, nil},
		{"iptable one match", core.Central, func(c *machineid.Config) {
			c.Providers, c.IPTable, c.HostAddrs = []string{"iptable"}, table, addrs("127.0.0.1", "10.0.0.2", "fe80::1")
		}, 925, nil, nil},
		{"iptable IPv6", core.Central, func(c *machineid.Config) {
			c.Providers, c.IPTable, c.HostAddrs = []string{"iptable"}, table, addrs("127.0.0.1", "fd00::7")
		}, 926, nil, nil},
		{"iptable IPv4-mapped address", core.Central, func(c *machineid.Config) {
			c.Providers, c.IPTable, c.HostAddrs = []string{"iptable"}, table, addrs("::ffff:10.0.0.1")
		}, 924, nil, nil},
		{"iptable two addresses, one ID", core.Central, func(c *machineid.Config) {
			c.Providers, c.HostAddrs = []string{"iptable"}, addrs("10.0.0.1", "10.0.0.9")
			c.IPTable = map[string]core.MachineID{"10.0.0.1": 930, "10.0.0.9": 930}
		}, 930, nil, nil},
		{"iptable two addresses, two IDs", core.Central, func(c *machineid.Config) {
			c.Providers, c.IPTable, c.HostAddrs = []string{"iptable"}, table, addrs("10.0.0.2", "10.0.0.1")
		}, 0, []error{machineid.ErrAmbiguous}, []string{"10.0.0.1 -> 924", "10.0.0.2 -> 925"}},
		{"iptable no match", core.Central, func(c *machineid.Config) {
			c.Providers, c.IPTable, c.HostAddrs = []string{"iptable"}, table, addrs("10.9.9.9")
		}, 0, []error{machineid.ErrNoProvider, machineid.ErrUnavailable}, []string{"iptable:", "10.9.9.9"}},
		{"iptable match outside the method's range", core.Central, func(c *machineid.Config) {
			c.Providers, c.IPTable, c.HostAddrs = []string{"iptable"}, table, addrs("192.168.1.5")
		}, 0, []error{machineid.ErrRange}, []string{"3", "server range"}},
		{"iptable empty", core.Central, func(c *machineid.Config) {
			c.Providers = []string{"iptable"}
		}, 0, []error{machineid.ErrConfig}, []string{"IPTable"}},
		{"k8s ordinal", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset = []string{"k8s"}, "vesta-12", 924
		}, 936, nil, nil},
		{"k8s fully qualified", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset = []string{"k8s"}, "id-server-0.id-server.prod.svc.cluster.local", 924
		}, 924, nil, nil},
		{"k8s embedded offset 0", core.Embedded, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset = []string{"k8s"}, "app-7", 0
		}, 7, nil, nil},
		{"k8s embedded with the default offset", core.Embedded, func(c *machineid.Config) {
			c.Providers, c.Hostname = []string{"k8s"}, "app-7"
		}, 0, []error{machineid.ErrConfig, machineid.ErrRange}, []string{"K8sOffset"}},
		{"k8s default offset", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname = []string{"k8s"}, "vesta-3"
		}, 927, nil, nil},
		{"k8s no ordinal", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset = []string{"k8s"}, "build-host", 924
		}, 0, []error{machineid.ErrNoProvider, machineid.ErrUnavailable}, []string{"k8s:", "build-host"}},
		{"k8s dash without digits", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset = []string{"k8s"}, "vesta-", 924
		}, 0, []error{machineid.ErrUnavailable}, []string{"vesta-"}},
		{"k8s ordinal past the range", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset = []string{"k8s"}, "vesta-100", 924
		}, 0, []error{machineid.ErrRange}, []string{"1024"}},
		{"k8s ordinal past 1023", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset = []string{"k8s"}, "vesta-99999", 924
		}, 0, []error{machineid.ErrRange}, []string{"99999"}},
		{"k8s offset outside the range", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset = []string{"k8s"}, "vesta-1", 0
		}, 0, []error{machineid.ErrConfig, machineid.ErrRange}, []string{"K8sOffset"}},
		{"chain falls through to static", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset, c.Static = []string{"k8s", "iptable", "static"}, "laptop", 924, new(core.MachineID(1000))
			c.IPTable, c.HostAddrs = table, addrs("10.9.9.9")
		}, 1000, nil, nil},
		{"chain lists every reason", core.Central, func(c *machineid.Config) {
			c.Providers, c.Hostname, c.K8sOffset = []string{"k8s", "iptable"}, "laptop", 924
			c.IPTable, c.HostAddrs = table, addrs("10.9.9.9")
		}, 0, []error{machineid.ErrNoProvider, machineid.ErrUnavailable}, []string{"k8s:", "laptop", "iptable:", "10.9.9.9"}},
		{"a hard error stops the chain", core.Central, func(c *machineid.Config) {
			c.Providers, c.Static = []string{"iptable", "static"}, new(core.MachineID(1000))
			c.IPTable, c.HostAddrs = table, addrs("10.0.0.1", "10.0.0.2")
		}, 0, []error{machineid.ErrAmbiguous}, []string{"iptable provider"}},
		{"unknown provider", core.Central, func(c *machineid.Config) { c.Providers = []string{"zookeeper"} },
			0, []error{machineid.ErrConfig}, []string{"zookeeper", "redis, k8s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := machineid.DefaultConfig()
			tc.edit(&c)
			l, err := acquire(t, c, tc.method)
			if tc.errs == nil {
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				if l.ID() != tc.want || l.Guard() != nil {
					t.Fatalf("ID %d, guard %v; want %d and no guard", l.ID(), l.Guard(), tc.want)
				}
				if s := l.Status(); s.State != machineid.StateNone || s.Machine != tc.want {
					t.Fatalf("Status = %+v", s)
				}
				return
			}
			if err == nil {
				t.Fatalf("Acquire gave ID %d; want an error", l.ID())
			}
			for _, e := range tc.errs {
				if !errors.Is(err, e) {
					t.Errorf("error %q does not wrap %q", err, e)
				}
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
		})
	}
}

// [redis, static]: a static ID that Redis leases could hand out too is
// refused (a host that cannot reach Redis at start would share it with a
// host that can); with the lease range narrowed it is accepted, and the
// static ID is the fallback of an unreachable Redis.
func TestUnreachableRedisAtStart(t *testing.T) {
	c := machineid.DefaultConfig()
	c.Redis.Addrs = []string{deadAddr(t)}
	c.Providers, c.Static = []string{"redis", "static"}, new(core.MachineID(1023))
	_, err := acquire(t, c, core.Central)
	if !errtest.Wraps(err, machineid.ErrConfig, "Static: 1023", "ServerLeaseRange 924-1023, all of ServerRange") {
		t.Fatalf("redis then static 1023 on the default ranges: %v; want ErrConfig naming Static and ServerLeaseRange", err)
	}

	c.ServerLeaseRange, _ = core.ParseMachineRange("924-1003")
	l, err := acquire(t, c, core.Central)
	if err != nil {
		t.Fatalf("redis then static, lease range narrowed: %v", err)
	}
	if l.ID() != 1023 || l.Provider() != "static" {
		t.Fatalf("got %d from %s; want 1023 from static", l.ID(), l.Provider())
	}

	c.Providers = []string{"redis"}
	_, err = acquire(t, c, core.Central)
	if !errors.Is(err, machineid.ErrNoProvider) || !errtest.Wraps(err, machineid.ErrUnavailable, c.Redis.Addrs[0]) {
		t.Fatalf("redis alone: %v; want ErrNoProvider naming %s", err, c.Redis.Addrs[0])
	}
}

func TestTimeGuardOfAFixedID(t *testing.T) {
	c := machineid.DefaultConfig()
	c.Static = new(core.MachineID(9))
	l := mustAcquire(t, c, core.Embedded)
	if g, err := l.TimeGuard(""); err != nil || g != nil {
		t.Fatalf(`TimeGuard("") = %v, %v; want no guard`, g, err)
	}
	dir := t.TempDir()
	g, err := l.TimeGuard(dir)
	if err != nil {
		t.Fatal(err)
	}
	fg, ok := g.(*core.FileGuard)
	if !ok || !strings.HasPrefix(fg.Path(), dir) || !strings.Contains(fg.Path(), "machine-9") {
		t.Fatalf("TimeGuard = %#v; want the file guard of machine 9 in %s", g, dir)
	}
	if again, err := l.TimeGuard(dir); err != nil || again != g {
		t.Fatalf("second TimeGuard = %v, %v; want the same guard", again, err)
	}
	// The lock is held until the lease closes.
	if _, err := core.OpenFileGuard(dir, 9); !errors.Is(err, core.ErrGuardLocked) {
		t.Fatalf("OpenFileGuard while the lease holds it: %v; want ErrGuardLocked", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	other, err := core.OpenFileGuard(dir, 9)
	if err != nil {
		t.Fatalf("OpenFileGuard after Close: %v", err)
	}
	other.Close()
	if _, err := l.TimeGuard(dir); !errors.Is(err, machineid.ErrClosed) {
		t.Fatalf("TimeGuard after Close: %v; want ErrClosed", err)
	}
}

// TestTimeGuardWarnsOfALooseDir: the file guard's Warnings (a directory
// other users can reach, which it leaves as it is) reach the log.
func TestTimeGuardWarnsOfALooseDir(t *testing.T) {
	var log logtest.Buffer
	c := machineid.DefaultConfig()
	c.Static = new(core.MachineID(9))
	c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	l := mustAcquire(t, c, core.Embedded)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TimeGuard(dir); err != nil {
		t.Fatal(err)
	}
	if s := log.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "mode 0777") {
		t.Fatalf("log:\n%s\nwant a warning of the directory's mode 0777", s)
	}
}

func TestAttachChecksTheMachine(t *testing.T) {
	c := machineid.DefaultConfig()
	c.Static = new(core.MachineID(5))
	l := mustAcquire(t, c, core.Embedded)
	other, err := core.New(context.Background(), core.Config{Machine: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := l.Attach(other); !errors.Is(err, machineid.ErrAttached) {
		t.Fatalf("Attach of machine 6 to lease 5: %v; want ErrAttached", err)
	}
	gen, err := core.New(context.Background(), core.Config{Machine: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	if err := l.Attach(gen); err != nil {
		t.Fatal(err)
	}
	if err := l.Attach(gen); !errors.Is(err, machineid.ErrAttached) {
		t.Fatalf("second Attach: %v; want ErrAttached", err)
	}
}

// The publish method chooses the range: embedded for core.Embedded, the
// server range for the servers' methods; no issuer publishes with
// core.Reserved.
func TestRangeOfMethod(t *testing.T) {
	c := machineid.DefaultConfig()
	c.EmbeddedRange, c.ServerRange = core.MachineRange{First: 0, Count: 500}, core.MachineRange{First: 500, Count: 100}
	c.Static = new(core.MachineID(550))
	for _, tc := range []struct {
		m       core.Method
		want    core.MachineRange
		wantErr error
	}{
		{core.Embedded, c.EmbeddedRange, machineid.ErrRange},
		{core.Central, c.ServerRange, nil},
		{core.REST, c.ServerRange, nil},
		{core.Reserved, c.ServerRange, machineid.ErrConfig},
	} {
		if got := c.Range(tc.m); got != tc.want {
			t.Errorf("Range(%s) = %s; want %s", tc.m, got, tc.want)
		}
		if err := c.ValidateFor(tc.m); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("ValidateFor(%s) = %v; want %v", tc.m, err, tc.wantErr)
		}
	}
	if got := (machineid.Config{}).Range(core.REST); got != machineid.DefaultServerRange {
		t.Errorf("zero Config: Range(rest) = %s; want the default %s", got, machineid.DefaultServerRange)
	}
}
