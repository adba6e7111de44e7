package wire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// FuzzDecodeRequest feeds arbitrary bytes through what the server does with
// a connection's input: Split, DecodeRequest, DecodeParams. Nothing may
// panic, Split must agree with itself on every prefix, and a request that
// decodes must survive a round trip through the Encoder.
func FuzzDecodeRequest(f *testing.F) {
	e := wire.NewEncoder()
	for _, p := range []struct {
		proc   string
		params any
	}{
		{wire.ProcGenID, nil},
		{wire.ProcGenIDs, &wire.GenIDsParams{Count: 1000}},
		{wire.ProcTakeIDs, &wire.TakeIDsParams{Count: 1}},
		{wire.ProcTakeIDs, &wire.TakeIDsParams{Count: 64, Singles: 1}},
		{wire.ProcExpID, &wire.ExpIDParams{ID: 1<<63 + 12345}},
		{wire.ProcMakeID, &wire.MakeIDParams{Time: 1, Seq: 2, Machine: new(uint64)}},
		{wire.ProcTransTime, &wire.TransTimeParams{Time: 284025600}},
		{wire.ProcInfo, nil},
		{wire.ProcNextSeq, &wire.NextSeqParams{Tag: "orders"}},
		{wire.ProcNextSeqs, &wire.NextSeqsParams{Tag: "leaf-segment-test", Count: 100}},
		{wire.ProcNextSeq, map[string]any{"tag": strings.Repeat("t", wire.MaxTagLen+1)}},
		{wire.ProcNextSeq, map[string]any{"tag": []byte{0xff, 0xfe}}},
		{wire.ProcNextSeqs, map[string]any{"tag": "a", "count": -1, "extra": 1}},
		{wire.ProcMask, &wire.MaskParams{IDs: []uint64{1, 1 << 63}, Tenant: "acme", Kind: "ord"}},
		{wire.ProcUnmask, &wire.UnmaskParams{Masks: []string{"ord_0123456789abc", ""}, Kind: "ord"}},
		{wire.ProcMask, map[string]any{"ids": []any{"5", -1, nil}}},
		{wire.ProcHolder, &wire.HolderParams{ID: 1<<63 + 12345}},
		{wire.ProcHolder, map[string]any{"id": "x"}},
	} {
		frame, err := e.AppendRequest(nil, 42, p.proc, p.params)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame)
	}
	f.Add([]byte{0x93, 0x02, 0xab, 'V', 'e', 's', 't', 'a', '.', 'G', 'e', 'n', 'I', 'D', 0x90})
	f.Add([]byte{0xdb, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x01})

	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 1024
		n, err := wire.Split(b, limit)
		if err == nil && n > 0 {
			if n > len(b) || n > limit {
				t.Fatalf("Split = %d of %d bytes", n, len(b))
			}
			// Every shorter prefix needs more bytes; the object alone splits whole.
			for _, k := range []int{0, n / 2, n - 1} {
				if m, err := wire.Split(b[:k], limit); m != 0 || err != nil {
					t.Fatalf("prefix %d of %d: Split = %d, %v", k, n, m, err)
				}
			}
			if m, err := wire.Split(b[:n], n); m != n || err != nil {
				t.Fatalf("Split(b[:n], n) = %d, %v; want %d", m, err, n)
			}
			b = b[:n]
		}
		req, err := wire.DecodeRequest(b)
		var we *api.Error
		switch {
		case errors.As(err, &we):
			if req.Notify || we.Code != api.InvalidArgument {
				t.Fatalf("answerable error %v on %+v", err, req)
			}
			return
		case err != nil:
			if !errors.Is(err, wire.ErrFrame) && !errors.Is(err, wire.ErrMalformed) &&
				!errors.Is(err, wire.ErrTooDeep) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		for _, dst := range []any{nil, new(wire.GenIDsParams), new(wire.TakeIDsParams), new(wire.ExpIDParams), new(wire.MakeIDParams), new(wire.TransTimeParams), new(wire.HolderParams)} {
			_ = wire.DecodeParams(req.Params, dst)
		}
		var seq wire.NextSeqsParams
		if err := wire.DecodeParams(req.Params, &seq); err == nil {
			if len(seq.Tag) == 0 || len(seq.Tag) > wire.MaxTagLen || !utf8.ValidString(seq.Tag) {
				t.Fatalf("NextSeqsParams accepted tag %q", seq.Tag)
			}
		} else if !errors.Is(err, &api.Error{Code: api.InvalidArgument}) {
			t.Fatalf("NextSeqsParams: %v; want invalid_argument", err)
		}
		var one wire.NextSeqParams
		_ = wire.DecodeParams(req.Params, &one)
		var mp wire.MaskParams
		if err := wire.DecodeParams(req.Params, &mp); err == nil {
			if mp.IDs == nil || len(mp.Kind) > wire.MaxKindLen || len(mp.Tenant) > wire.MaxTenantLen {
				t.Fatalf("MaskParams accepted %+v", mp)
			}
		} else if !errors.Is(err, &api.Error{Code: api.InvalidArgument}) {
			t.Fatalf("MaskParams: %v; want invalid_argument", err)
		}
		var up wire.UnmaskParams
		if err := wire.DecodeParams(req.Params, &up); err == nil {
			for _, m := range up.Masks {
				if len(m) > wire.MaxMaskLen || !utf8.ValidString(m) {
					t.Fatalf("UnmaskParams accepted %q", m)
				}
			}
		} else if !errors.Is(err, &api.Error{Code: api.InvalidArgument}) {
			t.Fatalf("UnmaskParams: %v; want invalid_argument", err)
		}
		if req.Notify || len(req.Procedure) == wire.MaxProcedureLen {
			return
		}
		again, err := e.AppendRequest(nil, req.MsgID, req.Procedure, nil)
		if err != nil || again[len(again)-1] != 0x90 {
			t.Fatalf("AppendRequest: % x, %v", again, err)
		}
		if req.Params != nil { // [] becomes [params]
			again = append(append(again[:len(again)-1], 0x91), req.Params...)
		}
		req2, err := wire.DecodeRequest(again)
		if err != nil || req2.MsgID != req.MsgID || req2.Procedure != req.Procedure || !bytes.Equal(req2.Params, req.Params) {
			t.Fatalf("round trip: %+v, %v; want %+v", req2, err, req)
		}
	})
}

