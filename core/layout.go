package core

import (
	"fmt"
	"strings"
	"time"
)

// Layout says where each field sits in the 64 bits. Bit 62 is the type and
// bit 63 the version in both layouts, so an ID tells which widths decode it.
type Layout uint8

const (
	// Sorted (the default): version 63, type 62, time below it, then method,
	// machine and seq lowest. IDs sort by time across every machine and
	// mode, and id % N spreads over N shards.
	Sorted Layout = 0
	// Vesta: bit-compatible with Vesta's Java converter: machine lowest
	// (bits 0-9), then seq, time, method (60-61), type, version.
	Vesta Layout = 1
)

func (l Layout) String() string {
	switch l {
	case Sorted:
		return "sorted"
	case Vesta:
		return "vesta"
	}
	return fmt.Sprintf("layout(%d)", uint8(l))
}

// ParseLayout accepts "sorted" or "vesta".
func ParseLayout(s string) (Layout, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "sorted":
		return Sorted, nil
	case "vesta":
		return Vesta, nil
	}
	return 0, fmt.Errorf("%w: layout %q; want sorted or vesta", ErrUnknownName, clip(s))
}

// Epochs of the two layouts.
var (
	// SortedEpoch is 2025-01-01T00:00:00Z.
	SortedEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// VestaEpoch is Vesta's 1420041600000 ms: 2015-01-01 00:00 UTC+8.
	VestaEpoch = time.UnixMilli(1420041600000).UTC()
)

// DefaultEpoch is the layout's own epoch.
func (l Layout) DefaultEpoch() time.Time {
	if l == Vesta {
		return VestaEpoch
	}
	return SortedEpoch
}

// widths are the field widths of a type.
type widths struct{ timeBits, seqBits uint }

func widthsOf(t Type) widths {
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
	w := widthsOf(t)
	if l == Vesta {
		// machine 0-9, seq from 10, time above seq, method 60-61.
		return shifts{machine: 0, seq: 10, time: 10 + w.seqBits, method: 60}
	}
	// seq lowest, machine, method (2 bits), time up to bit 61.
	return shifts{seq: 0, machine: w.seqBits, method: w.seqBits + 10, time: w.seqBits + 12}
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
func NewCodec(layout Layout, epoch time.Time) (Codec, error) {
	if layout != Sorted && layout != Vesta {
		return Codec{}, fmt.Errorf("%w: layout %d; want sorted or vesta", ErrUnknownName, layout)
	}
	if epoch.IsZero() {
		epoch = layout.DefaultEpoch()
	}
	if epoch.Before(minEpoch) || !epoch.Before(maxEpoch) {
		return Codec{}, fmt.Errorf("%w: epoch %s outside 1970-01-01T00:00:00Z to 2200-01-01T00:00:00Z",
			ErrInvalidConfig, epoch.UTC().Format(time.RFC3339Nano))
	}
	if epoch.Truncate(time.Millisecond) != epoch {
		return Codec{}, fmt.Errorf("%w: epoch %s is not a whole millisecond", ErrInvalidConfig, epoch.UTC().Format(time.RFC3339Nano))
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
func (c Codec) Make(f Fields) (ID, error) {
	if err := f.Check(); err != nil {
		return 0, err
	}
	s := shiftsOf(c.layout, Type(f.Type))
	return ID(f.Version<<versionShift | f.Type<<typeShift | f.Method<<s.method |
		f.Machine<<s.machine | f.Time<<s.time | f.Seq<<s.seq), nil
}

// Explain takes an ID apart ("expId"). Every 64-bit value decodes.
func (c Codec) Explain(id ID) Explanation {
	v := uint64(id)
	t := Type(v >> typeShift & 1)
	w, s := widthsOf(t), shiftsOf(c.layout, t)
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

// TransTime turns a raw time field of type t into its instant.
func (c Codec) TransTime(t Type, units uint64) (time.Time, error) {
	if err := checkRange("type", uint64(t), 1); err != nil {
		return time.Time{}, err
	}
	if err := checkRange("time", units, widthsOf(t).maxTime()); err != nil {
		return time.Time{}, err
	}
	return c.instant(t, units), nil
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
	ms := instant.UnixMilli() - c.epochMillis()
	if ms < 0 {
		return 0, fmt.Errorf("%w: %s is before the epoch %s", ErrBeforeEpoch,
			instant.UTC().Format(time.RFC3339Nano), c.Epoch().Format(time.RFC3339))
	}
	u := uint64(ms)
	if t == MaxPeak {
		u /= 1000
	}
	if max := widthsOf(t).maxTime(); u > max {
		return 0, fmt.Errorf("%w: %s is past the last unit %d (%s)", ErrEndOfTime,
			instant.UTC().Format(time.RFC3339Nano), max, FormatInstant(t, c.instant(t, max)))
	}
	return u, nil
}
