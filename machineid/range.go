package machineid

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vesta-go/vesta/core"
)

// Range is a run of machine IDs, First to First+Count-1. The zero Range is
// empty; callers treat it as "use the default".
type Range struct {
	First core.MachineID
	Count uint16
}

// The default ranges: embedded issuers (and the client's fallback) take IDs
// from 0-923, central and REST servers from 924-1023.
var (
	DefaultEmbeddedRange = Range{First: 0, Count: 924}
	DefaultServerRange   = Range{First: 924, Count: 100}
)

// NewRange returns first-last, inclusive.
func NewRange(first, last core.MachineID) (Range, error) {
	if last < first || last > core.MaxMachine {
		return Range{}, fmt.Errorf("%w: %d-%d; want first-last with first <= last <= %d", ErrRange, first, last, core.MaxMachine)
	}
	return Range{First: first, Count: uint16(last-first) + 1}, nil
}

// ParseRange parses "first-last" (or a single ID), e.g. "0-923".
func ParseRange(s string) (Range, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found {
		hi = lo
	}
	first, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	last, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
	if err1 != nil || err2 != nil || first > uint64(core.MaxMachine) || last > uint64(core.MaxMachine) {
		return Range{}, fmt.Errorf("%w: %q; want first-last within 0-%d, e.g. 0-923", ErrRange, s, core.MaxMachine)
	}
	return NewRange(core.MachineID(first), core.MachineID(last))
}

// Last is the range's last ID; meaningless for the empty range.
func (r Range) Last() core.MachineID { return r.First + core.MachineID(r.Count) - 1 }

// IsZero reports the empty range.
func (r Range) IsZero() bool { return r.Count == 0 }

// Contains reports whether id lies in the range.
func (r Range) Contains(id core.MachineID) bool {
	return r.Count > 0 && id >= r.First && uint32(id) < uint32(r.First)+uint32(r.Count)
}

// Overlaps reports whether the ranges share an ID.
func (r Range) Overlaps(o Range) bool {
	return r.Count > 0 && o.Count > 0 && r.First <= o.Last() && o.First <= r.Last()
}

// String is "first-last".
func (r Range) String() string {
	if r.Count == 0 {
		return "empty"
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last())
}

// Check returns an error naming id, the range and the mode when id lies
// outside r.
func (r Range) Check(id core.MachineID, mode string) error {
	if !r.Contains(id) {
		return fmt.Errorf("%w: machine ID %d is outside the %s range %s", ErrRange, id, mode, r)
	}
	return nil
}
