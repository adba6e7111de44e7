package core_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
)

// FuzzParseExplain: any text either fails ParseID with ErrInvalidID or
// parses to an ID that explains, re-makes to itself and prints back.
func FuzzParseExplain(f *testing.F) {
	for _, s := range []string{"0", "2610813175020394494", "18446744073709551615", "18446744073709551616", "-1", "007", "", "1e9", "0x1"} {
		f.Add(s)
	}
	codecs := []core.Codec{mustCodec(f, core.Sorted, time.Time{}), mustCodec(f, core.Vesta, time.Time{}), mustCodec(f, core.Leaf, time.Time{})}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := core.ParseID(s)
		if err != nil {
			return
		}
		if back, err := core.ParseID(id.String()); err != nil || back != id {
			t.Fatalf("ParseID(String(%d)) = %d, %v", id, back, err)
		}
		for _, c := range codecs {
			e := c.Explain(id)
			if made, err := c.Make(e.Fields()); err != nil || made != id {
				t.Fatalf("%s: Make(Explain(%d)) = %d, %v", c.Layout(), id, made, err)
			}
			var j map[string]any
			b, err := json.Marshal(e)
			if err != nil || json.Unmarshal(b, &j) != nil || j["id"] != id.String() {
				t.Fatalf("JSON %s, %v", b, err)
			}
		}
	})
}

// FuzzMake: Make never panics and never spills bits: it either refuses a
// field or builds an ID that explains back to exactly the fields. Every
// input also goes through the leaf codec, which has its own widths and no
// method bits.
func FuzzMake(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint64(2), uint64(1022), uint64(284025600), uint64(5), true)
	f.Add(uint64(1), uint64(1), uint64(3), uint64(1023), uint64(1<<40-1), uint64(1023), false)
	f.Add(uint64(2), uint64(7), uint64(9), uint64(5000), uint64(1<<62), uint64(1<<30), true)
	codecs := []core.Codec{mustCodec(f, core.Sorted, time.Time{}), mustCodec(f, core.Vesta, time.Time{})}
	leaf := mustCodec(f, core.Leaf, time.Time{})
	f.Fuzz(func(t *testing.T, version, typ, method, machine, tm, seq uint64, vesta bool) {
		c := codecs[0]
		if vesta {
			c = codecs[1]
		}
		in := core.Fields{Version: version, Type: typ, Method: method, Machine: machine, Time: tm, Seq: seq}
		checkLeafMake(t, leaf, in)
		id, err := c.Make(in)
		if err != nil {
			if in.Check() == nil {
				t.Fatalf("Make(%+v) refused valid fields: %v", in, err)
			}
			return
		}
		if got := c.Explain(id).Fields(); got != in {
			t.Fatalf("Explain(Make(%+v)) = %+v", in, got)
		}
	})
}

// checkLeafMake: the leaf codec refuses exactly the fields outside Leaf's
// widths, and otherwise explains back to them with the method unknown.
func checkLeafMake(t *testing.T, leaf core.Codec, in core.Fields) {
	t.Helper()
	valid := in.Version <= 1 && in.Type == uint64(core.MinGranularity) && in.Machine <= 1023 && in.Time < 1<<41 && in.Seq < 1<<12
	id, err := leaf.Make(in)
	if (err == nil) != valid {
		t.Fatalf("leaf: Make(%+v) = %d, %v; valid %v", in, id, err, valid)
	}
	want := in
	want.Method = uint64(core.MethodUnknown)
	if got := leaf.Explain(id).Fields(); err == nil && got != want {
		t.Fatalf("leaf: Explain(Make(%+v)) = %+v", in, got)
	}
}
