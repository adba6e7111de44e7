package machineid_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/machineid"
)

// Fixed IDs (static, IP table, k8s) may never lie in the IDs Redis leases
// hand out: Validate refuses them, naming the fixed ID's field and the
// lease range's.
func TestFixedIDsOutsideTheLeaseRange(t *testing.T) {
	narrow := func(s string) core.MachineRange {
		r, err := core.ParseMachineRange(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		edit func(*machineid.Config)
		want []string // nil = valid
	}{
		{"redis then static on the default ranges", func(c *machineid.Config) {
			c.Providers, c.Static = []string{"redis", "static"}, new(core.MachineID(1023))
		}, []string{"Static: 1023", "ServerLeaseRange 924-1023, all of ServerRange by default", "narrow ServerLeaseRange (e.g. 924-1022)"}},
		{"redis then static, lease range narrowed", func(c *machineid.Config) {
			c.Providers, c.Static = []string{"redis", "static"}, new(core.MachineID(1023))
			c.ServerLeaseRange = narrow("924-1003")
		}, nil},
		{"static inside an explicit lease range, redis not listed here", func(c *machineid.Config) {
			c.Static = new(core.MachineID(1000))
			c.ServerLeaseRange = narrow("924-1003")
		}, []string{"Static: 1000", "ServerLeaseRange 924-1003)"}},
		{"static alone: no lease range", func(c *machineid.Config) { c.Static = new(core.MachineID(1023)) }, nil},
		{"embedded static in the embedded lease range", func(c *machineid.Config) {
			c.Providers, c.Static = []string{"static", "redis"}, new(core.MachineID(0))
		}, []string{"Static: 0", "EmbeddedLeaseRange 0-923, all of EmbeddedRange", "(e.g. 1-923)"}},
		{"ip table value in the lease range", func(c *machineid.Config) {
			c.Providers = []string{"redis", "iptable"}
			c.IPTable = map[string]core.MachineID{"10.0.0.1": 1010, "10.0.0.2": 950}
			c.ServerLeaseRange = narrow("924-999")
		}, []string{`IPTable["10.0.0.2"]: 950`, "ServerLeaseRange 924-999"}},
		{"ip table not listed: not a fixed ID of this host", func(c *machineid.Config) {
			c.Providers = []string{"redis"}
			c.IPTable = map[string]core.MachineID{"10.0.0.2": 950}
		}, nil},
		{"k8s offset in the lease range", func(c *machineid.Config) {
			c.Providers, c.K8sOffset = []string{"k8s", "redis"}, 924
		}, []string{"K8sOffset", "924 lies in the IDs leases hand out"}},
		{"k8s beside a narrowed lease range", func(c *machineid.Config) {
			c.Providers, c.K8sOffset = []string{"k8s", "redis"}, 924
			c.ServerLeaseRange = narrow("1000-1023")
		}, nil},
		{"lease range outside its range", func(c *machineid.Config) {
			c.Providers = []string{"redis"}
			c.ServerLeaseRange = narrow("900-1000")
		}, []string{"ServerLeaseRange: 900-1000; want a part of ServerRange 924-1023"}},
		{"embedded lease range outside its range", func(c *machineid.Config) {
			c.Providers = []string{"redis"}
			c.EmbeddedLeaseRange = narrow("900-1000")
		}, []string{"EmbeddedLeaseRange: 900-1000; want a part of EmbeddedRange 0-923"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := machineid.DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, machineid.ErrConfig) {
				t.Fatalf("Validate = %v; want ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q; want it to say %q", err, w)
				}
			}
		})
	}
}

