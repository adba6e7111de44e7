package wire_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// byCodec encodes v with the codec alone, as the spec's reference.
func byCodec(t *testing.T, v any) []byte {
	t.Helper()
	var b []byte
	if err := codec.NewEncoderBytes(&b, &codec.MsgpackHandle{WriteExt: true}).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b
}

var edges = []uint64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, 1 << 62, math.MaxUint64}

// TestHeaders: the headers of arrays, maps, strs and bins of every size
// class, at its edges, are the bytes the codec writes, and an array's and
// a map's read back as their length.
func TestHeaders(t *testing.T) {
	for _, n := range []int{0, 15, 16, 31, 32, 0xff, 0x100, 0xffff, 0x10000} {
		m := make(map[int]bool, n)
		for i := range n {
			m[i] = true
		}
		for _, tc := range []struct {
			what string
			got  []byte
			want []byte // the codec's encoding, which starts with got
			read func([]byte) (uint64, int, error)
		}{
			{"array", wire.AppendArrayLen(nil, n), byCodec(t, make([]any, n)), wire.ReadArrayLen},
			{"map", wire.AppendMapLen(nil, n), byCodec(t, m), wire.ReadMapLen},
			{"str", wire.AppendStr(nil, strings.Repeat("s", n)), byCodec(t, strings.Repeat("s", n)), nil},
			{"bin", wire.AppendBin(nil, bytes.Repeat([]byte{'b'}, n)), byCodec(t, bytes.Repeat([]byte{'b'}, n)), nil},
		} {
			if !bytes.HasPrefix(tc.want, tc.got) || len(tc.got) == 0 || tc.read == nil && len(tc.got) != len(tc.want) {
				t.Errorf("%s of %d: % x...; the codec writes % x...", tc.what, n, tc.got[:min(len(tc.got), 5)], tc.want[:min(len(tc.want), 5)])
			}
			if tc.read == nil {
				continue
			}
			if l, took, err := tc.read(tc.got); err != nil || l != uint64(n) || took != len(tc.got) {
				t.Errorf("%s of %d: read back %d, %v, taking %d of %d bytes", tc.what, n, l, err, took, len(tc.got))
			}
		}
	}
}

// TestFastFrames: the frames written without the codec are the codec's,
// byte for byte.
func TestFastFrames(t *testing.T) {
	e := wire.NewEncoder()
	for _, msgid := range edges {
		if msgid > math.MaxUint32 {
			continue
		}
		for _, v := range edges {
			got := wire.AppendIDResponse([]byte{0xee}, uint32(msgid), v)
			want := append([]byte{0xee}, byCodec(t, []any{1, uint32(msgid), nil, v})...)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendIDResponse(%d, %d) = % x; want % x", msgid, v, got, want)
			}
			var back uint64
			resp, err := wire.DecodeResponse(got[1:])
			if err != nil || wire.DecodeResult(resp.Result, &back) != nil || back != v {
				t.Fatalf("decoded %d, %v", back, err)
			}
		}
		for _, n := range []int{0, 11, 31, 32, 255, 256, 65535, 65536} {
			proc := strings.Repeat("m", n)
			got, _ := e.AppendRequest(nil, uint32(msgid), proc, nil)
			if want := byCodec(t, []any{0, uint32(msgid), proc, []any{}}); !bytes.Equal(got, want) {
				t.Fatalf("AppendRequest(%d, %d bytes) = % x; want % x", msgid, n, got[:min(len(got), 16)], want[:min(len(want), 16)])
			}
		}
		for _, n := range []int{0, 1, 15, 16, 1000, 65535, 65536} {
			ids := make([]core.ID, n)
			u := make([]uint64, n)
			for i := range ids {
				ids[i] = core.ID(edges[i%len(edges)])
				u[i] = uint64(ids[i])
			}
			got, _ := e.AppendResponse(nil, uint32(msgid), nil, ids)
			if want := byCodec(t, []any{1, uint32(msgid), nil, u}); !bytes.Equal(got, want) {
				t.Fatalf("AppendResponse of %d IDs differs from the codec", n)
			}
			var back []uint64
			resp, _ := wire.DecodeResponse(got)
			if err := wire.DecodeResult(resp.Result, &back); err != nil || len(back) != n || (n > 0 && back[n-1] != u[n-1]) {
				t.Fatalf("%d IDs back: %d, %v", n, len(back), err)
			}
		}
	}
}

func TestDecodeResultStrict(t *testing.T) {
	var u uint64
	for _, b := range [][]byte{{0xc0}, {0xff}, {0xca, 0, 0, 0, 0}, {0xa1, '1'}, {0x91, 0x01}} {
		if err := wire.DecodeResult(b, &u); err == nil {
			t.Errorf("% x decoded into a uint64", b)
		}
	}
	var us []uint64
	for _, b := range [][]byte{{0x05}, {0x92, 0x01, 0xff}, {0xdd, 0xff, 0xff, 0xff, 0xff}, {0x91, 0xa1, '1'}} {
		if err := wire.DecodeResult(b, &us); err == nil {
			t.Errorf("% x decoded into a []uint64", b)
		}
	}
	if err := wire.DecodeResult([]byte{0xc0}, &us); err != nil || us != nil {
		t.Errorf("nil: %v, %v", us, err)
	}
}

func BenchmarkAppendIDResponse(b *testing.B) {
	buf := make([]byte, 0, 64)
	for i := 0; b.Loop(); i++ {
		buf = wire.AppendIDResponse(buf[:0], uint32(i), 1<<62+uint64(i))
	}
}

func BenchmarkDecodeResultID(b *testing.B) {
	frame := wire.AppendIDResponse(nil, 7, 1<<62)
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := wire.DecodeResponse(frame)
		var id uint64
		if err := wire.DecodeResult(resp.Result, &id); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeResultInfo(b *testing.B) {
	e := wire.NewEncoder()
	frame, _ := e.AppendResponse(nil, 7, nil, wire.Info{Layout: "sorted", Epoch: "2025-01-01T00:00:00Z", MaxBatch: 10000})
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := wire.DecodeResponse(frame)
		var info wire.Info
		if err := wire.DecodeResult(resp.Result, &info); err != nil {
			b.Fatal(err)
		}
	}
}
