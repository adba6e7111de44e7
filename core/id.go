package core

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// ID is a 64-bit identifier. Version 1 IDs set bit 63, so an ID is unsigned
// everywhere and its text form is always the unsigned decimal.
type ID uint64

// String returns the unsigned decimal form.
func (id ID) String() string { return strconv.FormatUint(uint64(id), 10) }

// ParseID parses an unsigned decimal ID. Signs, spaces, hex and values above
// 18446744073709551615 are refused.
func ParseID(s string) (ID, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: id is empty; want an unsigned decimal 0-18446744073709551615", ErrInvalidID)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: id %q is not an unsigned decimal 0-18446744073709551615", ErrInvalidID, clip(s))
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: id %q does not fit in 64 bits (max 18446744073709551615)", ErrInvalidID, clip(s))
	}
	return ID(v), nil
}

// clip keeps hostile input from flooding error messages and logs.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// MachineID identifies one issuer among at most 1024.
type MachineID uint16

// MaxMachine is the largest machine ID (10 bits).
const MaxMachine MachineID = 1023

func (m MachineID) String() string { return strconv.FormatUint(uint64(m), 10) }

// Type selects the time unit and the widths of the time and seq fields.
type Type uint8

const (
	// MaxPeak counts seconds in 30 bits with a 20-bit sequence:
	// 1,048,576 IDs per second per machine.
	MaxPeak Type = 0
	// MinGranularity counts milliseconds in 40 bits with a 10-bit sequence:
	// 1,024 IDs per millisecond per machine.
	MinGranularity Type = 1
)

var typeNames = names[Type]{kind: "type", of: []string{"max-peak", "min-granularity"}, numbers: true,
	want: "max-peak, min-granularity, 0 or 1"}

func (t Type) String() string { return typeNames.name(t) }

// Unit is the length of one time unit.
func (t Type) Unit() time.Duration {
	if t == MinGranularity {
		return time.Millisecond
	}
	return time.Second
}

// ParseType accepts "max-peak", "min-granularity", "0" or "1".
func ParseType(s string) (Type, error) { return typeNames.parse(s) }

// Method records how an ID was published.
type Method uint8

const (
	Embedded Method = 0 // in-process (package embed, and the client's fallback)
	Central  Method = 1 // the MessagePack-RPC server
	REST     Method = 2 // the HTTP server
	Reserved Method = 3 // never issued; Make accepts it
	// MethodUnknown is the Method of an explained leaf ID, whose bits do
	// not record one. Never issued, and no name parses to it.
	MethodUnknown Method = 255
)

var methodNames = names[Method]{kind: "method", of: []string{"embedded", "central", "rest", "reserved"}, numbers: true,
	aliases: map[string]Method{"embed": Embedded}, want: "embedded, central, rest, reserved or 0-3"}

func (m Method) String() string {
	if m == MethodUnknown {
		return "unknown" // a name printed, never parsed
	}
	return methodNames.name(m)
}

// ParseMethod accepts a method name or its number 0-3.
func ParseMethod(s string) (Method, error) { return methodNames.parse(s) }

// Fields are the parts of an ID as plain numbers, so that a value too wide
// for its field can be reported instead of silently truncated.
type Fields struct {
	Version uint64 // 0-1
	Type    uint64 // 0 (max-peak) or 1 (min-granularity)
	Method  uint64 // 0-3
	Machine uint64 // 0-1023
	Time    uint64 // units since the epoch: 30 bits (type 0) or 40 bits (type 1)
	Seq     uint64 // 20 bits (type 0) or 10 bits (type 1)
}

// Check reports the first field that does not fit the Sorted and Vesta
// layouts, as a *RangeError (Codec.Make checks Leaf's own widths).
func (f Fields) Check() error {
	if err := checkRange("version", f.Version, 1); err != nil {
		return err
	}
	if err := checkRange("type", f.Type, 1); err != nil {
		return err
	}
	if err := checkRange("method", f.Method, 3); err != nil {
		return err
	}
	if err := checkRange("machine", f.Machine, uint64(MaxMachine)); err != nil {
		return err
	}
	w := widthsOf(Sorted, Type(f.Type))
	if err := checkRange("time", f.Time, w.maxTime()); err != nil {
		return err
	}
	return checkRange("seq", f.Seq, w.maxSeq())
}

// Partial names the fields of an ID to make; a nil field takes the issuer's
// own value (its version, type, method and machine). Time and Seq are
// always required.
type Partial struct {
	Time    uint64
	Seq     uint64
	Machine *uint64
	Method  *uint64
	Type    *uint64
	Version *uint64
}

// Fill returns the full fields, taking nil ones from own.
func (p Partial) Fill(own Fields) Fields {
	f := own
	f.Time, f.Seq = p.Time, p.Seq
	if p.Machine != nil {
		f.Machine = *p.Machine
	}
	if p.Method != nil {
		f.Method = *p.Method
	}
	if p.Type != nil {
		f.Type = *p.Type
	}
	if p.Version != nil {
		f.Version = *p.Version
	}
	return f
}

// Explanation is an ID taken apart (Vesta's "expId").
type Explanation struct {
	ID      ID
	Version uint8
	Type    Type
	Method  Method
	Machine MachineID
	Time    uint64
	Seq     uint64
	Instant time.Time // epoch + Time units, UTC
}

// Fields returns the explanation's fields.
func (e Explanation) Fields() Fields {
	return Fields{
		Version: uint64(e.Version), Type: uint64(e.Type), Method: uint64(e.Method),
		Machine: uint64(e.Machine), Time: e.Time, Seq: e.Seq,
	}
}

// Timestamp formats the instant as RFC 3339 in UTC; min-granularity IDs
// carry milliseconds, max-peak IDs whole seconds.
func (e Explanation) Timestamp() string { return FormatInstant(e.Type, e.Instant) }

// FormatInstant formats an instant of a time field of type t as RFC 3339 UTC.
func FormatInstant(t Type, instant time.Time) string {
	if t == MinGranularity {
		return instant.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return instant.UTC().Format(time.RFC3339)
}

// explanationJSON is the JSON form every text interface uses (CLI --json,
// REST). The ID is a string: JSON readers often parse numbers as doubles,
// which lose IDs above 2^53.
type explanationJSON struct {
	ID         string `json:"id"`
	Version    uint8  `json:"version"`
	Type       uint8  `json:"type"`
	TypeName   string `json:"type_name"`
	Method     *uint8 `json:"method,omitempty"` // nil: MethodUnknown
	MethodName string `json:"method_name"`
	Time       uint64 `json:"time"`
	Seq        uint64 `json:"seq"`
	Machine    uint16 `json:"machine"`
	Timestamp  string `json:"timestamp"`
}

// MarshalJSON writes the fields with the names of the protocols' ExpID
// (docs/api.md): id (string),
// version, type, type_name, method, method_name, time, seq, machine,
// timestamp. A leaf ID has no method: its method is left out and its
// method_name is "unknown", rather than a number it never carried.
func (e Explanation) MarshalJSON() ([]byte, error) {
	var method *uint8
	if e.Method != MethodUnknown {
		method = new(uint8(e.Method))
	}
	return json.Marshal(explanationJSON{
		ID: e.ID.String(), Version: e.Version, Type: uint8(e.Type), TypeName: e.Type.String(),
		Method: method, MethodName: e.Method.String(), Time: e.Time, Seq: e.Seq,
		Machine: uint16(e.Machine), Timestamp: e.Timestamp(),
	})
}
