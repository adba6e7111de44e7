package conf

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// Decoding turns the merged map (YAML values, environment strings, flag
// values) into a Config. The hook below does every conversion itself, so
// that each bad value gets a message naming what the key allows, and so
// that the weak conversions of mapstructure cannot bite: 70000 wrapping
// into a small integer, 1.5 truncated to 1, "" read as 0, a bare 5 read as
// 5ns.

var (
	layoutType   = reflect.TypeFor[core.Layout]()
	typeType     = reflect.TypeFor[core.Type]()
	rangeType    = reflect.TypeFor[machineid.Range]()
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	secretType   = reflect.TypeFor[Secret]()
)

// valueError is a hook's message: the value and what is allowed.
type valueError string

func (e valueError) Error() string { return string(e) }

func badValue(v any, format string, args ...any) error {
	return valueError(show(v) + "; " + fmt.Sprintf(format, args...))
}

func decodeHook(from, to reflect.Value) (any, error) {
	data := from.Interface()
	switch to.Type() {
	case layoutType:
		if l, ok := data.(core.Layout); ok {
			return l, nil
		}
		l, err := core.ParseLayout(scalarText(data))
		if err != nil {
			return nil, badValue(data, "want sorted or vesta")
		}
		return l, nil
	case typeType:
		if t, ok := data.(core.Type); ok {
			return t, nil
		}
		t, err := core.ParseType(scalarText(data))
		if err != nil {
			return nil, badValue(data, "want max-peak, min-granularity, 0 or 1")
		}
		return t, nil
	case rangeType:
		if r, ok := data.(machineid.Range); ok {
			return r, nil
		}
		if data == nil || scalarText(data) == "" {
			return machineid.Range{}, nil // unset; the keys that need one say so in Validate
		}
		r, err := machineid.ParseRange(scalarText(data))
		if err != nil {
			return nil, badValue(data, "want first-last within 0-%d, e.g. 0-923", core.MaxMachine)
		}
		return r, nil
	case timeType:
		return decodeTime(data)
	case durationType:
		return decodeDuration(data)
	case secretType:
		return data, nil
	}
	switch to.Kind() {
	case reflect.Int:
		return decodeInt(data)
	case reflect.Float64:
		return decodeFloat(data)
	case reflect.Bool:
		return decodeBool(data)
	case reflect.Slice:
		if s, ok := data.(string); ok {
			return splitList(s), nil
		}
	case reflect.Map:
		if s, ok := data.(string); ok {
			return parseIPTable(s)
		}
	}
	return data, nil
}

// scalarText is the text of a scalar, so that `type: 1` and `type: "1"`
// read alike; other values give text no parser accepts.
func scalarText(v any) string {
	switch v.(type) {
	case string, int, int64, uint64, float64, bool:
		return fmt.Sprint(v)
	}
	return "\x00"
}

func decodeTime(v any) (any, error) {
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return time.Time{}, nil
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, nil
		}
	}
	return nil, badValue(v, `want an RFC 3339 instant such as 2025-01-01T00:00:00Z, or "" for the layout's own epoch`)
}

const wantDuration = "want a duration such as 1s, 250ms or 1m30s"

func decodeDuration(v any) (any, error) {
	switch x := v.(type) {
	case time.Duration:
		return x, nil
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return nil, valueError(`""; ` + wantDuration)
		}
		if s == "0" {
			return time.Duration(0), nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, badValue(v, wantDuration)
		}
		return d, nil
	case int, int64, uint64, float64:
		// A bare number has no unit: 0 is unambiguous, 15 is not (mapstructure
		// would read it as 15ns).
		if fmt.Sprint(x) == "0" {
			return time.Duration(0), nil
		}
		return nil, badValue(v, "want a duration with a unit, such as %vs", x)
	}
	return nil, badValue(v, wantDuration)
}

func decodeInt(v any) (any, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case int64:
		return x, nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
	case float64:
		if x == math.Trunc(x) && x >= math.MinInt64 && x < math.MaxInt64 {
			return int64(x), nil
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return n, nil
		}
	}
	return nil, badValue(v, "want an integer")
}

func decodeFloat(v any) (any, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, nil
		}
	}
	return nil, badValue(v, "want a number such as 0.1")
}

func decodeBool(v any) (any, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return nil, badValue(v, "want true or false")
}

// splitList reads a comma-separated list, as the environment gives lists.
func splitList(s string) []string {
	out := []string{}
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseIPTable reads "10.1.2.3=924,10.1.2.4=925", as the environment gives
// machine.ip_table. The addresses and IDs are checked by Validate.
func parseIPTable(s string) (any, error) {
	out := map[string]any{}
	for _, p := range splitList(s) {
		ip, id, ok := strings.Cut(p, "=")
		ip, id = strings.TrimSpace(ip), strings.TrimSpace(id)
		if !ok || ip == "" || id == "" {
			return nil, badValue(p, "want IP=ID pairs separated by commas, e.g. 10.1.2.3=924,10.1.2.4=925")
		}
		if _, dup := out[ip]; dup {
			return nil, badValue(ip, "listed twice")
		}
		out[ip] = id
	}
	return out, nil
}

// decodeErrors turns mapstructure's errors into KeyErrors.
func (l *loader) decodeErrors(err error) {
	var found []*mapstructure.DecodeError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *mapstructure.DecodeError:
			found = append(found, e)
		case interface{ Unwrap() []error }:
			for _, e := range e.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		default:
			l.fail("", "", "%v", err)
		}
	}
	walk(err)
	// mapstructure visits map entries in random order.
	slices.SortStableFunc(found, func(a, b *mapstructure.DecodeError) int { return strings.Compare(a.Name(), b.Name()) })
	for _, de := range found {
		l.decodeError(de)
	}
}

func (l *loader) decodeError(de *mapstructure.DecodeError) {
	// Names are key paths; list items and map entries add [i] or [k].
	key, elem := de.Name(), ""
	if i := strings.IndexByte(key, '['); i >= 0 {
		key, elem = key[:i], key[i:]
	}
	lf, isLeaf := leafByKey[key]
	var msg string
	var ve valueError
	var pe *mapstructure.ParseError
	var ue *mapstructure.UnconvertibleTypeError
	switch {
	case isLeaf && lf.typ == secretType:
		msg = "(value not shown); want a string"
	case errors.As(de, &ve):
		msg = string(ve)
	case errors.As(de, &pe):
		msg = show(pe.Value) + "; want " + describe(key)
	case errors.As(de, &ue):
		msg = show(ue.Value) + "; want " + describe(key)
	default:
		msg = "want " + describe(key)
	}
	if elem != "" {
		msg = "item " + clip(elem) + ": " + msg
	}
	l.fail(key, "", "%s", msg)
}

// describe says what a key holds, for messages about values of the wrong
// kind.
func describe(key string) string {
	if key == "" {
		return "a mapping of sections (id, machine, time_guard, central, rest, client, segment, metrics, log)"
	}
	lf, ok := leafByKey[key]
	if !ok {
		return "a mapping of " + key + ".* keys"
	}
	switch lf.typ.Kind() {
	case reflect.Slice:
		return "a list of strings (in the environment, comma-separated)"
	case reflect.Map:
		return "a mapping of IP address to machine ID (in the environment, IP=ID pairs separated by commas)"
	case reflect.Pointer, reflect.Int:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	}
	return "a string"
}

// show quotes a value for a message, clipped so that a huge value cannot
// flood the log.
func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(clip(x))
	}
	return clip(fmt.Sprint(v))
}

func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
