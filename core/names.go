package core

import (
	"fmt"
	"strconv"
	"strings"
)

// names is the one table of an enum's names (Layout, Type, Method): its
// String, its Parse function and its text all read it, so that every name
// printed parses back to its value.
type names[T ~uint8] struct {
	kind    string       // "layout", "type" or "method": in errors and in String's fallback
	of      []string     // each value's name, by value
	numbers bool         // whether a value's decimal ("0", "1") parses too
	aliases map[string]T // other spellings that parse (lower case)
	want    string       // what a parse error says is accepted
}

// name is v's name, or kind(v) for a value without one.
func (n names[T]) name(v T) string {
	if int(v) < len(n.of) {
		return n.of[v]
	}
	return n.kind + "(" + strconv.Itoa(int(v)) + ")"
}

// parse accepts a name in any case with spaces around it, an alias, or
// (with numbers) a value's decimal.
func (n names[T]) parse(s string) (T, error) {
	key := strings.ToLower(strings.TrimSpace(s))
	for i, name := range n.of {
		if key == name || n.numbers && key == strconv.Itoa(i) {
			return T(i), nil
		}
	}
	if v, ok := n.aliases[key]; ok {
		return v, nil
	}
	return 0, fmt.Errorf("%w: %s %q; want %s", ErrUnknownName, n.kind, clip(s), n.want)
}

// unmarshal parses text as parse does into *v, which it leaves alone on
// an error.
func (n names[T]) unmarshal(v *T, text []byte) error {
	p, err := n.parse(string(text))
	if err != nil {
		return err
	}
	*v = p
	return nil
}
