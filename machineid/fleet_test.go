package machineid_test

import (
	"context"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/machineid"
)

// TestRedisFleetRecord: the first host leasing under a key prefix records
// the fleet's shape; a host that differs in any part of it is refused,
// naming the setting and both values; a host like the first is not, nor
// one that differs only in its timing (the quarantine counts
// MaxRedisReach, not the fleet's timing), but a borrow that takes a host
// past MaxRedisReach is; once every host stopped and the record was
// deleted, new settings are recorded.
func TestRedisFleetRecord(t *testing.T) {
	srv, base := startRedis(t, 2*time.Second)
	gc := core.Config{MaxBorrow: time.Second}
	first := mustAcquire(t, base, core.Central)
	firstGen := generator(t, first, gc)

	for _, tc := range []struct {
		name string
		mc   func(*machineid.Config)
		gc   func(*core.Config)
		want string
	}{
		{"layout", nil, func(c *core.Config) { c.Layout = core.Vesta }, "id.layout vesta (the fleet's: sorted)"},
		// A leaf issuer never joins a sorted fleet: its IDs can equal theirs.
		{"leaf", nil, func(c *core.Config) { c.Layout, c.Type = core.Leaf, core.MinGranularity }, "id.layout leaf (the fleet's: sorted)"},
		{"type", nil, func(c *core.Config) { c.Type = core.MinGranularity }, "id.type min-granularity (the fleet's: max-peak)"},
		{"epoch", nil, func(c *core.Config) { c.Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }, "id.epoch 2026-01-01T00:00:00Z (the fleet's: 2025-01-01T00:00:00Z)"},
		{"version", nil, func(c *core.Config) { c.Version = 1 }, "id.version 1 (the fleet's: 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc, g := base, gc
			if tc.mc != nil {
				tc.mc(&mc)
			}
			if tc.gc != nil {
				tc.gc(&g)
			}
			l := mustAcquire(t, mc, core.Central)
			_, err := l.NewGenerator(context.Background(), g, "")
			if !errtest.Wraps(err, machineid.ErrFleet, tc.want, "vesta:fleet") {
				t.Fatalf("NewGenerator: %v; want ErrFleet naming %q and the record's key", err, tc.want)
			}
		})
	}
	same := mustAcquire(t, base, core.Central)
	sameGen := generator(t, same, gc)
	// Other timing, within the bound: accepted.
	other := base
	other.Redis.LeaseTTL, other.Redis.MaxClockSkew = 600*time.Millisecond, 100*time.Millisecond
	timed := mustAcquire(t, other, core.Central)
	timedGen := generator(t, timed, core.Config{})
	// A borrow past the bound: refused before anything else, naming it.
	far := mustAcquire(t, base, core.Central)
	if _, err := far.NewGenerator(context.Background(), core.Config{MaxBorrow: testReach}, ""); !errtest.Wraps(err, machineid.ErrConfig, "MaxBorrow") {
		t.Fatalf("NewGenerator with MaxBorrow %s: %v; want ErrConfig naming MaxBorrow", testReach, err)
	}
	far.Close(context.Background())
	timedGen.Close()
	timed.Close(context.Background())

	// A new fleet setting, once nobody leases and the record is gone.
	// (Each generator closes before its lease, so that its exact end is
	// what the release records.)
	for _, gen := range []*core.Generator{sameGen, firstGen} {
		gen.Close()
	}
	for _, l := range []*machineid.Lease{same, first} {
		l.Close(context.Background())
	}
	dropFleetRecord(t, srv)
	newType := gc
	newType.Type = core.MinGranularity
	generator(t, mustAcquire(t, base, core.Central), newType)
}
