package conf

import (
	"encoding"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// redactedText replaces a secret wherever it would be shown.
const redactedText = "[redacted]"

// Secret is a string that is never shown: fmt (every verb), slog and text
// encoders (encoding/json, YAML) see "[redacted]", or "" when it is empty,
// so a Config can be logged or dumped whole. Reveal returns the value.
type Secret string

// Reveal returns the secret itself, for the one place that uses it.
func (s Secret) Reveal() string { return string(s) }

// String is "[redacted]", or "" for the empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redactedText
}

// Format masks the secret for every verb, %#v and bad verbs included
// (a plain string type would print itself there).
func (s Secret) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), s.String())
}

// LogValue masks the secret in slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText masks the secret in encoders.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the secret itself, so decoders (Load) can fill one;
// unlike the types whose text round-trips, what MarshalText writes back
// is the mask.
func (s *Secret) UnmarshalText(b []byte) error {
	*s = Secret(b)
	return nil
}

// Redacted returns a deep copy of c with every secret replaced by
// "[redacted]", for code that prints through reflection and would bypass
// Secret's methods.
func (c Config) Redacted() Config {
	r := c.clone()
	for _, s := range []*Secret{&r.Machine.Redis.Password, &r.Machine.Etcd.Password, &r.REST.Token,
		&r.Segment.DSN, &r.Segment.Redis.Password} {
		if *s != "" {
			*s = redactedText
		}
	}
	return r
}

// clone copies c's slices, map and pointer, so the copy shares nothing.
func (c Config) clone() Config {
	c.Machine.Providers = slices.Clone(c.Machine.Providers)
	c.Machine.IPTable = maps.Clone(c.Machine.IPTable)
	if c.Machine.ID != nil {
		id := *c.Machine.ID
		c.Machine.ID = &id
	}
	c.Machine.Redis.Addrs = slices.Clone(c.Machine.Redis.Addrs)
	c.Client.Servers = slices.Clone(c.Client.Servers)
	return c
}

// LogValue logs every key, grouped by section as in the YAML file, with
// secrets masked.
func (c Config) LogValue() slog.Value {
	return groupValue(reflect.ValueOf(c))
}

func groupValue(v reflect.Value) slog.Value {
	var attrs []slog.Attr
	for _, f := range fieldsOf(v.Type()) {
		fv := v.FieldByIndex(f.index)
		if f.section {
			attrs = append(attrs, slog.Attr{Key: f.name, Value: groupValue(fv)})
		} else {
			attrs = append(attrs, slog.Attr{Key: f.name, Value: leafValue(fv)})
		}
	}
	return slog.GroupValue(attrs...)
}

// leafValue shows one value as it would be written in YAML or the
// environment: the text of types that have one (names, not numbers;
// secrets masked), "" for an unset value, lists comma-separated.
func leafValue(v reflect.Value) slog.Value {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok && z.IsZero() {
		return slog.StringValue("") // unset (the epoch, a range), as it is written
	}
	if tm, ok := v.Interface().(encoding.TextMarshaler); ok {
		b, err := tm.MarshalText()
		if err != nil {
			return slog.StringValue("?")
		}
		return slog.StringValue(string(b))
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return slog.StringValue("unset")
		}
		return leafValue(v.Elem())
	case reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = leafValue(v.Index(i)).String()
		}
		return slog.StringValue(strings.Join(items, ","))
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k.String() + "=" + leafValue(v.MapIndex(k)).String()
		}
		return slog.StringValue(strings.Join(pairs, ","))
	case reflect.Int, reflect.Int64, reflect.Uint8, reflect.Float64, reflect.Bool, reflect.String:
		return slog.AnyValue(v.Interface()) // int64 is time.Duration
	}
	// TestStringShowsEveryKey fails on a leaf of a kind not handled here.
	return slog.StringValue("?")
}

// String shows every key as key=value on one line, secrets masked. It is
// also what %v and %+v print.
func (c Config) String() string {
	var b strings.Builder
	var walk func(prefix string, v slog.Value)
	walk = func(prefix string, v slog.Value) {
		for _, a := range v.Group() {
			if a.Value.Kind() == slog.KindGroup {
				walk(prefix+a.Key+".", a.Value)
				continue
			}
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			s := a.Value.String()
			if s == "" || strings.ContainsAny(s, " \t\n\"=") {
				s = strconv.Quote(s)
			}
			b.WriteString(prefix + a.Key + "=" + s)
		}
	}
	walk("", c.LogValue())
	return b.String()
}

// GoString keeps %#v from printing the fields (and so the secrets) raw.
func (c Config) GoString() string { return "conf.Config{" + c.String() + "}" }

// Setting is one key's effective value and where it came from, for
// `vesta config print`.
type Setting struct {
	Key string `json:"key"`
	// Value is as the environment writes it (lists comma-separated, the
	// IP table as IP=ID pairs, "" unset, "unset" for no machine.id), with
	// secrets masked and a DSN's password masked.
	Value string `json:"value"`
	// Source is "default", or Loaded.Source's "file F", "env V",
	// "flag --F", "K_file F".
	Source string `json:"source"`
}

// Settings lists every key of l.Config in Config's order.
func (l Loaded) Settings() []Setting {
	var out []Setting
	var walk func(prefix string, v slog.Value)
	walk = func(prefix string, v slog.Value) {
		for _, a := range v.Group() {
			key := prefix + a.Key
			if a.Value.Kind() == slog.KindGroup {
				walk(key+".", a.Value)
				continue
			}
			s := Setting{Key: key, Value: a.Value.String(), Source: l.Source(key)}
			if s.Source == "" {
				s.Source = "default"
			}
			out = append(out, s)
		}
	}
	walk("", l.Config.LogValue())
	for i, s := range out {
		if s.Key == "segment.dsn" && l.Config.Segment.DSN != "" {
			out[i].Value = redactDSN(l.Config.Segment.DSN)
		}
	}
	return out
}

// redactDSN shows a mysql DSN with its password masked, or masked whole
// when it does not parse.
func redactDSN(dsn Secret) string {
	c, err := mysql.ParseDSN(dsn.Reveal())
	if err != nil {
		return redactedText
	}
	if c.Passwd != "" {
		c.Passwd = redactedText
	}
	return c.FormatDSN()
}
