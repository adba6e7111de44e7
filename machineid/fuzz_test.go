package machineid_test

import (
	"context"
	"errors"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// FuzzK8sHostname: any hostname gives an ID inside the range, or an error
// that says why; never a panic.
func FuzzK8sHostname(f *testing.F) {
	for _, s := range []string{"vesta-0", "vesta-99", "vesta-100", "a-b-c-7.svc", "-", "vesta-", "x-00000000000000000000001", "vesta-1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		c := machineid.DefaultConfig()
		c.Providers, c.Hostname, c.K8sOffset = []string{machineid.ProviderK8s}, host, 924
		l, err := machineid.Acquire(context.Background(), c, core.Central)
		if err != nil {
			if !errors.Is(err, machineid.ErrUnavailable) && !errors.Is(err, machineid.ErrRange) {
				t.Fatalf("hostname %q: unexpected error %v", host, err)
			}
			return
		}
		defer l.Close(context.Background())
		if !machineid.DefaultServerRange.Contains(l.ID()) {
			t.Fatalf("hostname %q gave %d", host, l.ID())
		}
	})
}
