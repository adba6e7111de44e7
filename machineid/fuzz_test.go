package machineid_test

import (
	"context"
	"errors"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// FuzzParseRange: any text either parses to a range inside 0-1023 whose
// String parses back to itself, or fails with ErrRange.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"0-923", "924-1023", "7", "923-0", "0-1024", " 1 - 2 ", "-", "1-", "-1", "+5", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := core.ParseMachineRange(s)
		if err != nil {
			if !errors.Is(err, machineid.ErrRange) {
				t.Fatalf("ParseMachineRange(%q): %v does not wrap ErrRange", s, err)
			}
			return
		}
		if r.IsZero() || r.Last() > core.MaxMachine || r.Last() < r.First {
			t.Fatalf("ParseMachineRange(%q) = %+v", s, r)
		}
		if back, err := core.ParseMachineRange(r.String()); err != nil || back != r {
			t.Fatalf("ParseMachineRange(%q) = %v; its String parses to %v, %v", s, r, back, err)
		}
	})
}

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
