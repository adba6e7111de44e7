package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
)

// TestTakeIDsFrames: the hand-written TakeIDs frames are the codec's, byte
// for byte, and decode back.
func TestTakeIDsFrames(t *testing.T) {
	e := wire.NewEncoder()
	for _, msgid := range []uint32{0, 127, 128, 65536, math.MaxUint32} {
		for _, count := range edges {
			for _, proc := range []string{wire.ProcTakeIDs, wire.ProcGenIDs} {
				var params any = &wire.TakeIDsParams{Count: count}
				if proc == wire.ProcGenIDs {
					params = &wire.GenIDsParams{Count: count}
				}
				got, err := e.AppendRequest(nil, msgid, proc, params)
				want := byCodec(t, []any{0, msgid, proc, []any{map[string]uint64{"count": count}}})
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("AppendRequest(%s, %d) = % x, %v; want % x", proc, count, got, err, want)
				}
				req, err := wire.DecodeRequest(got)
				var p wire.TakeIDsParams
				if err != nil || req.Procedure != proc || wire.DecodeParams(req.Params, &p) != nil || p.Count != count {
					t.Fatalf("decoded %+v %+v, %v", req, p, err)
				}
			}
		}
		for _, n := range []int{0, 1, 15, 16, 1000, 65536} {
			for _, retry := range []uint64{0, 1, 999, math.MaxUint64} {
				ids := make([]core.ID, n)
				u := make([]uint64, n)
				for i := range ids {
					u[i] = edges[i%len(edges)]
					ids[i] = core.ID(u[i])
				}
				want := byCodec(t, []any{1, msgid, nil, wire.TakeIDsResult{IDs: u, RetryAfterMS: retry}})
				got := wire.AppendTakeIDsResponse(nil, msgid, ids, retry)
				if !bytes.Equal(got, want) {
					t.Fatalf("AppendTakeIDsResponse(%d IDs, %d) differs from the codec:\n% x\n% x", n, retry, got[:min(40, len(got))], want[:min(40, len(want))])
				}
				if got, _ := e.AppendResponse(nil, msgid, nil, wire.TakeIDsResult{IDs: u, RetryAfterMS: retry}); !bytes.Equal(got, want) {
					t.Fatalf("AppendResponse(TakeIDsResult of %d) differs from the codec", n)
				}
				resp, err := wire.DecodeResponse(got)
				var back wire.TakeIDsResult
				if err != nil || resp.MsgID != msgid || wire.DecodeResult(resp.Result, &back) != nil ||
					back.RetryAfterMS != retry || len(back.IDs) != n || back.IDs == nil || (n > 0 && back.IDs[n-1] != u[n-1]) {
					t.Fatalf("decoded %d IDs, retry %d, %v", len(back.IDs), back.RetryAfterMS, err)
				}
			}
		}
	}
}

// TestDecodeTakeIDsResult: strict where it matters (types, repeats, the
// required ids), lenient to keys a later server may add.
func TestDecodeTakeIDsResult(t *testing.T) {
	ids := func(v ...byte) []byte { return cat(0xa3, "ids", cat(append([]byte{0x90 | byte(len(v))}, v...))) }
	retry := func(v ...byte) []byte { return cat(0xae, "retry_after_ms", cat(v)) }
	tests := []struct {
		name  string
		in    []byte
		ids   []uint64
		retry uint64
		err   string
	}{
		{"both", cat(0x82, ids(1, 2), retry(5)), []uint64{1, 2}, 5, ""},
		{"reversed", cat(0x82, retry(0xcc, 200), ids(7)), []uint64{7}, 200, ""},
		{"no retry", cat(0x81, ids(3)), []uint64{3}, 0, ""},
		{"empty ids", cat(0x82, ids(), retry(9)), []uint64{}, 9, ""},
		{"unknown key skipped", cat(0x83, ids(1), 0xa1, "x", 0x92, 0x01, 0xa1, "y", retry(2)), []uint64{1}, 2, ""},
		{"missing ids", cat(0x81, retry(1)), nil, 0, "missing key ids"},
		{"nil ids", cat(0x81, 0xa3, "ids", 0xc0), nil, 0, "want an array, got nil"},
		{"ids twice", cat(0x82, ids(1), ids(2)), nil, 0, "twice"},
		{"retry twice", cat(0x83, ids(1), retry(1), retry(2)), nil, 0, "twice"},
		{"negative retry", cat(0x82, ids(1), retry(0xff)), nil, 0, "unsigned"},
		{"string id", cat(0x81, 0xa3, "ids", 0x91, 0xa1, "1"), nil, 0, "unsigned"},
		{"array not map", []byte{0x92, 0x01, 0x02}, nil, 0, "want map"},
		{"int key", cat(0x81, 0x01, 0x01), nil, 0, "key"},
		{"huge array claim", cat(0x81, 0xa3, "ids", 0xdd, 0xff, 0xff, 0xff, 0xff), nil, 0, "ids"},
		{"trailing", cat(0x81, ids(1), 0x01), nil, 0, "trailing"},
		{"truncated", cat(0x82, ids(1)), nil, 0, "key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wire.TakeIDsResult{IDs: make([]uint64, 0, 4)}
			err := wire.DecodeResult(tt.in, &got)
			if tt.err != "" {
				if !errtest.Wraps(err, wire.ErrMalformed, tt.err) {
					t.Fatalf("err %v; want ErrMalformed with %q", err, tt.err)
				}
				return
			}
			if err != nil || fmt.Sprint(got.IDs) != fmt.Sprint(tt.ids) || got.IDs == nil || got.RetryAfterMS != tt.retry {
				t.Fatalf("got %v %d, %v; want %v %d", got.IDs, got.RetryAfterMS, err, tt.ids, tt.retry)
			}
		})
	}
}

