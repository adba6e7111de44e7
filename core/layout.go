package core

import (
	"fmt"
	"time"
)

// Layout says where each field sits in the 64 bits. Bit 62 is the type and
// bit 63 the version in Sorted and Vesta, so an ID tells which widths decode
// it; Leaf has neither (its widths are fixed).
type Layout uint8

const (
	// Sorted (the default): version 63, type 62, time below it, then method,
	// machine and seq lowest. IDs sort by time across every machine and
	// publish method, and id % N spreads over N shards.
	Sorted Layout = 0
	// Vesta: bit-compatible with Vesta's Java converter: machine lowest
	// (bits 0-9), then seq, time, method (60-61), type, version.
	Vesta Layout = 1
	// Leaf: Leaf's (and Twitter's) snowflake bits: sign bit 0, 41 bits of
	// milliseconds since LeafEpoch, 10 bits of machine (Leaf's worker ID),
	// 12 bits of seq. No type, version or method bits, so new IDs continue
	// above every ID a Leaf snowflake server issued.
	Leaf Layout = 2
)

var layoutNames = names[Layout]{kind: "layout", of: []string{"sorted", "vesta", "leaf"}, want: "sorted, vesta or leaf"}

func (l Layout) String() string { return layoutNames.name(l) }

// ParseLayout accepts "sorted", "vesta" or "leaf".
func ParseLayout(s string) (Layout, error) { return layoutNames.parse(s) }

// Epochs of the layouts.
var (
	// SortedEpoch is 2025-01-01T00:00:00Z.
	SortedEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// VestaEpoch is Vesta's 1420041600000 ms: 2015-01-01 00:00 UTC+8.
	VestaEpoch = time.UnixMilli(1420041600000).UTC()
	// LeafEpoch is Leaf's and Twitter's twepoch, 1288834974657 ms:
	// 2010-11-04T01:42:54.657Z. It is the leaf layout's only epoch.
	LeafEpoch = time.UnixMilli(1288834974657).UTC()
)

// DefaultEpoch is the layout's own epoch.
func (l Layout) DefaultEpoch() time.Time {
	switch l {
	case Vesta:
		return VestaEpoch
	case Leaf:
		return LeafEpoch
	}
	return SortedEpoch
}

// widths are the field widths of a (layout, type).
type widths struct{ timeBits, seqBits uint }

// widthsOf gives Leaf its own widths whatever t says: Leaf IDs carry no
// type bit, and Config.Validate admits only MinGranularity (milliseconds).
func widthsOf(l Layout, t Type) widths {
	if l == Leaf {
		return widths{timeBits: 41, seqBits: 12}
	}
	if t == MinGranularity {
		return widths{timeBits: 40, seqBits: 10}
	}
	return widths{timeBits: 30, seqBits: 20}
}

func (w widths) maxTime() uint64 { return 1<<w.timeBits - 1 }
func (w widths) maxSeq() uint64  { return 1<<w.seqBits - 1 }

// shifts are the bit positions of a (layout, type): each field's lowest bit.
type shifts struct{ seq, machine, method, time uint }

const (
	typeShift    = 62
	versionShift = 63
)

func shiftsOf(l Layout, t Type) shifts {
	w := widthsOf(l, t)
	switch l {
	case Vesta:
		// machine 0-9, seq from 10, time above seq, method 60-61.
		return shifts{machine: 0, seq: 10, time: 10 + w.seqBits, method: 60}
	case Leaf:
		// seq 0-11, machine 12-21, time 22-62, the sign bit 63 (fixedBits).
		return shifts{seq: 0, machine: 12, time: 22}
	}
	// seq lowest, machine, method (2 bits), time up to bit 61.
	return shifts{seq: 0, machine: w.seqBits, method: w.seqBits + 10, time: w.seqBits + 12}
}

// fixedBits are the bits of the fields an issuer keeps constant: version,
// type, method and machine. Leaf has room for the machine only.
func fixedBits(l Layout, version, typ, method, machine uint64) uint64 {
	s := shiftsOf(l, Type(typ))
	if l == Leaf {
		return version<<versionShift | machine<<s.machine
	}
	return version<<versionShift | typ<<typeShift | method<<s.method | machine<<s.machine
}