func TestLeaseRange(t *testing.T) {
	c := machineid.DefaultConfig()
	if r := c.LeaseRange(core.Central); !r.IsZero() {
		t.Fatalf("static only: lease range %s; want none", r)
	}
	c.Providers = []string{"redis"}
	if r := c.LeaseRange(core.Central); r != machineid.DefaultServerRange {
		t.Fatalf("redis: lease range %s; want the server range", r)
	}
	if r := (machineid.Config{Providers: []string{"redis"}}).LeaseRange(core.Embedded); r != machineid.DefaultEmbeddedRange {
		t.Fatalf("redis, zero ranges: lease range %s; want the default embedded range", r)
	}
	c.ServerLeaseRange = core.MachineRange{First: 1000, Count: 4}
	if r := c.LeaseRange(core.Central); r != c.ServerLeaseRange {
		t.Fatalf("explicit: lease range %s; want %s", r, c.ServerLeaseRange)
	}
	c.Providers = []string{"static"}
	if r := c.LeaseRange(core.Central); r != c.ServerLeaseRange {
		t.Fatalf("explicit without redis: lease range %s; want %s (a fleet shares it)", r, c.ServerLeaseRange)
	}
}

// A k8s ordinal is known only at Acquire: one that lands in the lease
// range is refused then, and stops the chain.
func TestK8sOrdinalInTheLeaseRange(t *testing.T) {
	c := machineid.DefaultConfig()
	c.Providers, c.K8sOffset, c.Hostname = []string{"k8s", "redis"}, 924, "vesta-60"
	c.ServerLeaseRange = core.MachineRange{First: 974, Count: 50}
	c.Redis.Addrs = []string{deadAddr(t)}
	_, err := acquire(t, c, core.Central)
	if !errors.Is(err, machineid.ErrRange) || errors.Is(err, machineid.ErrNoProvider) ||
		!strings.Contains(err.Error(), "984 lies in the IDs leases hand out (ServerLeaseRange 974-1023)") {
		t.Fatalf("Acquire = %v; want ErrRange naming 984 and ServerLeaseRange", err)
	}
	c.Hostname = "vesta-49"
	if l := mustAcquire(t, c, core.Central); l.ID() != 973 || l.Provider() != "k8s" {
		t.Fatalf("got %d from %s; want 973 from k8s", l.ID(), l.Provider())
	}
}

// The redis provider claims from the lease range only: a narrowed one
// fills up at its size, and never hands out the IDs kept for fixed hosts.
func TestRedisClaimsFromTheLeaseRangeOnly(t *testing.T) {
	_, c := startRedis(t, 0)
	c.ServerLeaseRange = core.MachineRange{First: 1000, Count: 3}
	got := map[core.MachineID]bool{}
	for range 3 {
		l := mustAcquire(t, c, core.Central)
		if !c.ServerLeaseRange.Contains(l.ID()) || got[l.ID()] {
			t.Fatalf("leased %d (have %v); want a free ID of 1000-1002", l.ID(), got)
		}
		got[l.ID()] = true
		if l.Range() != c.ServerLeaseRange {
			t.Fatalf("Range() = %s; want the lease range %s", l.Range(), c.ServerLeaseRange)
		}
	}
	if _, err := acquire(t, c, core.Central); !errtest.Wraps(err, machineid.ErrRangeFull, "1000-1002") {
		t.Fatalf("fourth Acquire = %v; want ErrRangeFull naming 1000-1002", err)
	}
}

// There is no default machine ID: the default config refuses in both
// modes, saying how to choose.
func TestNoDefaultMachineID(t *testing.T) {
	for _, method := range []core.Method{core.Embedded, core.Central} {
		_, err := acquire(t, machineid.DefaultConfig(), method)
		if !errors.Is(err, machineid.ErrNoMachineID) || !errors.Is(err, machineid.ErrConfig) {
			t.Fatalf("%s: Acquire(DefaultConfig()) = %v; want ErrNoMachineID", method, err)
		}
		want := []string{"Static", "machine.id", "--machine", "VESTA_MACHINE_ID"}
		for _, p := range machineid.Providers() {
			if p != machineid.ProviderStatic {
				want = append(want, "["+p+"]") // every other way to choose
			}
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", method, err, w)
			}
		}
	}
}
