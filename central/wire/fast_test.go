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
