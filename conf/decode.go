package conf

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// Decoding turns the merged map (YAML values, environment strings, flag
// values) into a Config with mapstructure. The domain types read their own
// text (core.Layout, core.Type, core.MachineRange and Secret implement
// encoding.TextUnmarshaler, used through mapstructure's hook), unknown keys
// are mapstructure's ErrorUnused, and weak typing is off. The hooks below
// are only what no library does strictly enough: a bare 5 must not be 5ns,
// 1.5 must not truncate to 1, 18446744073709551615 must not wrap to -1,
// "010" must not be octal, and the environment writes lists as text.

// decoderConfig is the mapstructure configuration of Load.
func decoderConfig() *mapstructure.DecoderConfig {
	return &mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			epochHook,
			durationHook,
			listHook,
			textHook,
			mapstructure.TextUnmarshallerHookFunc(),
			mapstructure.StringToBoolHookFunc(),
			intHook,
			floatHook,
		),
		ErrorUnused: true,
		// Keys are exact: "Layout" is not id.layout.
		MatchName: func(key, field string) bool { return key == field },
	}
}

var (
	timeType        = reflect.TypeFor[time.Time]()
	durationType    = reflect.TypeFor[time.Duration]()
	secretType      = reflect.TypeFor[Secret]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// isText reports a type that reads its own text.
func isText(t reflect.Type) bool { return reflect.PointerTo(t).Implements(textUnmarshaler) }

// valueError is a hook's message: the value and what is allowed.
type valueError string

func (e valueError) Error() string { return string(e) }

func badValue(v any, format string, args ...any) error {
	return valueError(show(v) + "; " + fmt.Sprintf(format, args...))
}

// textHook prepares values for keys that hold text. A YAML number or
// boolean is handed over as its text, so that `type: 1` and `type: "1"`
// read alike and `layout: 1` is refused by the layout's parser instead of
// being converted to a Layout by number. A list or mapping given to a
// type that reads text is refused here, by that type's parser, before
// mapstructure could decode it field by field (a Range is a struct).
func textHook(from, to reflect.Type, data any) (any, error) {
	if to.Kind() != reflect.String && !isText(to) {
		return data, nil
	}
	switch data.(type) {
	case string:
		return data, nil
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(data), nil
	}
	if !isText(to) || from == to || from == reflect.PointerTo(to) {
		return data, nil
	}
	err := reflect.New(to).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(show(data)))
	if err == nil { // a type that takes any text, such as Secret
		err = badValue(data, "want a string")
	}
	return nil, err
}

// epochHook reads the instants, id.epoch and mask.not_before: RFC 3339,
// or "" for the zero Time (the layout's own epoch; no bound).
func epochHook(from, to reflect.Type, data any) (any, error) {
	if to != timeType {
		return data, nil
	}
	switch x := data.(type) {
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
	return nil, badValue(data, `want an RFC 3339 instant such as 2025-01-01T00:00:00Z, or "" (id.epoch: the layout's own)`)
}

const wantDuration = "want a duration such as 1s, 250ms or 1m30s"

// durationHook is the one reading of durations: text with a unit, or 0.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch x := data.(type) {
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
			return nil, badValue(data, wantDuration)
		}
		return d, nil
	case int, int64, uint64, float64:
		// A bare number has no unit: 0 is unambiguous, 15 is not (it
		// would be 15ns).
		if fmt.Sprint(x) == "0" {
			return time.Duration(0), nil
		}
		return nil, badValue(data, "want a duration with a unit, such as %vs", x)
	}
	return nil, badValue(data, wantDuration)
}

// intHook reads integers exactly: decimal text, whole floats (YAML's 10.0)
// and unsigned values that fit; anything else is refused rather than
// truncated or wrapped.
func intHook(from, to reflect.Type, data any) (any, error) {
	if to.Kind() == reflect.Uint8 { // id.version, as core holds it
		n, err := intHook(from, reflect.TypeFor[int](), data)
		if v := reflect.ValueOf(n); err == nil && v.CanInt() && (v.Int() < 0 || v.Int() > math.MaxUint8) {
			return nil, badValue(data, "want an integer 0-%d", math.MaxUint8)
		}
		return n, err
	}
	if to.Kind() != reflect.Int && (to.Kind() != reflect.Int64 || to == durationType) {
		return data, nil
	}
	switch x := data.(type) {
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
	default:
		return data, nil // ints pass; other kinds are refused by mapstructure
	}
	return nil, badValue(data, "want an integer")
}

