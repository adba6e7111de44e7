package core

import (
	"fmt"
	"strconv"
	"strings"
)

// MachineRange is a run of machine IDs, First to First+Count-1: the one
// range type of machine IDs (package machineid's ranges of the publish
// methods and their leases, package mask's check). The zero MachineRange
// is empty; what it stands for is the user's to say (machineid: the
// default range; mask: every machine ID).
type MachineRange struct {
	First MachineID
	Count uint16
}

// NewMachineRange returns first-last, inclusive.
func NewMachineRange(first, last MachineID) (MachineRange, error) {
	if last < first || last > MaxMachine {
		return MachineRange{}, fmt.Errorf("%w: %d-%d; want first-last with first <= last <= %d", ErrMachineRange, first, last, MaxMachine)
	}
	return MachineRange{First: first, Count: uint16(last-first) + 1}, nil
}

// ParseMachineRange parses "first-last" (or a single ID), e.g. "0-923".
func ParseMachineRange(s string) (MachineRange, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found {
		hi = lo
	}
	first, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	last, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
	if err1 != nil || err2 != nil || first > uint64(MaxMachine) || last > uint64(MaxMachine) {
		return MachineRange{}, fmt.Errorf("%w: %q; want first-last within 0-%d, e.g. 0-923", ErrMachineRange, s, MaxMachine)
	}
	return NewMachineRange(MachineID(first), MachineID(last))
}

// Last is the range's last ID; meaningless for the empty range.
func (r MachineRange) Last() MachineID { return r.First + MachineID(r.Count) - 1 }

// IsZero reports the empty range.
func (r MachineRange) IsZero() bool { return r.Count == 0 }

// Contains reports whether id lies in the range.
func (r MachineRange) Contains(id MachineID) bool {
	return r.Count > 0 && id >= r.First && uint32(id) < uint32(r.First)+uint32(r.Count)
}

// Overlaps reports whether the ranges share an ID.
func (r MachineRange) Overlaps(o MachineRange) bool {
	return r.Count > 0 && o.Count > 0 && r.First <= o.Last() && o.First <= r.Last()
}

// String is "first-last".
func (r MachineRange) String() string {
	if r.Count == 0 {
		return "empty"
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last())
}

// MarshalText is "first-last", or "" for the zero MachineRange (as configuration
// files write "unset").
func (r MachineRange) MarshalText() ([]byte, error) {
	if r.IsZero() {
		return nil, nil
	}
	return []byte(r.String()), nil
}

// UnmarshalText parses "first-last" or a single ID as ParseMachineRange does; ""
// is the zero MachineRange.
func (r *MachineRange) UnmarshalText(b []byte) error {
	if strings.TrimSpace(string(b)) == "" {
		*r = MachineRange{}
		return nil
	}
	v, err := ParseMachineRange(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Check returns an error naming id and the range, called name ("server",
// "embedded"), when id lies outside r.
func (r MachineRange) Check(id MachineID, name string) error {
	if !r.Contains(id) {
		return fmt.Errorf("%w: machine ID %d is outside the %s range %s", ErrMachineRange, id, name, r)
	}
	return nil
}

// Covers reports whether every ID of o lies in r; the empty o is covered.
func (r MachineRange) Covers(o MachineRange) bool {
	if o.Count == 0 {
		return true
	}
	return r.Count > 0 && o.First >= r.First && int(o.First)+int(o.Count) <= int(r.First)+int(r.Count)
}
