package wire_test

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
)

// holderSample is a conflict of two holds, every field set, a long
// string among them (str 8), and one entry skipped.
func holderSample() wire.Holder {
	hold := wire.Hold{End: "released", EndKnown: "written", Ended: "2026-12-01T10:00:00.5Z", From: "2026-12-01T09:00:00Z",
		Hold: "AAAA", Host: "node-a", Layout: "vesta", Lease: "redis token AAAA…", Mark: "2026-12-01T10:00:00Z",
		Note: strings.Repeat("n", 40), PID: math.MaxUint32 + 1, Pod: "vesta-0", Provider: "redis", Range: "server",
		Renewed: "2026-12-01T09:59:59Z", Self: 1, Started: "2026-12-01T09:00:00Z", TTLMS: 15000, Version: "v1.2.3"}
	other := wire.Hold{Hold: "BBBB", Host: "node-b", PID: 7}
	return wire.Holder{Conflict: 1, Holds: []wire.Hold{hold, other}, Reason: "2 holds of machine 1022 cover it",
		Skipped: []string{"hold CCCC: a bad entry"}, Store: "redis"}
}

// roundTrip writes h as a response and reads its result back.
func roundTrip(t testing.TB, h wire.Holder) (wire.Holder, error) {
	t.Helper()
	b, err := wire.NewEncoder().AppendResponse(nil, 1, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := wire.DecodeResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	var back wire.Holder
	err = wire.DecodeResult(resp.Result, &back)
	return back, err
}

// TestHolderFrames: Vesta.Holder's params and result are go-msgpack's
// byte for byte, and the reader reads back what it writes.
func TestHolderFrames(t *testing.T) {
	e := wire.NewEncoder()
	for _, r := range []any{holderSample(), wire.Holder{Holds: []wire.Hold{}, Skipped: []string{}, Store: "none", Reason: api.NoHistory}} {
		want := byCodec(t, []any{1, uint32(3), nil, r})
		got, err := e.AppendResponse(nil, 3, nil, r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendResponse(%#v) =\n% x, %v; want\n% x", r, got, err, want)
		}
		if back, err := roundTrip(t, r.(wire.Holder)); err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("DecodeResult = %+v, %v; want %+v", back, err, r)
		}
	}
	p := &wire.HolderParams{ID: math.MaxUint64}
	want := byCodec(t, []any{0, uint32(4), wire.ProcHolder, []any{p}})
	got, err := e.AppendRequest(nil, 4, wire.ProcHolder, p)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendRequest = % x, %v; want % x", got, err, want)
	}
}

// TestHolderOf: the wire form of the protocol-neutral answer: flags as 0
// or 1, times RFC 3339 UTC ("" for none), the TTL in milliseconds, never a
// nil array.
func TestHolderOf(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 5, time.FixedZone("x", 3600))
	got := wire.HolderOf(api.Holder{Known: true, Inferred: true, Store: "etcd",
		Holds: []api.Hold{{Hold: "A", Self: true, PID: 9, Started: at, TTL: 1500 * time.Millisecond}}})
	want := wire.Holder{Known: 1, Inferred: 1, Store: "etcd", Skipped: []string{},
		Holds: []wire.Hold{{Hold: "A", Self: 1, PID: 9, Started: "2026-12-01T08:00:00.000000005Z", TTLMS: 1500}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("HolderOf = %+v; want %+v", got, want)
	}
}

// TestDecodeHolderResult: an older or later server's map reads (absent
// keys zero, unknown keys skipped, nil arrays empty); what does not fit is
// ErrMalformed, naming where.
func TestDecodeHolderResult(t *testing.T) {
	var h wire.Holder
	later := map[string]any{"store": "redis", "holds": nil, "future": []any{1, 2}}
	if err := wire.DecodeResult(byCodec(t, later), &h); err != nil ||
		!reflect.DeepEqual(h, wire.Holder{Store: "redis", Holds: []wire.Hold{}, Skipped: []string{}}) {
		t.Fatalf("later Holder = %+v, %v", h, err)
	}
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"holds not an array": {byCodec(t, map[string]any{"holds": "x"}), `"holds"`},
		"a hold not a map":   {byCodec(t, map[string]any{"holds": []any{1}}), `"holds": [0]`},
		"a hold's bad pid":   {byCodec(t, map[string]any{"holds": []any{map[string]any{"pid": -1}}}), `"pid"`},
		"skipped not strs":   {byCodec(t, map[string]any{"skipped": []any{"a", 1}}), `"skipped": [1]`},
		"huge array header":  {[]byte{0x81, 0xa5, 'h', 'o', 'l', 'd', 's', 0xdd, 0xff, 0xff, 0xff, 0xff}, "items in"},
		"known not a number": {byCodec(t, map[string]any{"known": true}), `"known"`},
	} {
		err := wire.DecodeResult(tc.b, &h)
		if !errtest.Wraps(err, wire.ErrMalformed, tc.want) {
			t.Errorf("%s: %v; want ErrMalformed naming %s", name, err, tc.want)
		}
	}
}

// TestDecodeHolderParams: Vesta.Holder takes one ID, as Vesta.ExpID does;
// anything else is invalid_argument naming the field.
func TestDecodeHolderParams(t *testing.T) {
	var p wire.HolderParams
	if err := wire.DecodeParams(byCodec(t, map[string]any{"id": "18446744073709551615"}), &p); err != nil || p.ID != math.MaxUint64 {
		t.Fatalf("%+v, %v", p, err)
	}
	for name, tc := range map[string]struct {
		params any
		want   string
	}{
		"missing":  {map[string]any{}, "missing field id"},
		"negative": {map[string]any{"id": -1}, "id"},
		"text":     {map[string]any{"id": "x"}, "id"},
		"unknown":  {map[string]any{"id": 1, "holder": 1}, "holder"},
	} {
		err := wire.DecodeParams(byCodec(t, tc.params), &p)
		if !errtest.Wraps(err, &api.Error{Code: api.InvalidArgument}, tc.want) {
			t.Errorf("%s: %v; want invalid_argument naming %s", name, err, tc.want)
		}
	}
}

// FuzzDecodeHolder: what a client does with a server's Holder: no panic,
// errors only ErrMalformed, and what it reads writes and reads back the
// same.
func FuzzDecodeHolder(f *testing.F) {
	e := wire.NewEncoder()
	for _, h := range []wire.Holder{holderSample(), {}} {
		b, err := e.AppendResponse(nil, 1, nil, h)
		if err != nil {
			f.Fatal(err)
		}
		resp, err := wire.DecodeResponse(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(resp.Result)
	}
	f.Add([]byte{0x81, 0xa5, 'h', 'o', 'l', 'd', 's', 0x91, 0x81, 0xa3, 'p', 'i', 'd', 0xcc})
	f.Add([]byte{0x81, 0xa7, 's', 'k', 'i', 'p', 'p', 'e', 'd', 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h wire.Holder
		err := wire.DecodeResult(b, &h)
		if err != nil {
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("DecodeResult: %v; want ErrMalformed", err)
			}
			return
		}
		if h.Holds == nil || h.Skipped == nil || len(h.Holds) > len(b) || len(h.Skipped) > len(b) {
			t.Fatalf("decoded %d holds, %d skipped from %d bytes (nil: %v %v)", len(h.Holds), len(h.Skipped), len(b), h.Holds == nil, h.Skipped == nil)
		}
		if back, err := roundTrip(t, h); err != nil || !reflect.DeepEqual(back, h) {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, h)
		}
	})
}
