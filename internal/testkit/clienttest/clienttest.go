// Package clienttest opens Go clients (package client) of servers a test
// or benchmark started: each is closed when its test ends, and one that
// cannot open, or closes with an error, fails the test.
package clienttest

import (
	"context"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/internal/testkit"
)

// Direct is client.DefaultConfig for addrs without the embedded fallback,
// so that every ID comes from the servers, and with a timeout of 5s,
// which calls on two shared cores under the race detector need.
func Direct(addrs ...string) client.Config {
	cfg := client.DefaultConfig(addrs...)
	cfg.NoFallback = true
	cfg.Timeout = 5 * time.Second
	return cfg
}

// Open is client.New of cfg, closed when tb ends.
func Open(tb testing.TB, cfg client.Config) *client.Client {
	tb.Helper()
	c, err := client.New(context.Background(), cfg)
	return testkit.Closed(tb, "client.New", c, err)
}
