package embedtest

import (
	"context"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
)

// Open opens cfg's issuer, failing the test if it cannot, and closes it
// when the test ends.
func Open(tb testing.TB, cfg embed.Config) *embed.Issuer {
	tb.Helper()
	is, err := embed.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { is.Close() })
	return is
}

// Static is Open of the default configuration on static machine ID
// machine, its data (the time guard) in a temporary directory.
func Static(tb testing.TB, machine core.MachineID) *embed.Issuer {
	tb.Helper()
	cfg := embed.DefaultConfig()
	cfg.DataDir, cfg.Machine.Static = tb.TempDir(), &machine
	return Open(tb, cfg)
}
