package core_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"pgregory.net/rapid"
)

func mustCodec(tb testing.TB, l core.Layout, epoch time.Time) core.Codec {
	tb.Helper()
	c, err := core.NewCodec(l, epoch)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Vectors computed independently of this code (by the bit positions of
// docs/design/id-layouts.md, which for the vesta layout are those of Vesta's Java
// IdConverterImpl: machine | seq<<10 | time<<(10+seqBits) | method<<60 |
// type<<62 | version<<63).
var vestaVectors = []struct {
	f  core.Fields
	id core.ID
}{
	// The worked example of docs/design/id-layouts.md, both types.
	{core.Fields{Machine: 1022, Seq: 5, Time: 284025600, Method: 2}, 2610813175020394494},
	{core.Fields{Machine: 1022, Seq: 5, Time: 284025600000, Method: 2, Type: 1}, 7215351455186687998},
	{core.Fields{}, 0},
	{core.Fields{Machine: 1023, Seq: 1048575, Time: 1073741823, Method: 3, Version: 1}, 13835058055282163711},
	{core.Fields{Machine: 1023, Seq: 1023, Time: 1099511627775, Method: 3, Type: 1, Version: 1}, 18446744073709551615},
	{core.Fields{Machine: 1, Seq: 1, Time: 1, Method: 1}, 1152921505680589825},
	{core.Fields{Machine: 924, Seq: 0, Time: 1, Method: 1, Type: 1}, 5764607523035284380},
	{core.Fields{Machine: 513, Seq: 777777, Time: 123456789, Version: 1}, 9355932755457263105},
}

var sortedVectors = []struct {
	f  core.Fields
	id core.ID
}{
	{core.Fields{}, 0},
	{core.Fields{Machine: 1023, Seq: 1048575, Time: 1073741823, Method: 3, Version: 1}, 13835058055282163711},
	{core.Fields{Machine: 1023, Seq: 1023, Time: 1099511627775, Method: 3, Type: 1, Version: 1}, 18446744073709551615},
	{core.Fields{Machine: 7, Seq: 300, Time: 60000000, Method: 1}, 257698038841082156},
	{core.Fields{Machine: 924, Seq: 31, Time: 60000000123, Method: 2, Type: 1}, 4863344258946330655},
	{core.Fields{Machine: 1, Seq: 1, Time: 1, Method: 1, Type: 1, Version: 1}, 13835058055287407617},
}

// Leaf's snowflake IDs by Leaf's own formula, SnowflakeIDGenImpl.get in
// Meituan-Dianping/Leaf, leaf-core/src/main/java/com/sankuai/inf/leaf/
// snowflake/SnowflakeIDGenImpl.java: ((timestamp - twepoch) << 22) |
// (workerId << 12) | sequence, twepoch 1288834974657, 10 worker bits, 12
// sequence bits; the IDs here computed by that formula alone. Time is the
// milliseconds since twepoch. A leaf ID records no method, so its
// explanation's is MethodUnknown (and Make ignores it).
var leafVectors = []struct {
	f  core.Fields
	id core.ID
}{
	{leafFields(0, 0, 0), 0},
	{leafFields(0, 1023, 4095), 4194303},
	{leafFields(1, 0, 0), 4194304},
	{leafFields(1, 1, 1), 4198401},
	{leafFields(1<<40, 512, 2048), 4611686018429487104},
	// The largest: 41 bits of ms, the sign bit clear (Long.MAX_VALUE).
	{leafFields(1<<41-1, 1023, 4095), 9223372036854775807},
	// 2024-01-01T00:00:00Z, worker 5, a first seq Leaf could draw (0-99).
	{leafFields(1704067200000-1288834974657, 5, 99), 1741610183685066851},
	// An ID a Leaf server answered (the migration's reference point).
	{leafFields(507277196879, 0, 0), 2127674775978377216},
}

func leafFields(ms, worker, seq uint64) core.Fields {
	return core.Fields{Type: uint64(core.MinGranularity), Method: uint64(core.MethodUnknown), Machine: worker, Time: ms, Seq: seq}
}

func TestGoldenVectors(t *testing.T) {
	for _, tc := range []struct {
		layout  core.Layout
		vectors []struct {
			f  core.Fields
			id core.ID
		}
	}{{core.Vesta, vestaVectors}, {core.Sorted, sortedVectors}, {core.Leaf, leafVectors}} {
		c := mustCodec(t, tc.layout, time.Time{})
		for _, v := range tc.vectors {
			t.Run(fmt.Sprintf("%s/%d", tc.layout, v.id), func(t *testing.T) {
				id, err := c.Make(v.f)
				if err != nil || id != v.id {
					t.Fatalf("Make(%+v) = %d, %v; want %d", v.f, id, err, v.id)
				}
				if got := c.Explain(v.id).Fields(); got != v.f {
					t.Fatalf("Explain(%d) = %+v; want %+v", v.id, got, v.f)
				}
			})
		}
	}
}

func TestWorkedExampleInstant(t *testing.T) {
	c := mustCodec(t, core.Vesta, time.Time{})
	for _, id := range []core.ID{2610813175020394494, 7215351455186687998} {
		e := c.Explain(id)
		if !e.Instant.Equal(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("%d: instant %s; want 2024-01-01T00:00:00Z", id, e.Instant)
		}
		if e.Method != core.REST || e.Machine != 1022 || e.Seq != 5 {
			t.Errorf("%d: %+v", id, e)
		}
	}
	if got := c.Explain(7215351455186687998).Timestamp(); got != "2024-01-01T00:00:00.000Z" {
		t.Errorf("min-granularity timestamp %q", got)
	}
	if got := c.Explain(2610813175020394494).Timestamp(); got != "2024-01-01T00:00:00Z" {
		t.Errorf("max-peak timestamp %q", got)
	}
}

// The sorted layout's promise: IDs order by time first, whatever their
// machine and method; and the type and version bits sit at 62 and 63.
func TestSortedOrdersByTime(t *testing.T) {
	c := mustCodec(t, core.Sorted, time.Time{})
	rapid.Check(t, func(t *rapid.T) {
		typ := rapid.Uint64Range(0, 1).Draw(t, "type")
		maxT, maxS := uint64(1<<30-1), uint64(1<<20-1)
		if typ == 1 {
			maxT, maxS = 1<<40-1, 1<<10-1
		}
		a := core.Fields{Type: typ, Time: rapid.Uint64Range(0, maxT-1).Draw(t, "ta"),
			Seq: rapid.Uint64Range(0, maxS).Draw(t, "sa"), Machine: rapid.Uint64Range(0, 1023).Draw(t, "ma"),
			Method: rapid.Uint64Range(0, 3).Draw(t, "mda")}
		b := a
		b.Time += rapid.Uint64Range(1, maxT-a.Time).Draw(t, "dt")
		b.Seq = rapid.Uint64Range(0, maxS).Draw(t, "sb")
		b.Machine = rapid.Uint64Range(0, 1023).Draw(t, "mb")
		b.Method = rapid.Uint64Range(0, 3).Draw(t, "mdb")
		ia, _ := c.Make(a)
		ib, _ := c.Make(b)
		if ia >= ib {
			t.Fatalf("%+v -> %d not below %+v -> %d", a, ia, b, ib)
		}
	})
}

// make ∘ explain and explain ∘ make are identities, for every layout and
// type (a leaf ID's method aside: it has none).
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		layout := core.Layout(rapid.IntRange(0, 2).Draw(t, "layout"))
		c, err := core.NewCodec(layout, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		id := core.ID(rapid.Uint64().Draw(t, "id"))
		e := c.Explain(id)
		back, err := c.Make(e.Fields())
		if err != nil || back != id {
			t.Fatalf("Make(Explain(%d)) = %d, %v", id, back, err)
		}
		typ := rapid.Uint64Range(0, 1).Draw(t, "type")
		maxT, maxS := uint64(1<<30-1), uint64(1<<20-1)
		switch {
		case layout == core.Leaf:
			typ, maxT, maxS = 1, 1<<41-1, 1<<12-1
		case typ == 1:
			maxT, maxS = 1<<40-1, 1<<10-1
		}
		f := core.Fields{
			Version: rapid.Uint64Range(0, 1).Draw(t, "version"), Type: typ,
			Method: rapid.Uint64Range(0, 3).Draw(t, "method"), Machine: rapid.Uint64Range(0, 1023).Draw(t, "machine"),
			Time: rapid.Uint64Range(0, maxT).Draw(t, "time"), Seq: rapid.Uint64Range(0, maxS).Draw(t, "seq"),
		}
		made, err := c.Make(f)
		if err != nil {
			t.Fatal(err)
		}
		want := f
		if layout == core.Leaf {
			want.Method = uint64(core.MethodUnknown)
		}
		if got := c.Explain(made).Fields(); got != want {
			t.Fatalf("Explain(Make(%+v)) = %+v", f, got)
		}
		inst, err := c.TransTime(core.Type(typ), f.Time)
		if err != nil || !inst.Equal(c.Explain(made).Instant) {
			t.Fatalf("TransTime(%d) = %s, %v; want %s", f.Time, inst, err, c.Explain(made).Instant)
		}
	})
}

