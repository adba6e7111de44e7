package wire_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/central/wire"
)

// TestRareFramesAreTheCodecs: the frames of the rare structs, written by
// hand since the codec left the product path, are go-msgpack's byte for
// byte, with every optional field present and absent and integers at the
// edges of each encoding.
func TestRareFramesAreTheCodecs(t *testing.T) {
	long := strings.Repeat("x", 40) // str 8
	u := func(v uint64) *uint64 { return &v }
	params := []any{
		nil,
		&wire.ExpIDParams{ID: math.MaxUint64},
		wire.ExpIDParams{ID: 5},
		&wire.TransTimeParams{Time: 1 << 40},
		&wire.MakeIDParams{Time: 1, Seq: 2},
		&wire.MakeIDParams{Time: 300, Seq: 70000, Machine: u(1023), Method: u(0), Type: u(1), Version: u(1)},
		&wire.MakeIDParams{Time: 1, Seq: 2, Type: u(1)},
		&wire.NextSeqParams{Tag: "orders"},
		&wire.NextSeqsParams{Tag: long, Count: 10000},
		&wire.GenIDsParams{Count: 256},
		&wire.TakeIDsParams{Count: 1},
		&wire.MaskParams{IDs: []uint64{0, 1 << 63, math.MaxUint64}},
		&wire.MaskParams{IDs: []uint64{}, Tenant: long, Kind: "ord"},
		wire.MaskParams{IDs: []uint64{5}, Kind: "usr"},
		&wire.UnmaskParams{Masks: []string{"ord_0123456789abc", long}},
		&wire.UnmaskParams{Masks: []string{}, Tenant: "acme", Kind: "ord"},
		wire.UnmaskParams{Masks: []string{"x"}, Tenant: "t"},
		&wire.TakeIDsParams{Count: 64, Singles: 1},
		map[string]any{"count": -1},
		map[string]any{"id": 1.5},
		map[string]any{"tag": []byte("ab")},
		map[string]any{"x": true, "y": nil},
		map[string]any{"count": []any{int64(math.MinInt64), uint32(7), "s"}},
	}
	e := wire.NewEncoder()
	for _, p := range params {
		var want []byte
		if p == nil {
			want = byCodec(t, []any{0, uint32(9), wire.ProcInfo, []any{}})
		} else {
			want = byCodec(t, []any{0, uint32(9), wire.ProcInfo, []any{p}})
		}
		if m, ok := p.(map[string]any); ok && len(m) > 1 { // the codec's map order is Go's
			want = nil
		}
		got, err := e.AppendRequest(nil, 9, wire.ProcInfo, p)
		if err != nil || (want != nil && !bytes.Equal(got, want)) {
			t.Errorf("AppendRequest(%#v) = % x, %v; want % x", p, got, err, want)
		}
	}

	results := []any{
		wire.Explanation{ID: 1 << 63, Version: 1, Type: 1, TypeName: "min-granularity", Method: 1, MethodName: "central",
			Time: 1 << 33, Seq: 65535, Machine: 1023, Timestamp: "2026-01-01T00:00:00.123Z"},
		wire.Explanation{},
		wire.TransTimeResult{UnixMS: 1767225600123, Timestamp: "2026-01-01T00:00:00.123Z"},
		wire.TransTimeResult{UnixMS: -5},
		wire.Info{Layout: "vesta", Epoch: "2010-01-01T00:00:00Z", Type: 1, Machine: 1000, Method: 1, Version: 1, MaxBatch: 10000, TakeIDs: 1},
		wire.Info{},
		wire.TakeIDsResult{IDs: []uint64{1, 1 << 40}, RetryAfterMS: 3},
		[]uint64{0, 128, math.MaxUint64},
		[]string{"ord_0123456789abc", "", long},
		[]string{},
	}
	for _, r := range results {
		want := byCodec(t, []any{1, uint32(math.MaxUint32), nil, r})
		got, err := e.AppendResponse(nil, math.MaxUint32, nil, r)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("AppendResponse(%#v) = % x, %v; want % x", r, got, err, want)
		}
	}

	got, err := e.AppendNotification([]byte{0xee}, wire.ProcExpID, &wire.ExpIDParams{ID: 7})
	if want := append([]byte{0xee}, byCodec(t, []any{2, wire.ProcExpID, []any{&wire.ExpIDParams{ID: 7}}})...); err != nil || !bytes.Equal(got, want) {
		t.Errorf("AppendNotification = % x, %v; want % x", got, err, want)
	}
}

