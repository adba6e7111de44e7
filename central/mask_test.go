package central_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/masktest"
)

// Vesta.Mask and Vesta.Unmask over a real connection, in each layout: the
// server's IDs come back from their masks; a mask of another kind, a
// random text and a batch too large are refused with invalid_argument
// naming what is wrong; a server without a key answers not_found naming
// the keys that turn masking on.
func TestMaskProcedures(t *testing.T) {
	for _, cfg := range []core.Config{{}, {Layout: core.Vesta, Type: core.MinGranularity}, {Layout: core.Leaf, Type: core.MinGranularity}} {
		t.Run(cfg.Layout.String(), func(t *testing.T) {
			gen := newGen(t, cfg)
			ms := masktest.Maskers(t, cfg)
			_, addr := serve(t, gen, central.Config{MaxBatch: 100, Masks: ms})
			p := dial(t, addr)

			var ids []uint64
			p.result(wire.ProcGenIDs, &wire.GenIDsParams{Count: 100}, &ids)
			var masks []string
			p.result(wire.ProcMask, &wire.MaskParams{IDs: ids, Tenant: "acme", Kind: "ord"}, &masks)
			orders, _ := ms.Masker("acme", "ord")
			for i, m := range masks {
				if want := orders.Mask(core.ID(ids[i])); m != want {
					t.Fatalf("Mask: [%d] %q; want %q", i, m, want)
				}
			}
			var back []uint64
			p.result(wire.ProcUnmask, &wire.UnmaskParams{Masks: masks, Tenant: "acme", Kind: "ORD"}, &back)
			if !reflect.DeepEqual(back, ids) {
				t.Fatalf("Unmask: %v; want %v", back, ids)
			}
			// IDs as decimal text, as a JSON-minded client sends them.
			var one []string
			p.result(wire.ProcMask, map[string]any{"ids": []any{core.ID(ids[0]).String()}, "tenant": "acme", "kind": "ord"}, &one)
			if len(one) != 1 || one[0] != masks[0] {
				t.Fatalf("Mask of a decimal: %q", one)
			}

			for _, tc := range []struct {
				name   string
				proc   string
				params any
				want   string
			}{
				{"another kind", wire.ProcUnmask, &wire.UnmaskParams{Masks: []string{masks[1], masks[0]}, Tenant: "acme", Kind: "usr"},
					`masks[0]: mask: a mask of another kind: "` + masks[1] + `" is a mask of kind "ord", not "usr"`},
				{"not a mask", wire.ProcUnmask, &wire.UnmaskParams{Masks: []string{masks[0], "ord_uuuuuuuuuuuuu"}, Tenant: "acme", Kind: "ord"},
					"masks[1]: mask: not a masked ID"},
				{"a bad kind", wire.ProcMask, &wire.MaskParams{IDs: ids[:1], Kind: "o-rd"}, "mask: invalid tenant or kind"},
				{"too many", wire.ProcMask, &wire.MaskParams{IDs: make([]uint64, 101)}, "ids: 101 given; want 1-100"},
				{"none", wire.ProcUnmask, &wire.UnmaskParams{Masks: []string{}}, "masks: 0 given; want 1-100"},
				{"no ids", wire.ProcMask, map[string]any{"tenant": "acme"}, "missing field ids"},
			} {
				resp := p.call(tc.proc, tc.params)
				if !refused(resp.Error, api.InvalidArgument, tc.want) {
					t.Errorf("%s: %v; want invalid_argument saying %q", tc.name, resp.Error, tc.want)
				}
			}
			// Another tenant's masker: the masks decode to IDs no
			// issuer of the deployment writes, or to other IDs.
			resp := p.call(wire.ProcUnmask, &wire.UnmaskParams{Masks: masks[:10], Tenant: "globex", Kind: "ord"})
			if resp.Error == nil {
				var got []uint64
				if err := wire.DecodeResult(resp.Result, &got); err != nil || reflect.DeepEqual(got, ids[:10]) {
					t.Fatalf("another tenant read the masks: %v %v", got, err)
				}
			} else if !strings.Contains(resp.Error.Message, "not a masked ID of this deployment") {
				t.Errorf("another tenant: %v", resp.Error)
			}
		})
	}

	gen := newGen(t, core.Config{})
	_, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)
	for _, proc := range []string{wire.ProcMask, wire.ProcUnmask} {
		params := any(&wire.MaskParams{IDs: []uint64{1}})
		if proc == wire.ProcUnmask {
			params = &wire.UnmaskParams{Masks: []string{"0000000000000"}}
		}
		resp := p.call(proc, params)
		if !refused(resp.Error, api.NotFound, "VESTA_MASK_KEY_FILE") {
			t.Errorf("%s without a key: %v; want not_found naming the key", proc, resp.Error)
		}
	}
}