// FuzzDecodeResponse: what a client does with a server's bytes.
func FuzzDecodeResponse(f *testing.F) {
	e := wire.NewEncoder()
	ok, _ := e.AppendResponse(nil, 1, nil, uint64(1<<63))
	bad, _ := e.AppendResponse(nil, 2, api.Errorf(api.Clock, "behind"), nil)
	ids, _ := e.AppendResponse(nil, 3, nil, []uint64{1, 2, 3})
	info, _ := e.AppendResponse(nil, 4, nil, wire.Info{Layout: "sorted", Epoch: "2025-01-01T00:00:00Z"})
	seq := wire.AppendIntResponse(nil, 5, -1<<40)
	seqs, _ := e.AppendResponse(nil, 6, nil, []int64{-1, 0, 1 << 62})
	take := wire.AppendTakeIDsResponse(nil, 7, []core.ID{1, 1 << 62}, 7)
	short := wire.AppendTakeIDsResponse(nil, 8, nil, 1)
	for _, s := range [][]byte{ok, bad, ids, info, seq, seqs, take, short} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := wire.Split(b, 1<<16); err != nil || n == 0 {
			return
		} else {
			b = b[:n]
		}
		resp, err := wire.DecodeResponse(b)
		if err != nil || resp.Error != nil {
			return
		}
		var u uint64
		var us []uint64
		var x wire.Explanation
		var in wire.Info
		var i64 int64
		var i64s []int64
		for _, v := range []any{&u, &us, &x, &in, &i64, &i64s} {
			_ = wire.DecodeResult(resp.Result, v)
		}
	})
}

// FuzzDecodeTakeIDs: a TakeIDs result from a hostile or broken server
// never panics, and what decodes re-encodes to a result that decodes the
// same (the IDs and the retry hint survive).
func FuzzDecodeTakeIDs(f *testing.F) {
	for _, s := range [][]byte{
		wire.AppendTakeIDsResponse(nil, 1, []core.ID{1, 2, 1 << 63}, 0),
		wire.AppendTakeIDsResponse(nil, 2, nil, 1000),
		{0x94, 0x01, 0x03, 0xc0, 0x81, 0xa3, 'i', 'd', 's', 0xdd, 0xff, 0xff, 0xff, 0xff},
		{0x94, 0x01, 0x04, 0xc0, 0x82, 0xa3, 'i', 'd', 's', 0x90, 0xa1, 'x', 0xc0},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := wire.Split(b, 1<<16)
		if err != nil || n == 0 {
			return
		}
		resp, err := wire.DecodeResponse(b[:n])
		if err != nil || resp.Error != nil {
			return
		}
		var r wire.TakeIDsResult
		if wire.DecodeResult(resp.Result, &r) != nil {
			return
		}
		ids := make([]core.ID, len(r.IDs))
		for i, id := range r.IDs {
			ids[i] = core.ID(id)
		}
		again, err := wire.DecodeResponse(wire.AppendTakeIDsResponse(nil, resp.MsgID, ids, r.RetryAfterMS))
		var r2 wire.TakeIDsResult
		if err != nil || wire.DecodeResult(again.Result, &r2) != nil || len(r2.IDs) != len(r.IDs) || r2.RetryAfterMS != r.RetryAfterMS {
			t.Fatalf("round trip: %+v -> %+v, %v", r, r2, err)
		}
		for i := range r.IDs {
			if r.IDs[i] != r2.IDs[i] {
				t.Fatalf("id %d: %d -> %d", i, r.IDs[i], r2.IDs[i])
			}
		}
	})
}
