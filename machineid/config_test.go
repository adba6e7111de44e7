package machineid_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*machineid.Config)
		field string // "" = valid
	}{
		{"defaults: no machine ID chosen", func(*machineid.Config) {}, "Static"},
		{"zero config: no machine ID chosen", func(c *machineid.Config) { *c = machineid.Config{} }, "Static"},
		{"a static ID", func(c *machineid.Config) { c.Static = new(core.MachineID(0)) }, ""},
		{"redis alone", func(c *machineid.Config) { c.Providers = []string{"redis"} }, ""},
		{"every provider", func(c *machineid.Config) {
			c.Providers = []string{"redis", "k8s", "iptable", "static"}
			c.IPTable = map[string]core.MachineID{"10.0.0.1": 1, "10.0.0.2": 1020}
			c.Static, c.K8sOffset = new(core.MachineID(1010)), 1000
			c.EmbeddedLeaseRange = core.MachineRange{First: 100, Count: 824}
			c.ServerLeaseRange = core.MachineRange{First: 924, Count: 70}
		}, ""},
		{"unknown provider", func(c *machineid.Config) { c.Providers = []string{"redis", "consul"} }, "Providers"},
		{"provider twice", func(c *machineid.Config) { c.Providers = []string{"static", "static"} }, "Providers"},
		{"static past 1023", func(c *machineid.Config) { c.Static = new(core.MachineID(1024)) }, "Static"},
		{"empty ip table", func(c *machineid.Config) { c.Providers = []string{"iptable"} }, "IPTable"},
		{"ip table key not an address", func(c *machineid.Config) { c.IPTable = map[string]core.MachineID{"host-a": 3} }, "IPTable"},
		{"ip table ID past 1023", func(c *machineid.Config) { c.IPTable = map[string]core.MachineID{"10.0.0.1": 2000} }, "IPTable"},
		{"one address, two IDs", func(c *machineid.Config) {
			c.IPTable = map[string]core.MachineID{"10.0.0.1": 3, "::ffff:10.0.0.1": 4}
		}, "IPTable"},
		{"negative k8s offset", func(c *machineid.Config) { c.K8sOffset = -1 }, "K8sOffset"},
		{"k8s offset past 1023", func(c *machineid.Config) { c.K8sOffset = 1024 }, "K8sOffset"},
		{"overlapping ranges", func(c *machineid.Config) {
			c.EmbeddedRange = core.MachineRange{First: 0, Count: 930}
		}, "EmbeddedRange"},
		{"range past 1023", func(c *machineid.Config) {
			c.ServerRange = core.MachineRange{First: 1000, Count: 100}
		}, "ServerRange"},
		{"history of no hold", func(c *machineid.Config) { c.Providers, c.History.Holds = []string{"redis"}, -1 }, "History.Holds"},
		{"history of 257 holds", func(c *machineid.Config) { c.Providers, c.History.Holds = []string{"redis"}, 257 }, "History.Holds"},
		{"history of a minute", func(c *machineid.Config) { c.Providers, c.History.MaxAge = []string{"redis"}, time.Minute }, "History.MaxAge"},
		{"history of 256 holds, a year", func(c *machineid.Config) {
			c.Providers, c.History = []string{"redis"}, machineid.HistoryConfig{Holds: 256, MaxAge: 365 * 24 * time.Hour}
		}, ""},
		{"key prefix with a brace", func(c *machineid.Config) { c.Redis.KeyPrefix = "ve{sta" }, "Redis.KeyPrefix"},
		{"lease TTL too short", func(c *machineid.Config) { c.Redis.LeaseTTL = 10 * time.Millisecond }, "Redis.LeaseTTL"},
		{"negative skew", func(c *machineid.Config) { c.Redis.MaxClockSkew = -time.Second }, "Redis.MaxClockSkew"},
		{"negative margin", func(c *machineid.Config) { c.Redis.SafetyMargin = -time.Second }, "Redis.SafetyMargin"},
		{"margin past 2/3 of the TTL", func(c *machineid.Config) {
			c.Redis.LeaseTTL, c.Redis.SafetyMargin = 3*time.Second, 2*time.Second
		}, "Redis.SafetyMargin"},
		{"no Redis address", func(c *machineid.Config) {
			c.Providers, c.Redis.Addrs = []string{"redis"}, nil
		}, "Redis.Addrs"},
		{"empty Redis address", func(c *machineid.Config) {
			c.Providers, c.Redis.Addrs = []string{"redis"}, []string{""}
		}, "Redis.Addrs"},
		{"Redis TLS", func(c *machineid.Config) {
			c.Providers, c.Redis.TLS = []string{"redis"}, &tls.Config{}
		}, ""},
		{"Redis TLS not a pointer", func(c *machineid.Config) {
			c.Providers, c.Redis.TLS = []string{"redis"}, tls.Config{}
		}, "Redis.TLS"},
		{"Redis TLS a nil pointer: plain TCP", func(c *machineid.Config) {
			c.Providers, c.Redis.TLS = []string{"redis"}, (*tls.Config)(nil)
		}, ""},
		{"etcd TLS", func(c *machineid.Config) { c.Providers, c.Etcd.TLS = []string{"etcd"}, &tls.Config{} }, ""},
		{"etcd TLS of another type", func(c *machineid.Config) {
			c.Providers, c.Etcd.TLS = []string{"etcd"}, "/etc/vesta/ca.pem"
		}, "Etcd.TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := machineid.DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, machineid.ErrConfig) {
				t.Fatalf("Validate = %v; want ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tc.field+":") {
				t.Fatalf("Validate = %q; want it to name %s", err, tc.field)
			}
		})
	}
}

func TestValidateDoesNotChangeTheConfig(t *testing.T) {
	c := machineid.Config{Providers: []string{"redis"}, Redis: machineid.RedisConfig{Addrs: []string{"a:1"}, MaxClockSkew: time.Second}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Redis.KeyPrefix != "" || c.Redis.LeaseTTL != 0 || !c.EmbeddedRange.IsZero() {
		t.Fatalf("Validate filled in defaults of the caller's config: %+v", c)
	}
}

func TestPasswordIsNeverShown(t *testing.T) {
	const secret = "s3cret-pw"
	c := machineid.DefaultConfig()
	c.Redis.Password = secret
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "redis", c.Redis)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), buf.String()} {
		if strings.Contains(s, secret) {
			t.Fatalf("password shown in %q", s)
		}
	}
	if !strings.Contains(buf.String(), "hidden") {
		t.Fatalf("log does not say the password is hidden: %q", buf.String())
	}
}
