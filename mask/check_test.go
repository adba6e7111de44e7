package mask_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/mask"
)

func TestCheckValidate(t *testing.T) {
	leaf, err := core.NewCodec(core.Leaf, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		check mask.Check
		field string // "" valid
	}{
		{"zero", mask.Check{}, ""},
		{"off", mask.Check{Off: true, Version: 9}, ""},
		{"server", serverCheck(), ""},
		{"leaf min-granularity", mask.Check{Codec: leaf, Type: core.MinGranularity}, ""},
		{"leaf max-peak", mask.Check{Codec: leaf}, "Type"},
		{"type 2", mask.Check{Type: 2}, "Type"},
		{"version 2", mask.Check{Version: 2}, "Version"},
		{"leaf version 1", mask.Check{Codec: leaf, Type: core.MinGranularity, Version: 1}, "Version"},
		{"embedded past 1023", mask.Check{Embedded: core.MachineRange{First: 1000, Count: 30}}, "Embedded"},
		{"server past 1023", mask.Check{Server: core.MachineRange{First: 1023, Count: 2}}, "Server"},
		{"negative borrow", mask.Check{MaxBorrow: -time.Second}, "MaxBorrow"},
		{"borrow of two days", mask.Check{MaxBorrow: 48 * time.Hour}, "MaxBorrow"},
		{"skew of two days", mask.Check{Skew: 48 * time.Hour}, "Skew"},
		{"not_before past the end", mask.Check{NotBefore: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}, "NotBefore"},
	} {
		err := c.check.Validate()
		if c.field == "" && err != nil || c.field != "" && (!errtest.Wraps(err, mask.ErrCheck, c.field+":")) {
			t.Errorf("%s: %v; want an error naming %q", c.name, err, c.field)
		}
	}
}

// Maskers keep one Masker per tenant and kind, the kind without regard to
// case, safely under concurrent use, and a bounded number of them.
func TestMaskers(t *testing.T) {
	keys := mustKeys(t, keyLine(0, 1))
	ms, err := mask.NewMaskers(keys, serverCheck())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ms.Masker("acme", "ord")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ms.Masker("acme", "ORD")
	if a != b || a.Kind() != "ord" || a.Tenant() != "acme" {
		t.Errorf("Masker(acme, ORD) is another Masker than (acme, ord), or named %q %q", a.Tenant(), a.Kind())
	}
	direct := mustMasker(t, keys, "acme", "ord", serverCheck())
	id := issued(t, 3)
	if a.Mask(id) != direct.Mask(id) {
		t.Error("Maskers' Masker masks otherwise than New's")
	}
	if _, err := ms.Masker("acme", "o-rd"); !errors.Is(err, mask.ErrName) {
		t.Errorf("bad kind: %v", err)
	}
	if ms.Rejection() != a.Rejection() || ms.Keys() != keys {
		t.Errorf("Rejection %v against %v", ms.Rejection(), a.Rejection())
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 3000 {
				m, err := ms.Masker(string(rune('a'+g)), "k"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)))
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := m.Unmask(m.Mask(id)); err != nil || got != id {
					t.Errorf("round trip: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, err := mask.NewMaskers(nil, mask.Check{}); !errors.Is(err, mask.ErrNoKeys) {
		t.Errorf("no keys: %v", err)
	}
	if _, err := mask.NewMaskers(keys, mask.Check{Version: 2}); !errors.Is(err, mask.ErrCheck) {
		t.Errorf("bad check: %v", err)
	}
}

// Mask and Unmask allocate nothing (Mask's string aside).
func TestMaskAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	m := mustMasker(t, mustKeys(t, keyLine(0, 1)), "acme", "ord", serverCheck())
	id := issued(t, 9)
	text := m.Mask(id)
	buf := make([]byte, 0, 32)
	if n := testing.AllocsPerRun(100, func() { buf = m.AppendMask(buf[:0], id) }); n != 0 {
		t.Errorf("AppendMask allocates %.0f times", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := m.Unmask(text); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Unmask allocates %.0f times", n)
	}
	if n := testing.AllocsPerRun(100, func() { sink = m.Mask(id) }); n > 1 {
		t.Errorf("Mask allocates %.0f times; want its string only", n)
	}
}

var sink string

func TestCheckOf(t *testing.T) {
	clock := core.NewManualClock(now)
	c, err := mask.CheckOf(core.Config{Layout: core.Vesta, Type: core.MinGranularity, Version: 1, MaxBorrow: 2 * time.Second, Clock: clock},
		core.MachineRange{First: 0, Count: 10}, core.MachineRange{First: 1000, Count: 24})
	if err != nil {
		t.Fatal(err)
	}
	if c.Codec.Layout() != core.Vesta || !c.Codec.Epoch().Equal(core.VestaEpoch) || c.Type != core.MinGranularity || c.Version != 1 ||
		c.MaxBorrow != 2*time.Second || c.Embedded.Count != 10 || c.Server.First != 1000 || !c.Now().Equal(now) {
		t.Errorf("CheckOf = %+v", c)
	}
	if _, err := mask.CheckOf(core.Config{Layout: core.Leaf, Epoch: now}, core.MachineRange{}, core.MachineRange{}); !errors.Is(err, mask.ErrCheck) {
		t.Errorf("leaf with another epoch: %v", err)
	}
}
