// Package assembletest starts servers assembled as `vesta serve`
// assembles them (package assemble) for the tests of assemble and of the
// repository's tools: each stops when its test ends, and one that cannot
// start, or stops with an error, fails the test. Only tests import it.
package assembletest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/cmd/vesta/assemble"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/segment"
)

// Config is conf's defaults with the time guard in a temporary directory
// of tb and every listener on 127.0.0.1:0. It sets no machine ID.
func Config(tb testing.TB) conf.Config {
	tb.Helper()
	cfg := conf.DefaultConfig()
	cfg.TimeGuard.DataDir = tb.TempDir()
	cfg.Central.Listen, cfg.REST.Listen, cfg.Metrics.Listen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

// Start is assemble.Assemble of cfg, logging nowhere and registering its
// metrics in a registry of its own, stopped when tb ends.
func Start(tb testing.TB, cfg conf.Config) *assemble.Assembled {
	tb.Helper()
	a, err := assemble.Assemble(context.Background(), cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		tb.Fatalf("assemble: %v", err)
	}
	tb.Cleanup(func() {
		if err := a.Stop(context.Background()); err != nil {
			tb.Errorf("stop: %v", err)
		}
	})
	return a
}

// Fleet starts n servers (Config, Start) that lease their machine IDs
// from rds under the key prefix prefix, rds looking to them like a Redis in
// service (Established), so that no claim waits out a new Redis's
// quarantine. edit, unless nil, changes each one's configuration first.
func Fleet(tb testing.TB, rds *redistest.Server, n int, prefix string, edit func(*conf.Config)) []*assemble.Assembled {
	tb.Helper()
	rds.Established(prefix)
	var fleet []*assemble.Assembled
	for range n {
		cfg := Config(tb)
		cfg.Machine.Providers = []string{"redis"}
		cfg.Machine.Redis.Addrs, cfg.Machine.Redis.KeyPrefix = []string{rds.Addr()}, prefix
		if edit != nil {
			edit(&cfg)
		}
		fleet = append(fleet, Start(tb, cfg))
	}
	return fleet
}

// CreateTag creates the tag of info in the segment store s names, as
// `vesta seq create` does, before a server of s starts.
func CreateTag(tb testing.TB, s conf.SegmentConfig, info segment.TagInfo) {
	tb.Helper()
	store, err := assemble.OpenSegmentStore(s)
	if err != nil {
		tb.Fatal(err)
	}
	defer store.Close()
	if err := store.Create(context.Background(), info); err != nil {
		tb.Fatal(err)
	}
}