// TestInfoTakeIDs: the new key round-trips, and an old server's Info
// (without it) decodes as 0, so a client falls back to GenID/GenIDs.
func TestInfoTakeIDs(t *testing.T) {
	e := wire.NewEncoder()
	info := wire.Info{Layout: "sorted", Epoch: "2025-01-01T00:00:00Z", MaxBatch: 10000, TakeIDs: 1}
	frame, _ := e.AppendResponse(nil, 1, nil, info)
	resp, _ := wire.DecodeResponse(frame)
	var back wire.Info
	if err := wire.DecodeResult(resp.Result, &back); err != nil || back != info {
		t.Fatalf("info %+v, %v", back, err)
	}
	old := byCodec(t, map[string]any{"layout": "sorted", "epoch": "2025-01-01T00:00:00Z", "type": 0,
		"machine": 3, "method": 1, "version": 0, "max_batch": 10000})
	back = wire.Info{TakeIDs: 7}
	if err := wire.DecodeResult(old, &back); err != nil || back.TakeIDs != 0 || back.Machine != 3 {
		t.Fatalf("old info %+v, %v", back, err)
	}
}

func BenchmarkDecodeResultTakeIDs(b *testing.B) {
	frame := wire.AppendTakeIDsResponse(nil, 7, []core.ID{1 << 62}, 0)
	var r wire.TakeIDsResult
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := wire.DecodeResponse(frame)
		if err := wire.DecodeResult(resp.Result, &r); err != nil || len(r.IDs) != 1 {
			b.Fatal(err)
		}
	}
}

// TestErrorResponseBytes: error answers, written by hand, are the codec's.
func TestErrorResponseBytes(t *testing.T) {
	e := wire.NewEncoder()
	for _, n := range []int{0, 5, 31, 32, 255, 256, 70000} {
		msg := strings.Repeat("x", n)
		werr := &api.Error{Code: api.Unavailable, Message: msg}
		got, err := e.AppendResponse(nil, 77, werr, nil)
		want := byCodec(t, []any{1, uint32(77), werr.Error(), nil})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("error of %d bytes: % x; want % x", n, got[:min(len(got), 12)], want[:min(len(want), 12)])
		}
	}
}

// TestTakeIDsSingles: the singles key is written only when 1, is the
// codec's byte for byte, and is decoded strictly (0 or 1, once).
func TestTakeIDsSingles(t *testing.T) {
	e := wire.NewEncoder()
	got, err := e.AppendRequest(nil, 9, wire.ProcTakeIDs, &wire.TakeIDsParams{Count: 300, Singles: 1})
	// A struct, not a map: the codec writes a map's keys in Go's random
	// order, a struct's in field order (the encoder's: count, then singles).
	type params struct {
		Count   uint64 `codec:"count"`
		Singles uint64 `codec:"singles"`
	}
	want := byCodec(t, []any{0, 9, wire.ProcTakeIDs, []any{params{Count: 300, Singles: 1}}})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendRequest(singles) = % x, %v; want % x", got, err, want)
	}
	for _, tc := range []struct {
		params  any
		singles uint64
		err     string
	}{
		{map[string]any{"count": 3}, 0, ""},
		{map[string]any{"count": 3, "singles": 0}, 0, ""},
		{map[string]any{"count": 3, "singles": 1}, 1, ""},
		{map[string]any{"count": 3, "singles": nil}, 0, ""},
		{map[string]any{"count": 3, "singles": 2}, 0, "singles: 2"},
		{map[string]any{"count": 3, "singles": "x"}, 0, "singles"},
		{map[string]any{"singles": 1}, 0, "count"},
	} {
		frame, err := e.AppendRequest(nil, 1, wire.ProcTakeIDs, tc.params)
		if err != nil {
			t.Fatal(err)
		}
		req, err := wire.DecodeRequest(frame)
		if err != nil {
			t.Fatal(err)
		}
		p := wire.TakeIDsParams{Singles: 7}
		err = wire.DecodeParams(req.Params, &p)
		switch {
		case tc.err == "" && (err != nil || p.Singles != tc.singles || p.Count != 3):
			t.Errorf("%v: %+v, %v; want singles %d", tc.params, p, err, tc.singles)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, &api.Error{Code: api.InvalidArgument})):
			t.Errorf("%v: %v; want invalid_argument naming %q", tc.params, err, tc.err)
		}
	}
}