// TestEncodeUnknownType: without a reflection fallback, a value of another
// type is an error and dst is left as it was.
func TestEncodeUnknownType(t *testing.T) {
	e := wire.NewEncoder()
	type other struct{ A int }
	for _, f := range []func() ([]byte, error){
		func() ([]byte, error) { return e.AppendRequest([]byte{1}, 1, "m", other{}) },
		func() ([]byte, error) { return e.AppendRequest([]byte{1}, 1, "m", map[string]any{"a": other{}}) },
		func() ([]byte, error) { return e.AppendNotification([]byte{1}, "m", other{}) },
		func() ([]byte, error) { return e.AppendResponse([]byte{1}, 1, nil, other{}) },
	} {
		if got, err := f(); err == nil || !bytes.Equal(got, []byte{1}) {
			t.Errorf("got % x, %v; want [01] and an error", got, err)
		}
	}
}

// TestDecodeRareResults: the hand-written readers read what the codec
// writes, start from zero (an absent key reads 0), skip unknown keys and
// refuse what does not fit.
func TestDecodeRareResults(t *testing.T) {
	exp := wire.Explanation{ID: 1 << 63, Version: 1, Type: 1, TypeName: "min-granularity", Method: 1, MethodName: "central",
		Time: 1 << 33, Seq: 65535, Machine: 1023, Timestamp: "2026-01-01T00:00:00.123Z"}
	got := wire.Explanation{ID: 9, TypeName: "stale"}
	if err := wire.DecodeResult(byCodec(t, exp), &got); err != nil || got != exp {
		t.Errorf("Explanation = %+v, %v; want %+v", got, err, exp)
	}
	tt := wire.TransTimeResult{UnixMS: -1 << 40, Timestamp: "1935-02-27T..."}
	var gotTT wire.TransTimeResult
	if err := wire.DecodeResult(byCodec(t, tt), &gotTT); err != nil || gotTT != tt {
		t.Errorf("TransTimeResult = %+v, %v; want %+v", gotTT, err, tt)
	}
	// An older server: no take_ids; a later one: a key of its own.
	old := map[string]any{"layout": "sorted", "epoch": "2025-01-01T00:00:00Z", "max_batch": uint64(10000), "new_key": []any{1, "x"}}
	info := wire.Info{TakeIDs: 1, Machine: 5}
	if err := wire.DecodeResult(byCodec(t, old), &info); err != nil ||
		info != (wire.Info{Layout: "sorted", Epoch: "2025-01-01T00:00:00Z", MaxBatch: 10000}) {
		t.Errorf("old Info = %+v, %v", info, err)
	}
	for name, b := range map[string][]byte{
		"negative uint":   byCodec(t, map[string]any{"machine": -1}),
		"string for uint": byCodec(t, map[string]any{"machine": "1"}),
		"int for string":  byCodec(t, map[string]any{"layout": 1}),
		"not a map":       byCodec(t, []any{1}),
		"trailing":        append(byCodec(t, map[string]any{}), 0xc0),
		"truncated":       byCodec(t, wire.Info{Layout: "sorted"})[:10],
	} {
		var info wire.Info
		if err := wire.DecodeResult(b, &info); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: DecodeResult = %v; want ErrMalformed", name, err)
		}
	}
	var x struct{}
	if err := wire.DecodeResult([]byte{0x80}, &x); err == nil {
		t.Error("DecodeResult into an unknown type: no error")
	}
}