func TestMakeRangeErrors(t *testing.T) {
	c := mustCodec(t, core.Sorted, time.Time{})
	for _, tc := range []struct {
		f     core.Fields
		field string
		max   uint64
	}{
		{core.Fields{Machine: 1024}, "machine", 1023},
		{core.Fields{Seq: 1 << 20}, "seq", 1<<20 - 1},
		{core.Fields{Type: 1, Seq: 1024}, "seq", 1023},
		{core.Fields{Time: 1 << 30}, "time", 1<<30 - 1},
		{core.Fields{Type: 1, Time: 1 << 40}, "time", 1<<40 - 1},
		{core.Fields{Method: 4}, "method", 3},
		{core.Fields{Version: 2}, "version", 1},
		{core.Fields{Type: 2}, "type", 1},
		{core.Fields{Machine: ^uint64(0)}, "machine", 1023},
	} {
		t.Run(tc.field, func(t *testing.T) {
			_, err := c.Make(tc.f)
			var re *core.RangeError
			if !errors.As(err, &re) || !errors.Is(err, core.ErrOutOfRange) {
				t.Fatalf("Make(%+v) error %v; want a RangeError", tc.f, err)
			}
			if re.Field != tc.field || re.Max != tc.max {
				t.Fatalf("got field %s max %d; want %s %d (%v)", re.Field, re.Max, tc.field, tc.max, err)
			}
		})
	}
}

