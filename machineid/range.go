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

// MarshalText is "first-last", or "" for the zero Range (as configuration
// files write "unset").
func (r Range) MarshalText() ([]byte, error) {
	if r.IsZero() {
		return nil, nil
	}
	return []byte(r.String()), nil
}

// UnmarshalText parses "first-last" or a single ID as ParseRange does; ""
// is the zero Range.
func (r *Range) UnmarshalText(b []byte) error {
	if strings.TrimSpace(string(b)) == "" {
		*r = Range{}
		return nil
	}
	v, err := ParseRange(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Check returns an error naming id and the range, called name ("server",
// "embedded"), when id lies outside r.
func (r Range) Check(id core.MachineID, name string) error {
	if !r.Contains(id) {
		return fmt.Errorf("%w: machine ID %d is outside the %s range %s", ErrRange, id, name, r)
	}
	return nil
}

// Covers reports whether every ID of o lies in r; the empty o is covered.
func (r Range) Covers(o Range) bool {
	if o.Count == 0 {
		return true
	}
	return r.Count > 0 && o.First >= r.First && int(o.First)+int(o.Count) <= int(r.First)+int(r.Count)
}

// EffectiveLeaseRange is the rule for the IDs of a range (whole) that Redis
// leases hand out: explicit when set; else the whole range when the redis
// provider is used (leasing); else none (the zero Range).
func EffectiveLeaseRange(explicit, whole Range, leasing bool) Range {
	switch {
	case !explicit.IsZero():
		return explicit
	case leasing:
		return whole
	}
	return Range{}
}

// InLease returns "" when the fixed ID id (a static, IP-table or k8s ID)
// lies outside lease, the effective lease range of its range; else a
// message saying why that is refused and how to fix it, naming the lease
// range's setting (leaseName), whether it was set (explicit) or defaulted
// to the whole range (wholeName). conf passes YAML keys, Config its fields.
func InLease(id core.MachineID, lease Range, explicit bool, leaseName, wholeName string) string {
	if !lease.Contains(id) {
		return ""
	}
	how := fmt.Sprintf("%s %s", leaseName, lease)
	if !explicit {
		how += fmt.Sprintf(", all of %s by default with the redis provider", wholeName)
	}
	fix := "take the fixed ID from outside it"
	switch {
	case id > lease.First:
		fix = fmt.Sprintf("narrow %s (e.g. %s) and take fixed IDs from the rest", leaseName, Range{First: lease.First, Count: uint16(id - lease.First)})
	case id < lease.Last():
		fix = fmt.Sprintf("narrow %s (e.g. %s) and take fixed IDs from the rest", leaseName, Range{First: id + 1, Count: uint16(lease.Last() - id)})
	}
	return fmt.Sprintf("%d lies in the IDs leases hand out (%s), so a leasing host could take it while this one holds it; %s", id, how, fix)
}