// Codec encodes and decodes IDs of one layout and epoch. The zero Codec is
// the Sorted layout with its own epoch.
type Codec struct {
	layout   Layout
	epochMs  int64
	epochSet bool // false in the zero Codec: the layout's own epoch
}

// Epochs before 1970 or after 2200 are refused: they are typos, and keep
// instant arithmetic far from overflow.
var (
	minEpoch = time.Unix(0, 0).UTC()
	maxEpoch = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// NewCodec returns the codec of layout with epoch; the zero epoch means the
// layout's own. The epoch must be a whole millisecond between 1970 and 2200.
// Leaf takes only its own epoch: its IDs exist to continue Leaf's, which
// Leaf's servers and decoders reckon from LeafEpoch alone.
func NewCodec(layout Layout, epoch time.Time) (Codec, error) {
	if layout > Leaf {
		return Codec{}, fmt.Errorf("%w: layout %d; want sorted, vesta or leaf", ErrUnknownName, layout)
	}
	if layout == Leaf && !epoch.IsZero() && !epoch.Equal(LeafEpoch) {
		return Codec{}, fmt.Errorf("%w: epoch %s: the leaf layout counts from Leaf's own epoch %s (1288834974657 ms) only, so that its IDs continue Leaf's; leave the epoch unset",
			ErrConfig, epoch.UTC().Format(time.RFC3339Nano), LeafEpoch.Format("2006-01-02T15:04:05.000Z07:00"))
	}
	if epoch.IsZero() {
		epoch = layout.DefaultEpoch()
	}
	if epoch.Before(minEpoch) || !epoch.Before(maxEpoch) {
		return Codec{}, fmt.Errorf("%w: epoch %s outside 1970-01-01T00:00:00Z to 2200-01-01T00:00:00Z",
			ErrConfig, epoch.UTC().Format(time.RFC3339Nano))
	}
	if epoch.Truncate(time.Millisecond) != epoch {
		return Codec{}, fmt.Errorf("%w: epoch %s is not a whole millisecond", ErrConfig, epoch.UTC().Format(time.RFC3339Nano))
	}
	return Codec{layout: layout, epochMs: epoch.UnixMilli(), epochSet: true}, nil
}

// Layout returns the codec's layout.
func (c Codec) Layout() Layout { return c.layout }

// Epoch returns the codec's epoch in UTC.
func (c Codec) Epoch() time.Time { return time.UnixMilli(c.epochMillis()).UTC() }

func (c Codec) epochMillis() int64 {
	if !c.epochSet {
		return c.layout.DefaultEpoch().UnixMilli()
	}
	return c.epochMs
}

// Make builds the ID of f ("makeId"). Every field is range-checked; a value
// that does not fit is a *RangeError, never bits spilled into a neighbour.
//
// A leaf ID has no bits for the method, which Make therefore ignores; its
// type must be MinGranularity (milliseconds), and its version is the sign
// bit.
func (c Codec) Make(f Fields) (ID, error) {
	if err := c.check(f); err != nil {
		return 0, err
	}
	s := shiftsOf(c.layout, Type(f.Type))
	return ID(fixedBits(c.layout, f.Version, f.Type, f.Method, f.Machine) | f.Time<<s.time | f.Seq<<s.seq), nil
}

// check is Fields.Check for the codec's layout.
func (c Codec) check(f Fields) error {
	if c.layout != Leaf {
		return f.Check()
	}
	if err := checkRange("version", f.Version, 1); err != nil {
		return err
	}
	if f.Type != uint64(MinGranularity) {
		return fmt.Errorf("%w: type %d: the leaf layout counts milliseconds only; want 1 (min-granularity)", ErrOutOfRange, f.Type)
	}
	if err := checkRange("machine", f.Machine, uint64(MaxMachine)); err != nil {
		return err
	}
	w := widthsOf(c.layout, MinGranularity)
	if err := checkRange("time", f.Time, w.maxTime()); err != nil {
		return err
	}
	return checkRange("seq", f.Seq, w.maxSeq())
}

// Explain takes an ID apart ("expId"). Every 64-bit value decodes. A leaf
// ID says nothing of how it was published: its Method is MethodUnknown and
// its Type MinGranularity; its sign bit (bit 63, 0 in every ID Leaf or a
// leaf generator issues) decodes as the Version, so that Make rebuilds any
// value.
func (c Codec) Explain(id ID) Explanation {
	v := uint64(id)
	if c.layout == Leaf {
		w, s := widthsOf(Leaf, MinGranularity), shiftsOf(Leaf, MinGranularity)
		e := Explanation{
			ID: id, Version: uint8(v >> versionShift), Type: MinGranularity, Method: MethodUnknown,
			Machine: MachineID(v >> s.machine & uint64(MaxMachine)),
			Time:    v >> s.time & w.maxTime(),
			Seq:     v >> s.seq & w.maxSeq(),
		}
		e.Instant = c.instant(MinGranularity, e.Time)
		return e
	}
	t := Type(v >> typeShift & 1)
	w, s := widthsOf(c.layout, t), shiftsOf(c.layout, t)
	e := Explanation{
		ID:      id,
		Version: uint8(v >> versionShift),
		Type:    t,
		Method:  Method(v >> s.method & 3),
		Machine: MachineID(v >> s.machine & uint64(MaxMachine)),
		Time:    v >> s.time & w.maxTime(),
		Seq:     v >> s.seq & w.maxSeq(),
	}
	e.Instant = c.instant(t, e.Time)
	return e
}

// TransTime turns a raw time field of type t into its instant. Leaf takes
// only MinGranularity.
func (c Codec) TransTime(t Type, units uint64) (time.Time, error) {
	if err := c.checkType(t); err != nil {
		return time.Time{}, err
	}
	if err := checkRange("time", units, widthsOf(c.layout, t).maxTime()); err != nil {
		return time.Time{}, err
	}
	return c.instant(t, units), nil
}

// End returns the instant of the last unit a time field of type t can
// hold: no ID of t is issued later (ErrEndOfTime), so a deployment must
// move to a new epoch or layout before it (the capacity view counts down
// to it). Leaf takes only MinGranularity.
func (c Codec) End(t Type) (time.Time, error) {
	if err := c.checkType(t); err != nil {
		return time.Time{}, err
	}
	return c.instant(t, widthsOf(c.layout, t).maxTime()), nil
}

// PerUnit is how many IDs one unit of a time field of type t holds for one
// machine ID and method: the sequence's ceiling. Leaf has its own widths
// whatever t says.
func (c Codec) PerUnit(t Type) uint64 { return widthsOf(c.layout, t).maxSeq() + 1 }

// checkType refuses a type the codec's layout has no widths for.
func (c Codec) checkType(t Type) error {
	if c.layout == Leaf && t != MinGranularity {
		return fmt.Errorf("%w: type %d: the leaf layout counts milliseconds only; want 1 (min-granularity)", ErrOutOfRange, t)
	}
	return checkRange("type", uint64(t), 1)
}

func (c Codec) instant(t Type, units uint64) time.Time {
	ms := int64(units)
	if t == MaxPeak {
		ms *= 1000
	}
	return time.UnixMilli(c.epochMillis() + ms).UTC()
}

// Units returns the time field of instant for type t: whole units since the
// epoch, rounded down. It fails before the epoch and past the last unit.
func (c Codec) Units(t Type, instant time.Time) (uint64, error) {
	if err := c.checkType(t); err != nil {
		return 0, err
	}
	ms := instant.UnixMilli() - c.epochMillis()
	if ms < 0 {
		return 0, fmt.Errorf("%w: %s is before the epoch %s", ErrBeforeEpoch,
			instant.UTC().Format(time.RFC3339Nano), c.Epoch().Format(time.RFC3339))
	}
	u := uint64(ms)
	if t == MaxPeak {
		u /= 1000
	}
	if max := widthsOf(c.layout, t).maxTime(); u > max {
		return 0, fmt.Errorf("%w: %s is past the last unit %d (%s)", ErrEndOfTime,
			instant.UTC().Format(time.RFC3339Nano), max, FormatInstant(t, c.instant(t, max)))
	}
	return u, nil
}
