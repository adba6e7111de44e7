// Package gentest starts core generators for tests: each is closed when
// its test ends, and a generator that cannot start fails the test.
package gentest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
)

// New starts a generator with cfg, closed at cleanup.
func New(tb testing.TB, cfg core.Config) *core.Generator {
	tb.Helper()
	gen, err := core.New(context.Background(), cfg)
	return testkit.Closed(tb, "core.New", gen, err)
}

// Manual starts a generator on a manual clock, closed at cleanup, and
// returns both: cfg.Clock when it is a *core.ManualClock already, else a
// new one reading start.
func Manual(tb testing.TB, cfg core.Config, start time.Time) (*core.Generator, *core.ManualClock) {
	tb.Helper()
	clock, ok := cfg.Clock.(*core.ManualClock)
	if !ok {
		clock = core.NewManualClock(start)
		cfg.Clock = clock
	}
	return New(tb, cfg), clock
}

// Unique fails the test on an ID that occurs twice in ids.
func Unique(tb testing.TB, ids []core.ID) {
	tb.Helper()
	s := slices.Clone(ids)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			tb.Fatalf("duplicate ID %d among %d", s[i], len(s))
		}
	}
}

// Increasing fails the test on an ID of ids not above the one before it.
func Increasing(tb testing.TB, ids []core.ID) {
	tb.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			tb.Fatalf("ID %d at %d is not above %d", ids[i], i, ids[i-1])
		}
	}
}