// floatHook reads numbers such as segment.threshold: YAML numbers and
// decimal text; NaN and the infinities are refused.
func floatHook(from, to reflect.Type, data any) (any, error) {
	if to.Kind() != reflect.Float64 {
		return data, nil
	}
	switch x := data.(type) {
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
	return nil, badValue(data, "want a number such as 0.1")
}

// listHook reads the environment's forms of a list (comma-separated) and
// of the IP table (IP=ID pairs).
func listHook(from, to reflect.Type, data any) (any, error) {
	s, ok := data.(string)
	if !ok {
		return data, nil
	}
	switch to.Kind() {
	case reflect.Slice:
		return splitList(s), nil
	case reflect.Map:
		return parseIPTable(s)
	}
	return data, nil
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

// decodeErrors turns mapstructure's errors into KeyErrors; raw is the
// merged map it decoded, where unknown keys are looked up.
func (l *loader) decodeErrors(err error, raw map[string]any) {
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
		l.decodeError(de, raw)
	}
}

func (l *loader) decodeError(de *mapstructure.DecodeError, raw map[string]any) {
	// Names are key paths; list items and map entries add [i] or [k].
	key, elem := de.Name(), ""
	if i := strings.IndexByte(key, '['); i >= 0 {
		key, elem = key[:i], key[i:]
	}
	lf, isLeaf := leafByKey[key]
	var msg string
	var cause error
	var ve valueError
	var ne *strconv.NumError
	var pe *mapstructure.ParseError
	var ue *mapstructure.UnconvertibleTypeError
	switch {
	case isLeaf && lf.typ == secretType:
		msg = "(value not shown); want a string"
	case errors.As(de, &ve):
		msg = string(ve)
	case errors.As(de, &ne):
		msg = show(ne.Num) + "; want " + describe(key)
	case errors.As(de, &pe):
		msg = show(pe.Value) + "; want " + describe(key)
	case errors.As(de, &ue):
		msg = show(ue.Value) + "; want " + describe(key)
	case isLeaf && isText(lf.typ):
		// The type's UnmarshalText refused the text: its error names
		// the value and what is allowed.
		cause = errors.Unwrap(de)
		msg = cause.Error()
	default:
		v, _ := lookup(raw, key)
		if m, ok := v.(map[string]any); ok && !isLeaf {
			// ErrorUnused: the section holds keys Config does not have.
			l.unknownKeys(key, m)
			return
		}
		msg = show(v) + "; want " + describe(key)
	}
	if elem != "" {
		msg = "item " + clip(elem) + ": " + msg
	}
	l.errs = append(l.errs, &KeyError{Key: key, Msg: msg, err: cause})
}

// lookup returns the value at a key path of the merged map.
func lookup(raw map[string]any, key string) (any, bool) {
	var v any = raw
	if key == "" {
		return v, true
	}
	for name := range strings.SplitSeq(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[name]; !ok {
			return nil, false
		}
	}
	return v, true
}

// unknownKeys reports each key of the section at path (m, in the merged
// map) that the section's struct lacks, with the nearest known key.
func (l *loader) unknownKeys(path string, m map[string]any) {
	t, prefix := reflect.TypeFor[Config](), ""
	if path != "" {
		for name := range strings.SplitSeq(path, ".") {
			f, _ := sectionField(t, name)
			t = f.typ
		}
		prefix = path + "."
	}
	var names []string
	for _, f := range fieldsOf(t) {
		names = append(names, f.name)
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if slices.Contains(names, name) {
			continue
		}
		msg := "unknown key"
		if s := suggest(name, names); s != "" {
			msg += "; did you mean " + prefix + s + "?"
		}
		l.errs = append(l.errs, &KeyError{Key: prefix + clip(name), Msg: msg, unknown: true,
			Source: l.origin[prefix+name]})
	}
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
	case reflect.Pointer, reflect.Int, reflect.Uint8:
		return "an integer"
	case reflect.Int64:
		if lf.typ != durationType {
			return "an integer"
		}
	case reflect.Float64:
		return "a number such as 0.1"
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