func TestParseID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want core.ID
		ok   bool
	}{
		{"0", 0, true},
		{"2610813175020394494", 2610813175020394494, true},
		{"18446744073709551615", 18446744073709551615, true},
		{"18446744073709551616", 0, false},
		{"99999999999999999999999", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{" 1", 0, false},
		{"0x10", 0, false},
		{"1e3", 0, false},
		{"1.0", 0, false},
		{"", 0, false},
		{"١٢", 0, false},
	} {
		got, err := core.ParseID(tc.in)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseID(%q) = %d, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, core.ErrInvalidID) {
			t.Errorf("ParseID(%q) error %v is not ErrInvalidID", tc.in, err)
		}
	}
}

func TestParseNames(t *testing.T) {
	for _, tc := range []struct {
		parse func(string) (any, error)
		in    string
		want  any
	}{
		{func(s string) (any, error) { return core.ParseLayout(s) }, "sorted", core.Sorted},
		{func(s string) (any, error) { return core.ParseLayout(s) }, "VESTA", core.Vesta},
		{func(s string) (any, error) { return core.ParseLayout(s) }, "Leaf", core.Leaf},
		{func(s string) (any, error) { return core.ParseLayout(s) }, "snowflake", nil},
		{func(s string) (any, error) { return core.ParseLayout(s) }, "0", nil}, // a layout has no number
		{func(s string) (any, error) { return core.ParseType(s) }, "max-peak", core.MaxPeak},
		{func(s string) (any, error) { return core.ParseType(s) }, "1", core.MinGranularity},
		{func(s string) (any, error) { return core.ParseType(s) }, "2", nil},
		{func(s string) (any, error) { return core.ParseMethod(s) }, "rest", core.REST},
		{func(s string) (any, error) { return core.ParseMethod(s) }, "3", core.Reserved},
		{func(s string) (any, error) { return core.ParseMethod(s) }, "4", nil},
		{func(s string) (any, error) { return core.ParseMethod(s) }, " Embed ", core.Embedded},
		{func(s string) (any, error) { return core.ParseMethod(s) }, "unknown", nil}, // printed, never parsed
	} {
		got, err := tc.parse(tc.in)
		if tc.want == nil {
			if !errors.Is(err, core.ErrUnknownName) {
				t.Errorf("parse %q: %v, %v; want ErrUnknownName", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parse %q = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	// Values without a name print as kind(value).
	for v, want := range map[fmt.Stringer]string{core.Layout(7): "layout(7)", core.Type(2): "type(2)", core.Method(9): "method(9)", core.MethodUnknown: "unknown"} {
		if got := v.String(); got != want {
			t.Errorf("String of %d = %q; want %q", v, got, want)
		}
	}
}

func TestCodecEpoch(t *testing.T) {
	if c := mustCodec(t, core.Vesta, time.Time{}); c.Epoch().UnixMilli() != 1420041600000 {
		t.Errorf("vesta epoch %s", c.Epoch())
	}
	if c := mustCodec(t, core.Sorted, time.Time{}); !c.Epoch().Equal(core.SortedEpoch) {
		t.Errorf("sorted epoch %s", c.Epoch())
	}
	// The Unix epoch itself is a valid epoch, not "unset".
	c := mustCodec(t, core.Sorted, time.Unix(0, 0))
	if got, _ := c.TransTime(core.MaxPeak, 10); got.Unix() != 10 {
		t.Errorf("epoch 1970: TransTime(10) = %s", got)
	}
	for _, bad := range []time.Time{time.Unix(-1, 0), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, 1)} {
		if _, err := core.NewCodec(core.Sorted, bad); !errors.Is(err, core.ErrConfig) {
			t.Errorf("NewCodec(epoch %s) = %v; want ErrConfig", bad, err)
		}
	}
	if c := mustCodec(t, core.Leaf, time.Time{}); c.Epoch().UnixMilli() != 1288834974657 {
		t.Errorf("leaf epoch %s", c.Epoch())
	}
	// Leaf's epoch given explicitly is Leaf's; any other is refused.
	mustCodec(t, core.Leaf, time.UnixMilli(1288834974657))
	if _, err := core.NewCodec(core.Leaf, core.SortedEpoch); !errtest.Wraps(err, core.ErrConfig, "1288834974657") {
		t.Errorf("leaf with another epoch: %v", err)
	}
	if _, err := core.NewCodec(core.Layout(7), time.Time{}); !errors.Is(err, core.ErrUnknownName) {
		t.Errorf("layout 7: %v", err)
	}
}

func TestUnitsAndEndOfTime(t *testing.T) {
	c := mustCodec(t, core.Sorted, time.Time{})
	u, err := c.Units(core.MaxPeak, core.SortedEpoch.Add(90*time.Second+999*time.Millisecond))
	if err != nil || u != 90 {
		t.Errorf("Units = %d, %v", u, err)
	}
	if _, err := c.Units(core.MaxPeak, core.SortedEpoch.Add(-time.Millisecond)); !errors.Is(err, core.ErrBeforeEpoch) {
		t.Errorf("before epoch: %v", err)
	}
	last, _ := c.TransTime(core.MaxPeak, 1<<30-1)
	if last.Year() != 2059 {
		t.Errorf("last max-peak instant %s; want 2059", last)
	}
	if _, err := c.Units(core.MaxPeak, last.Add(time.Second)); !errors.Is(err, core.ErrEndOfTime) {
		t.Errorf("past the end: %v", err)
	}
	if _, err := c.TransTime(core.MaxPeak, 1<<30); !errors.Is(err, core.ErrOutOfRange) {
		t.Errorf("TransTime too wide: %v", err)
	}
	if end, err := c.End(core.MaxPeak); err != nil || !end.Equal(last) {
		t.Errorf("End(max-peak) = %s, %v; want %s", end, err, last)
	}
	if end, _ := c.End(core.MinGranularity); end.Format(time.RFC3339Nano) != "2059-11-04T19:53:47.775Z" {
		t.Errorf("End(min-granularity) = %s", end.Format(time.RFC3339Nano))
	}
	leaf := mustCodec(t, core.Leaf, time.Time{})
	if end, _ := leaf.End(core.MinGranularity); end.Format(time.RFC3339Nano) != "2080-07-10T17:30:30.208Z" {
		t.Errorf("leaf End = %s", end.Format(time.RFC3339Nano))
	}
	if a, b, l := c.PerUnit(core.MaxPeak), c.PerUnit(core.MinGranularity), leaf.PerUnit(core.MinGranularity); a != 1<<20 || b != 1<<10 || l != 1<<12 {
		t.Errorf("PerUnit: %d, %d, leaf %d", a, b, l)
	}
	if _, err := leaf.End(core.MaxPeak); !errors.Is(err, core.ErrOutOfRange) {
		t.Errorf("leaf End(max-peak): %v", err)
	}
}

func ExampleCodec_Make() {
	c, _ := core.NewCodec(core.Vesta, time.Time{})
	id, _ := c.Make(core.Fields{Machine: 1022, Seq: 5, Time: 284025600, Method: uint64(core.REST)})
	fmt.Println(id)
	_, err := c.Make(core.Fields{Machine: 1024})
	fmt.Println(err)
	// Output:
	// 2610813175020394494
	// core: machine 1024 out of range 0-1023
}

func ExampleCodec_Explain() {
	c, _ := core.NewCodec(core.Vesta, time.Time{})
	e := c.Explain(2610813175020394494)
	fmt.Println(e.Type, e.Method, e.Machine, e.Time, e.Seq, e.Timestamp())
	// Output: max-peak rest 1022 284025600 5 2024-01-01T00:00:00Z
}

// A leaf ID by Leaf's formula, and back: the method is not in the bits.
func ExampleCodec_Make_leaf() {
	c, _ := core.NewCodec(core.Leaf, time.Time{})
	ms := uint64(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() - 1288834974657)
	id, _ := c.Make(core.Fields{Type: uint64(core.MinGranularity), Machine: 5, Time: ms, Seq: 99})
	fmt.Println(id, id == core.ID(ms<<22|5<<12|99))
	e := c.Explain(id)
	fmt.Println(e.Machine, e.Seq, e.Method, e.Timestamp())
	// Output:
	// 1741610183685066851 true
	// 5 99 unknown 2024-01-01T00:00:00.000Z
}
