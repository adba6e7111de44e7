package wire_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/central/wire"
)

// params encodes a params map with the codec, as any client would.
func params(t *testing.T, m map[string]any) []byte {
	t.Helper()
	return byCodec(t, m)
}

func TestDecodeSeqParams(t *testing.T) {
	long := strings.Repeat("x", wire.MaxTagLen)
	decodeCases(t, []decodeTest[wire.NextSeqsParams]{
		{"ok", params(t, map[string]any{"tag": "orders", "count": 3}), wire.NextSeqsParams{Tag: "orders", Count: 3}, ""},
		{"longest tag", params(t, map[string]any{"tag": long, "count": 1}), wire.NextSeqsParams{Tag: long, Count: 1}, ""},
		{"bin tag (old spec)", params(t, map[string]any{"tag": []byte("a.b"), "count": 1}), wire.NextSeqsParams{Tag: "a.b", Count: 1}, ""},
		{"tag too long", params(t, map[string]any{"tag": long + "y", "count": 1}), wire.NextSeqsParams{}, "tag: 129 bytes"},
		{"empty tag", params(t, map[string]any{"tag": "", "count": 1}), wire.NextSeqsParams{}, "tag: empty"},
		{"tag not UTF-8", params(t, map[string]any{"tag": []byte{0xff}, "count": 1}), wire.NextSeqsParams{}, "not UTF-8"},
		{"tag a number", params(t, map[string]any{"tag": 5, "count": 1}), wire.NextSeqsParams{}, "tag: want string"},
		{"count a decimal string", params(t, map[string]any{"tag": "a", "count": "1"}), wire.NextSeqsParams{Tag: "a", Count: 1}, ""},
		{"count a word", params(t, map[string]any{"tag": "a", "count": "one"}), wire.NextSeqsParams{}, "count: \"one\" is not an unsigned decimal integer"},
		{"negative count", params(t, map[string]any{"tag": "a", "count": -1}), wire.NextSeqsParams{}, `count: "-1" is negative`},
		{"missing tag", params(t, map[string]any{"count": 1}), wire.NextSeqsParams{}, "missing field tag"},
		{"missing count", params(t, map[string]any{"tag": "a"}), wire.NextSeqsParams{}, "missing field count"},
		{"unknown field", params(t, map[string]any{"tag": "a", "count": 1, "step": 2}), wire.NextSeqsParams{}, `unknown field "step"`},
		{"no params", nil, wire.NextSeqsParams{}, "missing field tag"},
	})
	// The one-field form refuses count.
	var one wire.NextSeqParams
	if err := wire.DecodeParams(params(t, map[string]any{"tag": "a", "count": 1}), &one); err == nil {
		t.Fatal("NextSeqParams accepted count")
	}
	if err := wire.DecodeParams(params(t, map[string]any{"tag": "a"}), &one); err != nil || one.Tag != "a" {
		t.Fatalf("NextSeqParams: %+v, %v", one, err)
	}
}

// TestIntFrames: sequence numbers are written as the codec writes int64,
// and read back from any integer encoding that holds them.
func TestIntFrames(t *testing.T) {
	e := wire.NewEncoder()
	vals := []int64{0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, math.MaxInt32, math.MaxInt32 + 1,
		math.MaxInt64, -1, -32, -33, -128, -129, math.MinInt16, math.MinInt16 - 1, math.MinInt32, math.MinInt32 - 1, math.MinInt64}
	for _, v := range vals {
		got := wire.AppendIntResponse(nil, 7, v)
		if want := byCodec(t, []any{1, uint32(7), nil, v}); !bytes.Equal(got, want) {
			t.Fatalf("AppendIntResponse(%d) = % x; want % x", v, got, want)
		}
		resp, err := wire.DecodeResponse(got)
		var back int64
		if err != nil || wire.DecodeResult(resp.Result, &back) != nil || back != v {
			t.Fatalf("%d: decoded %d, %v", v, back, err)
		}
		if v >= 0 { // a server may write it unsigned
			var u int64
			r, _ := wire.DecodeResponse(wire.AppendIDResponse(nil, 7, uint64(v)))
			if err := wire.DecodeResult(r.Result, &u); err != nil || u != v {
				t.Fatalf("unsigned %d: decoded %d, %v", v, u, err)
			}
		}
	}
	got, err := e.AppendResponse(nil, 9, nil, vals)
	if want := byCodec(t, []any{1, uint32(9), nil, vals}); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendResponse([]int64) = % x, %v; want % x", got, err, want)
	}
	resp, _ := wire.DecodeResponse(got)
	var back []int64
	if err := wire.DecodeResult(resp.Result, &back); err != nil || !slicesEqual(back, vals) {
		t.Fatalf("decoded %v, %v", back, err)
	}
	// A uint 64 above 2^63-1 is no int64.
	r, _ := wire.DecodeResponse(wire.AppendIDResponse(nil, 1, math.MaxUint64))
	var i int64
	if err := wire.DecodeResult(r.Result, &i); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("uint64 max as int64: %d, %v; want ErrMalformed", i, err)
	}
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
