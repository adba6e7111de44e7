package central_test

import (
	"testing"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// TestParamForms: the RPC procedures take the forms REST takes (one set of
// rules, central/wire's fields.go): method and type names, null for a
// field left out, decimal strings, transtime's type; and refuse what REST
// refuses: spaces, signs, negative IDs.
func TestParamForms(t *testing.T) {
	gen := newGen(t, core.Config{Machine: 7})
	_, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)
	own := gen.Codec()
	want := func(method core.Method, typ core.Type) uint64 {
		id, err := own.Make(core.Fields{Time: 5, Seq: 3, Machine: 7, Method: uint64(method), Type: uint64(typ)})
		if err != nil {
			t.Fatal(err)
		}
		return uint64(id)
	}
	for _, tc := range []struct {
		name   string
		proc   string
		params map[string]any
		want   uint64 // for MakeID
		err    string // a substring of the invalid_argument message; "" for success
	}{
		{"make by names", wire.ProcMakeID, map[string]any{"time": 5, "seq": 3, "method": "rest", "type": "MIN-GRANULARITY"}, want(core.REST, core.MinGranularity), ""},
		{"make with nulls", wire.ProcMakeID, map[string]any{"time": 5, "seq": 3, "method": nil, "type": nil, "machine": nil, "version": nil}, want(core.Central, gen.Type()), ""},
		{"make with decimal strings", wire.ProcMakeID, map[string]any{"time": "5", "seq": "0003"}, want(core.Central, gen.Type()), ""},
		{"a name with a space", wire.ProcMakeID, map[string]any{"time": 5, "seq": 3, "method": " CENTRAL"}, 0, `method: " CENTRAL"; want 0-3 or embedded`},
		{"a number with a space", wire.ProcMakeID, map[string]any{"time": 5, "seq": " 3"}, 0, `seq: " 3" is not an unsigned decimal integer`},
		{"a required null", wire.ProcMakeID, map[string]any{"time": nil, "seq": 3}, 0, "missing field time"},
		{"negative id", wire.ProcExpID, map[string]any{"id": -1}, 0, "Long.toUnsignedString"},
		{"negative id text", wire.ProcExpID, map[string]any{"id": "-1"}, 0, "Long.toUnsignedString"},
		{"transtime by type name", wire.ProcTransTime, map[string]any{"time": 1000, "type": "min-granularity"}, 0, ""},
		{"transtime type out of range", wire.ProcTransTime, map[string]any{"time": 1000, "type": 2}, 0, "type: 2 out of range 0-1"},
	} {
		resp := p.call(tc.proc, tc.params)
		switch {
		case tc.err != "":
			if !refused(resp.Error, api.InvalidArgument, tc.err) {
				t.Errorf("%s: %v; want invalid_argument with %q", tc.name, resp.Error, tc.err)
			}
		case resp.Error != nil:
			t.Errorf("%s: %v", tc.name, resp.Error)
		case tc.proc == wire.ProcMakeID:
			var id uint64
			if err := wire.DecodeResult(resp.Result, &id); err != nil || id != tc.want {
				t.Errorf("%s: %d (%v); want %d", tc.name, id, err, tc.want)
			}
		case tc.proc == wire.ProcTransTime:
			var r wire.TransTimeResult
			if err := wire.DecodeResult(resp.Result, &r); err != nil || r.UnixMS != own.Epoch().UnixMilli()+1000 {
				t.Errorf("%s: %+v (%v); want 1000 ms after the epoch", tc.name, r, err)
			}
		}
	}
}
