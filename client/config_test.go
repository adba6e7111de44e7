package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/machineid"
)

func TestConfigValidate(t *testing.T) {
	ok := client.DefaultConfig("127.0.0.1:7070", "[::1]:7070")
	ok.FallbackConfig.DataDir = t.TempDir()
	ok.FallbackConfig.Machine.Static = new(core.MachineID(7))
	tests := []struct {
		name  string
		edit  func(*client.Config)
		field string // "" = valid
	}{
		{"default", func(*client.Config) {}, ""},
		{"zero fields take defaults", func(c *client.Config) {
			c.Timeout, c.Retries, c.ConnsPerServer, c.BreakerFailures, c.BreakerTimeout = 0, 0, 0, 0, 0
		}, ""},
		{"fallback off needs no data dir", func(c *client.Config) { c.NoFallback, c.FallbackConfig.DataDir = true, "" }, ""},
		{"no servers", func(c *client.Config) { c.Servers = nil }, "Servers:"},
		{"no port", func(c *client.Config) { c.Servers = []string{"localhost"} }, "Servers[0]"},
		{"no host", func(c *client.Config) { c.Servers = []string{":7070"} }, "Servers[0]"},
		{"bad port", func(c *client.Config) { c.Servers = []string{"127.0.0.1:7070", "h:99999"} }, "Servers[1]"},
		{"port 0", func(c *client.Config) { c.Servers = []string{"h:0"} }, "Servers[0]"},
		{"twice", func(c *client.Config) { c.Servers = []string{"h:1", "h:1"} }, "Servers[1]"},
		{"negative timeout", func(c *client.Config) { c.Timeout = -time.Second }, "Timeout"},
		{"negative retries: none", func(c *client.Config) { c.Retries = -1 }, ""},
		{"too many retries", func(c *client.Config) { c.Retries = 11 }, "Retries: 11; want 0 (meaning 2) to 10, or negative (none)"},
		{"too many conns", func(c *client.Config) { c.ConnsPerServer = 1000 }, "ConnsPerServer"},
		{"negative prefetch", func(c *client.Config) { c.Prefetch = -1 }, "Prefetch"},
		{"huge prefetch", func(c *client.Config) { c.Prefetch = 1 << 30 }, "Prefetch"},
		{"negative breaker timeout", func(c *client.Config) { c.BreakerTimeout = -1 }, "BreakerTimeout"},
		{"fallback without time guard", func(c *client.Config) { c.FallbackConfig.DataDir = "" }, "FallbackConfig.DataDir"},
		{"fallback on a Redis lease keeps its mark in Redis", func(c *client.Config) {
			c.FallbackConfig.DataDir, c.FallbackConfig.Machine.Providers = "", []string{"redis"}
		}, ""},
		{"fallback that may fall through to static needs the file", func(c *client.Config) {
			c.FallbackConfig.DataDir, c.FallbackConfig.Machine.Providers = "", []string{"redis", "static"}
			c.FallbackConfig.Machine.EmbeddedLeaseRange = core.MachineRange{First: 100, Count: 824}
		}, "FallbackConfig.DataDir"},
		{"fallback static ID that Redis leases hand out", func(c *client.Config) {
			c.FallbackConfig.Machine.Providers = []string{"redis", "static"}
		}, "EmbeddedLeaseRange"},
		{"no fallback machine chosen", func(c *client.Config) { c.FallbackConfig.Machine.Static = nil }, "FallbackConfig.Machine"},
		{"no fallback machine needed without the fallback", func(c *client.Config) {
			c.NoFallback, c.FallbackConfig.Machine.Static = true, nil
		}, ""},
		{"fallback machine in server range", func(c *client.Config) { c.FallbackConfig.Machine.Static = new(core.MachineID(1000)) }, "FallbackConfig"},
		{"fallback bad version", func(c *client.Config) { c.FallbackConfig.Version = 2 }, "FallbackConfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			cfg.Servers = append([]string(nil), ok.Servers...)
			tt.edit(&cfg)
			err := cfg.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errtest.Wraps(err, client.ErrConfig, tt.field) {
				t.Fatalf("Validate = %v; want ErrConfig naming %s", err, tt.field)
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	c := client.DefaultConfig("a:1")
	if c.Timeout != 200*time.Millisecond || c.Retries != 2 || c.NoFallback || c.Prefetch != 0 ||
		c.FallbackConfig.DataDir == "" || c.FallbackConfig.Machine.Static != nil {
		t.Fatalf("DefaultConfig = %+v", c)
	}
	err := c.Validate()
	if !errors.Is(err, client.ErrConfig) || !errtest.Wraps(err, machineid.ErrNoMachineID, "FallbackConfig.Machine", "set NoFallback") {
		t.Fatalf("DefaultConfig().Validate() = %v; want ErrConfig wrapping machineid.ErrNoMachineID, naming FallbackConfig.Machine and NoFallback", err)
	}
}
