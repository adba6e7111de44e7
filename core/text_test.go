package core_test

import (
	"encoding"
	"encoding/json"
	"errors"
	"testing"

	"github.com/vesta-go/vesta/core"
)

// Layouts, types and methods read and write the names of their Parse
// functions, and refuse what those refuse.
func TestTextRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		v    encoding.TextMarshaler
		into encoding.TextUnmarshaler
		text string
	}{
		{core.Sorted, new(core.Layout), "sorted"},
		{core.Vesta, new(core.Layout), "vesta"},
		{core.MaxPeak, new(core.Type), "max-peak"},
		{core.MinGranularity, new(core.Type), "min-granularity"},
		{core.Embedded, new(core.Method), "embedded"},
		{core.Central, new(core.Method), "central"},
		{core.REST, new(core.Method), "rest"},
		{core.Reserved, new(core.Method), "reserved"},
	} {
		b, err := tc.v.MarshalText()
		if err != nil || string(b) != tc.text {
			t.Errorf("%v.MarshalText() = %q, %v; want %q", tc.v, b, err, tc.text)
		}
		if err := tc.into.UnmarshalText(b); err != nil {
			t.Errorf("UnmarshalText(%q): %v", b, err)
		}
		if got := tc.into.(interface{ String() string }).String(); got != tc.text {
			t.Errorf("UnmarshalText(%q) = %s", b, got)
		}
	}
	var typ core.Type
	if err := typ.UnmarshalText([]byte("1")); err != nil || typ != core.MinGranularity {
		t.Errorf(`Type.UnmarshalText("1") = %v, %v; want min-granularity`, typ, err)
	}
	for _, u := range []encoding.TextUnmarshaler{new(core.Layout), new(core.Type), new(core.Method)} {
		for _, bad := range []string{"", "2x", "[0]", "sorted,vesta"} {
			if err := u.UnmarshalText([]byte(bad)); !errors.Is(err, core.ErrUnknownName) {
				t.Errorf("%T.UnmarshalText(%q) = %v; want ErrUnknownName", u, bad, err)
			}
		}
	}
	b, err := json.Marshal(struct {
		L core.Layout
		T core.Type
	}{core.Vesta, core.MinGranularity})
	if err != nil || string(b) != `{"L":"vesta","T":"min-granularity"}` {
		t.Errorf("JSON = %s, %v", b, err)
	}
}
