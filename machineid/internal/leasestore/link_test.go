package leasestore_test

import (
	"errors"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/machineid"
)

// TestUnlinkedProvider: this test binary links neither provider package,
// as a program that imports machineid alone. A Config that lists one is
// refused by Validate (and so by Acquire), naming the import to add.
func TestUnlinkedProvider(t *testing.T) {
	for _, tc := range []struct {
		provider, pkg string
	}{
		{machineid.ProviderRedis, "github.com/vesta-go/vesta/machineid/redislease"},
		{machineid.ProviderEtcd, "github.com/vesta-go/vesta/machineid/etcdlease"},
	} {
		cfg := machineid.DefaultConfig()
		cfg.Providers = []string{tc.provider}
		err := cfg.Validate()
		if !errtest.Wraps(err, machineid.ErrConfig, `import _ "`+tc.pkg+`"`, "Providers") {
			t.Errorf("%s: Validate() = %v; want ErrConfig naming Providers and the import of %s", tc.provider, err, tc.pkg)
		}
		if _, err := machineid.Acquire(t.Context(), cfg, core.Central); !errors.Is(err, machineid.ErrConfig) {
			t.Errorf("%s: Acquire: %v; want ErrConfig", tc.provider, err)
		}
	}
	// The fixed providers need no import.
	cfg := machineid.DefaultConfig()
	cfg.Static = new(core.MachineID(1000))
	if err := cfg.ValidateFor(core.Central); err != nil {
		t.Errorf("static: %v", err)
	}
}
