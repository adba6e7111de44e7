package core_test

import (
	"errors"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
)

// The default ranges of package machineid.
var (
	embeddedRange = core.MachineRange{First: 0, Count: 924}
	serverRange   = core.MachineRange{First: 924, Count: 100}
)

func TestParseMachineRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want core.MachineRange
		ok   bool
	}{
		{"0-923", embeddedRange, true},
		{" 924 - 1023 ", serverRange, true},
		{"7", core.MachineRange{First: 7, Count: 1}, true},
		{"923-0", core.MachineRange{}, false},   // reversed
		{"0-1024", core.MachineRange{}, false},  // outside 0-1023
		{"1024", core.MachineRange{}, false},    // outside 0-1023
		{"-1-3", core.MachineRange{}, false},    // negative
		{"a-b", core.MachineRange{}, false},     // not numbers
		{"", core.MachineRange{}, false},        // empty
		{"1-2-3", core.MachineRange{}, false},   // three parts
		{"0x10-20", core.MachineRange{}, false}, // hex
	} {
		got, err := core.ParseMachineRange(tc.in)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseMachineRange(%q) = %v, %v; want %v, ok=%t", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, core.ErrMachineRange) {
			t.Errorf("ParseMachineRange(%q) error %v does not wrap ErrMachineRange", tc.in, err)
		}
	}
	if _, err := core.NewMachineRange(5, 4); !errors.Is(err, core.ErrMachineRange) {
		t.Errorf("NewMachineRange(5, 4) = %v; want ErrMachineRange", err)
	}
}

func TestMachineRangeCheck(t *testing.T) {
	r := serverRange
	if err := r.Check(924, "server"); err != nil {
		t.Fatal(err)
	}
	err := r.Check(5, "server")
	if !errtest.Wraps(err, core.ErrMachineRange, "5", "924-1023") {
		t.Fatalf("Check(5) = %v; want ErrMachineRange naming 5 and 924-1023", err)
	}
}

// A MachineRange's text is first-last, and "" for the zero MachineRange (unset).
func TestMachineRangeText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want core.MachineRange
		text string
	}{
		{"0-923", embeddedRange, "0-923"},
		{" 924 - 1023 ", serverRange, "924-1023"},
		{"5", core.MachineRange{First: 5, Count: 1}, "5-5"},
		{"", core.MachineRange{}, ""},
	} {
		var r core.MachineRange
		if err := r.UnmarshalText([]byte(tc.in)); err != nil || r != tc.want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", tc.in, r, err, tc.want)
		}
		if b, err := r.MarshalText(); err != nil || string(b) != tc.text {
			t.Errorf("%v.MarshalText() = %q, %v; want %q", r, b, err, tc.text)
		}
	}
	for _, bad := range []string{"5-x", "1000-2000", "9-3", "[1 2]"} {
		r := serverRange
		if err := r.UnmarshalText([]byte(bad)); !errors.Is(err, core.ErrMachineRange) || r != serverRange {
			t.Errorf("UnmarshalText(%q) = %v (range %v); want ErrMachineRange, range unchanged", bad, err, r)
		}
	}
}

// FuzzParseMachineRange: any text either parses to a range inside 0-1023 whose
// String parses back to itself, or fails with ErrMachineRange.
func FuzzParseMachineRange(f *testing.F) {
	for _, s := range []string{"0-923", "924-1023", "7", "923-0", "0-1024", " 1 - 2 ", "-", "1-", "-1", "+5", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := core.ParseMachineRange(s)
		if err != nil {
			if !errors.Is(err, core.ErrMachineRange) {
				t.Fatalf("ParseMachineRange(%q): %v does not wrap ErrMachineRange", s, err)
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
