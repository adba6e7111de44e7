package api

import (
	"strconv"
	"strings"

	"github.com/vesta-go/vesta/core"
)

// The rules for parameter values, one set for both servers: RPC params
// (DecodeParams) and REST query parameters and JSON fields (package rest
// calls ParseUint and ParseField).
//
//   - An integer is unsigned. In MessagePack, any integer encoding of a
//     value >= 0. In text (a query parameter, a JSON number's text, a JSON
//     or MessagePack string): ASCII decimal digits only, leading zeros
//     allowed, at most 2^64-1; no sign, space, '+', fraction, exponent or
//     hex.
//   - method and type take a name too, ASCII case-insensitive and nothing
//     around it: embedded (or embed), central, rest, reserved; max-peak,
//     min-granularity. Digits are the number as above.
//   - nil (JSON null) is the same as leaving an optional field out (make's
//     machine, method, type and version; transtime's type); a required
//     field given nil is missing.
//   - IDs are unsigned 64-bit: a negative number is refused, including a
//     Java long that holds an ID of 2^63 or more (write it with
//     Long.toUnsignedString). Two's complement is not guessed, since a
//     negative number is far more often a caller's bug than such an ID.
//
// Errors are InvalidArgument *Errors whose message starts with the
// parameter's name.

// NamedFields are the fields that take names as well as numbers.
const (
	FieldMethod = "method"
	FieldType   = "type"
)

// ParseUint parses text s as the unsigned integer of parameter name.
func ParseUint(name, s string) (uint64, error) {
	if s == "" {
		return 0, Errorf(InvalidArgument, "%s: empty; want an unsigned decimal integer", name)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			if s[0] == '-' {
				return 0, Negative(name, clipText(s))
			}
			return 0, Errorf(InvalidArgument, "%s: %q is not an unsigned decimal integer", name, clipText(s))
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, Errorf(InvalidArgument, "%s: %q does not fit in 64 bits (max 18446744073709551615)", name, clipText(s))
	}
	return v, nil
}

// Negative is the error of a negative value v (its text) of parameter
// name, one message for every protocol.
func Negative(name, v string) error {
	if name == "id" {
		return Errorf(InvalidArgument, "%s: %q is negative; IDs are unsigned (a Java long below 0 holds ID+2^64: send Long.toUnsignedString(id))", name, v)
	}
	return Errorf(InvalidArgument, "%s: %q is negative; want an unsigned decimal integer", name, v)
}

// ParseField parses text s as the value of field (FieldMethod or
// FieldType take names; any other field is ParseUint); name is what the
// caller wrote (an alias such as genMethod), for the message.
func ParseField(field, name, s string) (uint64, error) {
	if field != FieldMethod && field != FieldType || s != "" && s[0] >= '0' && s[0] <= '9' {
		return ParseUint(name, s)
	}
	switch lower := strings.ToLower(s); field {
	case FieldMethod:
		switch lower {
		case "embedded", "embed":
			return uint64(core.Embedded), nil
		case "central":
			return uint64(core.Central), nil
		case "rest":
			return uint64(core.REST), nil
		case "reserved":
			return uint64(core.Reserved), nil
		}
		return 0, Errorf(InvalidArgument, "%s: %q; want 0-3 or embedded, central, rest, reserved", name, clipText(s))
	default:
		switch lower {
		case "max-peak":
			return uint64(core.MaxPeak), nil
		case "min-granularity":
			return uint64(core.MinGranularity), nil
		}
		return 0, Errorf(InvalidArgument, "%s: %q; want 0, 1, max-peak or min-granularity", name, clipText(s))
	}
}

// maxText is how much of a caller's text a message quotes.
const maxText = 64

// clipText keeps hostile input out of messages.
func clipText(s string) string {
	if len(s) > maxText {
		return s[:maxText] + "..."
	}
	return s
}
