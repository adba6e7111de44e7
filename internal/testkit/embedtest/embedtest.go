package embedtest

import (
	"context"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit"
)

// Open opens cfg's issuer, failing the test if it cannot, and closes it
// when the test ends.
func Open(tb testing.TB, cfg embed.Config) *embed.Issuer {
	tb.Helper()
	is, err := embed.Open(context.Background(), cfg)
	return testkit.Closed(tb, "embed.Open", is, err)
}

// Static is Open of the default configuration on static machine ID
// machine, its data (the time guard) in a temporary directory.
func Static(tb testing.TB, machine core.MachineID) *embed.Issuer {
	tb.Helper()
	cfg := embed.DefaultConfig()
	cfg.DataDir, cfg.Machine.Static = tb.TempDir(), &machine
	return Open(tb, cfg)
}
