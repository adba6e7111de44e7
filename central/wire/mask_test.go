package wire_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
)

func TestDecodeMaskParams(t *testing.T) {
	longTenant := strings.Repeat("t", wire.MaxTenantLen)
	decodeCases(t, []decodeTest[wire.MaskParams]{
		{"ids only", params(t, map[string]any{"ids": []any{1, uint64(1 << 63)}}), wire.MaskParams{IDs: []uint64{1, 1 << 63}}, ""},
		{"all", params(t, map[string]any{"ids": []any{"7"}, "tenant": longTenant, "kind": "ord"}),
			wire.MaskParams{IDs: []uint64{7}, Tenant: longTenant, Kind: "ord"}, ""},
		{"nil tenant and kind", params(t, map[string]any{"ids": []any{2}, "tenant": nil, "kind": nil}), wire.MaskParams{IDs: []uint64{2}}, ""},
		{"empty ids", params(t, map[string]any{"ids": []any{}}), wire.MaskParams{IDs: []uint64{}}, ""},
		{"missing ids", params(t, map[string]any{"kind": "ord"}), wire.MaskParams{}, "missing field ids"},
		{"null ids", params(t, map[string]any{"ids": nil}), wire.MaskParams{}, "ids: null"},
		{"ids a number", params(t, map[string]any{"ids": 5}), wire.MaskParams{}, "ids: want array, got integer"},
		{"a negative id", params(t, map[string]any{"ids": []any{1, -3}}), wire.MaskParams{}, `ids[1]: "-3" is negative`},
		{"a null id", params(t, map[string]any{"ids": []any{nil}}), wire.MaskParams{}, "ids: [0]: null"},
		{"a word", params(t, map[string]any{"ids": []any{"seven"}}), wire.MaskParams{}, `ids[0]: "seven" is not an unsigned decimal`},
		{"tenant too long", params(t, map[string]any{"ids": []any{1}, "tenant": longTenant + "x"}), wire.MaskParams{}, "tenant: 129 bytes; want at most 128"},
		{"kind too long", params(t, map[string]any{"ids": []any{1}, "kind": strings.Repeat("k", 17)}), wire.MaskParams{}, "kind: 17 bytes"},
		{"kind not UTF-8", params(t, map[string]any{"ids": []any{1}, "kind": []byte{0xff}}), wire.MaskParams{}, "not UTF-8"},
		{"unknown field", params(t, map[string]any{"ids": []any{1}, "count": 1}), wire.MaskParams{}, `unknown field "count"`},
	})
}

func TestDecodeUnmaskParams(t *testing.T) {
	decodeCases(t, []decodeTest[wire.UnmaskParams]{
		{"masks", params(t, map[string]any{"masks": []any{"ord_0123456789abc", ""}, "kind": "ord"}),
			wire.UnmaskParams{Masks: []string{"ord_0123456789abc", ""}, Kind: "ord"}, ""},
		{"bin masks (old spec)", params(t, map[string]any{"masks": []any{[]byte("0123456789abc")}}), wire.UnmaskParams{Masks: []string{"0123456789abc"}}, ""},
		{"missing masks", params(t, map[string]any{"tenant": "a"}), wire.UnmaskParams{}, "missing field masks"},
		{"a mask too long", params(t, map[string]any{"masks": []any{strings.Repeat("0", 65)}}), wire.UnmaskParams{}, "masks: [0]: 65 bytes; want at most 64"},
		{"a mask a number", params(t, map[string]any{"masks": []any{"a", 5}}), wire.UnmaskParams{}, "masks: [1]: want string"},
		{"ids given", params(t, map[string]any{"masks": []any{}, "ids": []any{1}}), wire.UnmaskParams{}, `unknown field "ids"`},
	})
}

// decodeTest is a case of decodeCases: params decode into a T as want, or
// fail with an invalid_argument error containing wantErr (a substring
// naming the field; "" for success).
type decodeTest[T any] struct {
	name    string
	params  []byte
	want    T
	wantErr string
}

// decodeCases runs each case as a subtest of its name (decodeCase).
func decodeCases[T any](t *testing.T, cases []decodeTest[T]) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { decodeCase(t, tc.params, tc.want, tc.wantErr) })
	}
}

// decodeCase decodes params into a T: want, or an invalid_argument
// error containing wantErr.
func decodeCase[T any](t *testing.T, params []byte, want T, wantErr string) {
	t.Helper()
	var got T
	err := wire.DecodeParams(params, &got)
	if wantErr == "" {
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, %v; want %+v", got, err, want)
		}
		return
	}
	if !errtest.Wraps(err, &api.Error{Code: api.InvalidArgument}, wantErr) {
		t.Fatalf("error %v; want invalid_argument containing %q", err, wantErr)
	}
}

// An array header that claims more items than the frame has bytes is
// refused before anything is allocated for it.
func TestMaskParamsHugeArray(t *testing.T) {
	p := append([]byte{0x81, 0xa3, 'i', 'd', 's', 0xdd, 0xff, 0xff, 0xff, 0xff}, 1, 2)
	var mp wire.MaskParams
	if err := wire.DecodeParams(p, &mp); err == nil || !strings.Contains(err.Error(), "items in 2 bytes") {
		t.Fatalf("DecodeParams = %v", err)
	}
	p = []byte{0x81, 0xa5, 'm', 'a', 's', 'k', 's', 0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2}
	var up wire.UnmaskParams
	if err := wire.DecodeParams(p, &up); err == nil || !strings.Contains(err.Error(), "items in 2 bytes") {
		t.Fatalf("DecodeParams = %v", err)
	}
}

// Vesta.Mask's result reads back.
func TestDecodeMaskResult(t *testing.T) {
	want := []string{"ord_0123456789abc", "", strings.Repeat("z", 40)}
	got := []string{"stale"}
	if err := wire.DecodeResult(byCodec(t, want), &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeResult = %q, %v", got, err)
	}
	if err := wire.DecodeResult(byCodec(t, []any{"a", 1}), &got); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("a number among the masks: %v", err)
	}
}
