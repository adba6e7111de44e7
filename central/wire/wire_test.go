package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// cat joins byte slices and strings into one frame.
func cat(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case int:
			b = append(b, byte(p))
		case string:
			b = append(b, p...)
		case []byte:
			b = append(b, p...)
		default:
			panic(fmt.Sprintf("cat: %T", p))
		}
	}
	return b
}

func u64p(v uint64) *uint64 { return &v }

func TestSplit(t *testing.T) {
	big := bytes.Repeat([]byte{0x01}, 70000)
	deep := append(bytes.Repeat([]byte{0x91}, wire.MaxDepth), 0x01)
	tooDeep := append(bytes.Repeat([]byte{0x91}, wire.MaxDepth+1), 0x01)
	tests := []struct {
		name  string
		in    []byte
		limit int
		want  int
		err   error
	}{
		{"fixint", []byte{0x05, 0xff}, 100, 1, nil},
		{"negfixint", []byte{0xe0}, 100, 1, nil},
		{"nil", []byte{0xc0}, 100, 1, nil},
		{"true", []byte{0xc3}, 100, 1, nil},
		{"uint64", []byte{0xcf, 1, 2, 3, 4, 5, 6, 7, 8}, 100, 9, nil},
		{"uint64 short", []byte{0xcf, 1, 2, 3}, 100, 0, nil},
		{"int16", []byte{0xd1, 0xff, 0xfe}, 100, 3, nil},
		{"float32", []byte{0xca, 0, 0, 0, 0}, 100, 5, nil},
		{"float64", []byte{0xcb, 0, 0, 0, 0, 0, 0, 0, 0}, 100, 9, nil},
		{"fixstr", cat(0xa3, "abc"), 100, 4, nil},
		{"fixstr short", cat(0xa3, "ab"), 100, 0, nil},
		{"str8", cat(0xd9, 3, "abc"), 100, 5, nil},
		{"str16", cat(0xda, 0, 3, "abc"), 100, 6, nil},
		{"str32", cat(0xdb, 0, 0, 0, 3, "abc"), 100, 8, nil},
		{"str32 header short", []byte{0xdb, 0, 0}, 100, 0, nil},
		{"bin8", cat(0xc4, 2, "ab"), 100, 4, nil},
		{"ext8", cat(0xc7, 2, 1, "ab"), 100, 5, nil},
		{"ext16", cat(0xc8, 0, 2, 1, "ab"), 100, 6, nil},
		{"fixext4", cat(0xd6, 1, "abcd"), 100, 6, nil},
		{"fixext16", cat(0xd8, 1, strings.Repeat("x", 16)), 100, 18, nil},
		{"fixarray", []byte{0x92, 0x01, 0x02, 0x03}, 100, 3, nil},
		{"array short", []byte{0x92, 0x01}, 100, 0, nil},
		{"fixmap", []byte{0x81, 0xa1, 'k', 0x01}, 100, 4, nil},
		{"map16", []byte{0xde, 0, 1, 0x01, 0x02}, 100, 5, nil},
		{"array32", []byte{0xdd, 0, 0, 0, 1, 0xc0}, 100, 6, nil},
		{"request", cat(0x94, 0, 1, 0xab, "Vesta.GenID", 0x90), 100, 16, nil},
		{"nested limit", deep, 100, len(deep), nil},
		{"too deep", tooDeep, 100, 0, wire.ErrTooDeep},
		{"0xc1", []byte{0xc1}, 100, 0, wire.ErrMalformed},
		{"0xc1 inside", []byte{0x92, 0x01, 0xc1}, 100, 0, wire.ErrMalformed},
		{"str32 claims 4 GiB", []byte{0xdb, 0xff, 0xff, 0xff, 0xff}, 100, 0, wire.ErrTooLarge},
		{"bin32 claims 4 GiB", []byte{0xc6, 0xff, 0xff, 0xff, 0xff}, 100, 0, wire.ErrTooLarge},
		{"ext32 claims 4 GiB", []byte{0xc9, 0xff, 0xff, 0xff, 0xff, 1}, 100, 0, wire.ErrTooLarge},
		{"array32 claims 4G items", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, 100, 0, wire.ErrTooLarge},
		{"map32 claims 4G pairs", []byte{0xdf, 0x7f, 0xff, 0xff, 0xff}, 100, 0, wire.ErrTooLarge},
		{"str just fits", cat(0xa5, "abcde"), 6, 6, nil},
		{"str one over", cat(0xa5, "abcde"), 5, 0, wire.ErrTooLarge},
		{"long array of small items", cat(0xdc, 0xff, 0xff, big), 65536, 0, wire.ErrTooLarge},
		{"partial at the limit", cat(0xdc, 0x00, 0x10, bytes.Repeat([]byte{1}, 8)), 11, 0, wire.ErrTooLarge},
		{"empty", nil, 100, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := wire.Split(tt.in, tt.limit)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("Split: err %v; want %v", err, tt.err)
			}
			if n != tt.want {
				t.Fatalf("Split = %d; want %d", n, tt.want)
			}
		})
	}
}

func TestDecodeRequestLiteral(t *testing.T) {
	// [0, 1, "Vesta.GenIDs", [{"count": 1000}]], written by hand.
	frame := cat(0x94, 0x00, 0x01, 0xac, "Vesta.GenIDs", 0x91, 0x81, 0xa5, "count", 0xcd, 0x03, 0xe8)
	n, err := wire.Split(frame, wire.DefaultMaxRequestBytes)
	if err != nil || n != len(frame) {
		t.Fatalf("Split = %d, %v; want %d", n, err, len(frame))
	}
	req, err := wire.DecodeRequest(frame)
	if err != nil {
		t.Fatal(err)
	}
	if req.Notify || req.MsgID != 1 || req.Procedure != wire.ProcGenIDs {
		t.Fatalf("request %+v", req)
	}
	var p wire.GenIDsParams
	if err := wire.DecodeParams(req.Params, &p); err != nil || p.Count != 1000 {
		t.Fatalf("params %+v, %v", p, err)
	}
}

func TestDecodeRequest(t *testing.T) {
	genID := cat(0xab, "Vesta.GenID")
	tests := []struct {
		name   string
		in     []byte
		want   wire.Request
		answer bool  // an *Error to send back
		err    error // otherwise, the sentinel
	}{
		{name: "request", in: cat(0x94, 0, 7, genID, 0x90), want: wire.Request{MsgID: 7, Procedure: wire.ProcGenID}},
		{name: "msgid uint32", in: cat(0x94, 0, 0xce, 0xff, 0xff, 0xff, 0xff, genID, 0x90),
			want: wire.Request{MsgID: math.MaxUint32, Procedure: wire.ProcGenID}},
		{name: "msgid int8", in: cat(0x94, 0, 0xd0, 0x05, genID, 0x90), want: wire.Request{MsgID: 5, Procedure: wire.ProcGenID}},
		{name: "empty params map", in: cat(0x94, 0, 7, genID, 0x91, 0x80),
			want: wire.Request{MsgID: 7, Procedure: wire.ProcGenID, Params: []byte{0x80}}},
		{name: "notification", in: cat(0x93, 2, genID, 0x90), want: wire.Request{Notify: true, Procedure: wire.ProcGenID}},
		{name: "method as bin", in: cat(0x94, 0, 7, 0xc4, 11, "Vesta.GenID", 0x90), want: wire.Request{MsgID: 7, Procedure: wire.ProcGenID}},
		{name: "unknown method", in: cat(0x94, 0, 7, 0xa3, "Foo", 0x90), want: wire.Request{MsgID: 7, Procedure: "Foo"}},

		{name: "not an array", in: []byte{0x05}, err: wire.ErrFrame},
		{name: "map", in: []byte{0x80}, err: wire.ErrFrame},
		{name: "empty array", in: []byte{0x90}, err: wire.ErrFrame},
		{name: "type only", in: []byte{0x91, 0x00}, err: wire.ErrFrame},
		{name: "type 1", in: cat(0x94, 1, 7, 0xc0, 0xc0), err: wire.ErrFrame},
		{name: "type 3", in: cat(0x94, 3, 7, genID, 0x90), err: wire.ErrFrame},
		{name: "type string", in: cat(0x94, 0xa1, "0", 7, genID, 0x90), err: wire.ErrFrame},
		{name: "negative msgid", in: cat(0x94, 0, 0xff, genID, 0x90), err: wire.ErrFrame},
		{name: "msgid over 32 bits", in: cat(0x94, 0, 0xcf, 0, 0, 0, 1, 0, 0, 0, 0, genID, 0x90), err: wire.ErrFrame},
		{name: "msgid float", in: cat(0x94, 0, 0xca, 0, 0, 0, 0, genID, 0x90), err: wire.ErrFrame},
		{name: "notification of 4", in: cat(0x94, 2, genID, 0x90, 0x90), err: wire.ErrFrame},
		{name: "notification with bad params", in: cat(0x93, 2, genID, 0x05), err: wire.ErrFrame},
		{name: "truncated", in: cat(0x94, 0, 7, 0xab, "Vesta"), err: wire.ErrMalformed},
		{name: "trailing bytes", in: cat(0x94, 0, 7, genID, 0x90, 0x90), err: wire.ErrMalformed},

		{name: "three elements", in: cat(0x93, 0, 7, genID), want: wire.Request{MsgID: 7}, answer: true},
		{name: "five elements", in: cat(0x95, 0, 7, genID, 0x90, 0x90), want: wire.Request{MsgID: 7}, answer: true},
		{name: "method int", in: cat(0x94, 0, 7, 0x05, 0x90), want: wire.Request{MsgID: 7}, answer: true},
		{name: "params nil", in: cat(0x94, 0, 7, genID, 0xc0), want: wire.Request{MsgID: 7, Procedure: wire.ProcGenID}, answer: true},
		{name: "params map", in: cat(0x94, 0, 7, genID, 0x80), want: wire.Request{MsgID: 7, Procedure: wire.ProcGenID}, answer: true},
		{name: "params of two", in: cat(0x94, 0, 7, genID, 0x92, 0x80, 0x80), want: wire.Request{MsgID: 7, Procedure: wire.ProcGenID}, answer: true},
		{name: "params positional", in: cat(0x94, 0, 7, genID, 0x91, 0x05), want: wire.Request{MsgID: 7, Procedure: wire.ProcGenID}, answer: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := wire.DecodeRequest(tt.in)
			var we *api.Error
			switch {
			case tt.answer:
				if !errors.As(err, &we) || we.Code != api.InvalidArgument {
					t.Fatalf("err %v; want an invalid_argument *Error", err)
				}
			case tt.err != nil:
				if !errors.Is(err, tt.err) || errors.As(err, &we) {
					t.Fatalf("err %v; want %v", err, tt.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if req.Notify != tt.want.Notify || req.MsgID != tt.want.MsgID || req.Procedure != tt.want.Procedure ||
				!bytes.Equal(req.Params, tt.want.Params) {
				t.Fatalf("got %+v; want %+v", req, tt.want)
			}
		})
	}
}

func TestDecodeRequestCutsLongProcedure(t *testing.T) {
	name := strings.Repeat("m", 1000)
	var e wire.Encoder = *wire.NewEncoder()
	frame, err := e.AppendRequest(nil, 3, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := wire.DecodeRequest(frame)
	if err != nil {
		t.Fatal(err)
	}
	if req.Procedure != name[:wire.MaxProcedureLen] {
		t.Fatalf("method %q", req.Procedure)
	}
}

func TestDecodeParams(t *testing.T) {
	count := func(v ...any) []byte { return cat(0x81, 0xa5, "count", cat(v...)) }
	tests := []struct {
		name string
		in   []byte
		want uint64
		err  string // a substring of the *Error, "" for none
	}{
		{"fixint", count(0x05), 5, ""},
		{"uint8", count(0xcc, 0xff), 255, ""},
		{"uint16", count(0xcd, 0x01, 0x00), 256, ""},
		{"uint32", count(0xce, 0, 1, 0, 0), 65536, ""},
		{"uint64", count(0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), math.MaxUint64, ""},
		{"int8", count(0xd0, 0x7f), 127, ""},
		{"int16", count(0xd1, 0x01, 0x00), 256, ""},
		{"int32", count(0xd2, 0, 1, 0, 0), 65536, ""},
		{"int64", count(0xd3, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), math.MaxInt64, ""},
		{"negfixint", count(0xff), 0, `count: "-1" is negative`},
		{"int8 negative", count(0xd0, 0x80), 0, `count: "-128" is negative`},
		{"int64 negative", count(0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe), 0, `count: "-2" is negative`},
		{"float32", count(0xca, 0x40, 0xa0, 0, 0), 0, "count: want an unsigned integer, got float"},
		{"float64", count(0xcb, 0x40, 0x14, 0, 0, 0, 0, 0, 0), 0, "got float"},
		{"decimal string", count(0xa1, "5"), 5, ""},
		{"leading zeros", count(0xa3, "007"), 7, ""},
		{"string with a space", count(0xa2, " 5"), 0, `count: " 5" is not an unsigned decimal integer`},
		{"signed string", count(0xa2, "+5"), 0, "is not an unsigned decimal integer"},
		{"negative string", count(0xa2, "-5"), 0, `count: "-5" is negative`},
		{"empty string", count(0xa0), 0, "count: empty"},
		{"string past 64 bits", count(0xb4, "18446744073709551616"), 0, "does not fit in 64 bits"},
		{"a name is no count", count(0xa4, "rest"), 0, "not an unsigned decimal integer"},
		{"nil", count(0xc0), 0, "missing field count (null)"},
		{"bool", count(0xc3), 0, "got bool"},
		{"array", count(0x91, 0x05), 0, "got array"},
		{"absent", nil, 0, "missing field count"},
		{"empty map", []byte{0x80}, 0, "missing field count"},
		{"unknown", cat(0x82, 0xa5, "count", 0x05, 0xa1, "x", 0x01), 0, `unknown field "x"`},
		{"twice", cat(0x82, 0xa5, "count", 0x05, 0xa5, "count", 0x06), 0, "count given twice"},
		{"int key", cat(0x81, 0x01, 0x05), 0, "params key: want string, got integer"},
		{"bin key", cat(0x81, 0xc4, 5, "count", 0x05), 5, ""},
		{"not a map", []byte{0x91, 0x05}, 0, "params: want map, got array"},
		{"trailing", cat(0x81, 0xa5, "count", 0x05, 0x05), 0, "trailing"},
		{"truncated value", cat(0x81, 0xa5, "count", 0xcd, 0x01), 0, "truncated integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p wire.GenIDsParams
			err := wire.DecodeParams(tt.in, &p)
			if tt.err == "" {
				if err != nil || p.Count != tt.want {
					t.Fatalf("got %d, %v; want %d", p.Count, err, tt.want)
				}
				return
			}
			var we *api.Error
			if !errors.As(err, &we) || we.Code != api.InvalidArgument || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v; want invalid_argument with %q", err, tt.err)
			}
		})
	}
}

func TestDecodeParamsKinds(t *testing.T) {
	var none struct{}
	if err := wire.DecodeParams(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := wire.DecodeParams([]byte{0x80}, nil); err != nil {
		t.Fatal(err)
	}
	if err := wire.DecodeParams(cat(0x81, 0xa1, "x", 0x01), nil); err == nil || !strings.Contains(err.Error(), "takes no params") {
		t.Fatalf("err %v", err)
	}
	if err := wire.DecodeParams([]byte{0x80}, &none); err == nil {
		t.Fatal("decoded into an unknown type")
	}
	e := wire.NewEncoder()
	for _, p := range []any{
		&wire.ExpIDParams{ID: math.MaxUint64},
		&wire.TransTimeParams{Time: 1 << 39},
		&wire.MakeIDParams{Time: 1, Seq: 2},
		&wire.MakeIDParams{Time: 1, Seq: 2, Machine: u64p(3), Method: u64p(0), Type: u64p(1), Version: u64p(1)},
	} {
		frame, err := e.AppendRequest(nil, 1, "m", p)
		if err != nil {
			t.Fatal(err)
		}
		req, err := wire.DecodeRequest(frame)
		if err != nil {
			t.Fatal(err)
		}
		got := newOf(p)
		if err := wire.DecodeParams(req.Params, got); err != nil {
			t.Fatalf("%T: %v", p, err)
		}
		if fmt.Sprint(deref(got)) != fmt.Sprint(deref(p)) {
			t.Fatalf("got %+v; want %+v", deref(got), deref(p))
		}
	}
}

func newOf(p any) any {
	switch p.(type) {
	case *wire.ExpIDParams:
		return new(wire.ExpIDParams)
	case *wire.TransTimeParams:
		return new(wire.TransTimeParams)
	}
	return new(wire.MakeIDParams)
}

// deref prints the values behind MakeIDParams' pointers.
func deref(p any) string {
	m, ok := p.(*wire.MakeIDParams)
	if !ok {
		return fmt.Sprintf("%+v", p)
	}
	s := fmt.Sprintf("%d %d", m.Time, m.Seq)
	for _, f := range []*uint64{m.Machine, m.Method, m.Type, m.Version} {
		if f == nil {
			s += " nil"
		} else {
			s += fmt.Sprintf(" %d", *f)
		}
	}
	return s
}

func TestMakeIDParamsPartial(t *testing.T) {
	p := core.Partial{Time: 9, Seq: 8, Machine: u64p(7)}
	if got := wire.MakeIDParamsOf(p).Partial(); fmt.Sprint(got.Time, got.Seq, *got.Machine, got.Method) != "9 8 7 <nil>" {
		t.Fatalf("round trip: %+v", got)
	}
}

func TestResponses(t *testing.T) {
	e := wire.NewEncoder()
	// [1, 7, nil, 2^63+5]: a version-1 ID is a uint 64 on the wire.
	got, err := e.AppendResponse(nil, 7, nil, uint64(1<<63+5))
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x94, 0x01, 0x07, 0xc0, 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0x05}
	if !bytes.Equal(got, want) {
		t.Fatalf("response % x; want % x", got, want)
	}
	resp, err := wire.DecodeResponse(got)
	if err != nil || resp.MsgID != 7 || resp.Error != nil {
		t.Fatalf("%+v, %v", resp, err)
	}
	var id uint64
	if err := wire.DecodeResult(resp.Result, &id); err != nil || id != 1<<63+5 {
		t.Fatalf("result %d, %v", id, err)
	}

	got, err = e.AppendResponse(got[:0], 8, api.Errorf(api.InvalidArgument, "count 0; want 1-10000"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want = cat(0x94, 0x01, 0x08, 0xd9, 39, "invalid_argument: count 0; want 1-10000", 0xc0)
	if !bytes.Equal(got, want) {
		t.Fatalf("error response % x; want % x", got, want)
	}
	resp, err = wire.DecodeResponse(got)
	if err != nil || resp.MsgID != 8 || resp.Result != nil ||
		!errors.Is(resp.Error, &api.Error{Code: api.InvalidArgument}) || resp.Error.Message != "count 0; want 1-10000" {
		t.Fatalf("%+v, %v", resp, err)
	}

	ids := []uint64{1, 1 << 40, math.MaxUint64}
	got, _ = e.AppendResponse(nil, 9, nil, ids)
	resp, _ = wire.DecodeResponse(got)
	var back []uint64
	if err := wire.DecodeResult(resp.Result, &back); err != nil || fmt.Sprint(back) != fmt.Sprint(ids) {
		t.Fatalf("ids %v, %v", back, err)
	}

	info := wire.Info{Layout: "vesta", Epoch: wire.FormatEpoch(core.VestaEpoch), Type: 1, Machine: 1000, Method: 1, MaxBatch: 10000}
	got, _ = e.AppendResponse(nil, 10, nil, info)
	resp, _ = wire.DecodeResponse(got)
	var info2 wire.Info
	if err := wire.DecodeResult(resp.Result, &info2); err != nil || info2 != info {
		t.Fatalf("info %+v, %v", info2, err)
	}
	c, err := info2.Codec()
	if err != nil || c.Layout() != core.Vesta || !c.Epoch().Equal(core.VestaEpoch) {
		t.Fatalf("codec %v %v, %v", c.Layout(), c.Epoch(), err)
	}
}

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		code api.Code // of the decoded error; "" for a result
		err  error
	}{
		{"result", []byte{0x94, 1, 3, 0xc0, 0x05}, "", nil},
		{"unknown code", cat(0x94, 1, 3, 0xa4, "oops", 0xc0), api.Internal, nil},
		{"error not a string", []byte{0x94, 1, 3, 0x81, 0x01, 0x02, 0xc0}, api.Internal, nil},
		{"request", []byte{0x94, 0, 3, 0xc0, 0x90}, "", wire.ErrFrame},
		{"three elements", []byte{0x93, 1, 3, 0xc0}, "", wire.ErrFrame},
		{"msgid negative", []byte{0x94, 1, 0xff, 0xc0, 0x05}, "", wire.ErrFrame},
		{"truncated result", []byte{0x94, 1, 3, 0xc0, 0xcd}, "", wire.ErrMalformed},
		{"truncated error", []byte{0x94, 1, 3, 0x92, 0x01}, "", wire.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := wire.DecodeResponse(tt.in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err %v; want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.code == "" && (resp.Error != nil || resp.Result == nil) {
				t.Fatalf("%+v", resp)
			}
			if tt.code != "" && (resp.Error == nil || resp.Error.Code != tt.code || resp.Result != nil) {
				t.Fatalf("%+v", resp)
			}
		})
	}
	if err := wire.DecodeResult([]byte{0xa1, 'x'}, new(uint64)); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("DecodeResult: %v", err)
	}
	if err := wire.DecodeResult(nil, new(uint64)); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("DecodeResult: %v", err)
	}
}

func TestParseError(t *testing.T) {
	tests := []struct {
		in   string
		code api.Code
		msg  string
	}{
		{"invalid_argument: count 0; want 1-10000", api.InvalidArgument, "count 0; want 1-10000"},
		{`invalid_argument: unknown method "Vesta.Foo"`, api.InvalidArgument, `unknown method "Vesta.Foo"`},
		{"unavailable: server shutting down", api.Unavailable, "server shutting down"},
		{"lease_lost: core: issuing is fenced", api.LeaseLost, "core: issuing is fenced"},
		{"clock: behind", api.Clock, "behind"},
		{"internal: x: y", api.Internal, "x: y"},
		{"clock", api.Clock, ""},
		{"teapot: short and stout", api.Internal, "teapot: short and stout"},
		{"", api.Internal, ""},
	}
	for _, tt := range tests {
		e := api.ParseError(tt.in)
		if e.Code != tt.code || e.Message != tt.msg {
			t.Errorf("ParseError(%q) = %q, %q; want %q, %q", tt.in, e.Code, e.Message, tt.code, tt.msg)
		}
		if tt.code != api.Internal || strings.HasPrefix(tt.in, "internal") {
			if e.Error() != tt.in {
				t.Errorf("ParseError(%q).Error() = %q", tt.in, e.Error())
			}
		}
	}
	for _, c := range api.Codes() {
		if !c.Known() {
			t.Errorf("%s not known", c)
		}
	}
	if api.Code("teapot").Known() || api.InvalidArgument.Retryable() || !api.Unavailable.Retryable() {
		t.Error("Known or Retryable")
	}
	var err error = fmt.Errorf("call: %w", api.Errorf(api.LeaseLost, "fenced"))
	if !errors.Is(err, &api.Error{Code: api.LeaseLost}) || errors.Is(err, &api.Error{Code: api.Clock}) ||
		errors.Is(err, &api.Error{Code: api.LeaseLost, Message: "other"}) {
		t.Error("errors.Is by code")
	}
}

func TestReader(t *testing.T) {
	e := wire.NewEncoder()
	var stream []byte
	for i := range 50 {
		stream, _ = e.AppendRequest(stream, uint32(i), wire.ProcGenIDs, &wire.GenIDsParams{Count: uint64(i)})
	}
	r := wire.NewReader(iotest.OneByteReader(bytes.NewReader(stream)), 64)
	for i := range 50 {
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		req, err := wire.DecodeRequest(f)
		if err != nil || req.MsgID != uint32(i) {
			t.Fatalf("frame %d: %+v, %v", i, req, err)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("again: %v", err)
	}

	r = wire.NewReader(bytes.NewReader(stream[:10]), 64)
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut frame: %v", err)
	}
	r = wire.NewReader(bytes.NewReader(cat(0xdb, 0xff, 0xff, 0xff, 0xff)), 64)
	if _, err := r.Next(); !errors.Is(err, wire.ErrTooLarge) {
		t.Fatalf("huge: %v", err)
	}
	// A frame that needs the buffer to grow to the limit.
	large := cat(0xda, 0x10, 0x00, bytes.Repeat([]byte{'x'}, 4096))
	r = wire.NewReader(iotest.HalfReader(bytes.NewReader(large)), 8192)
	if f, err := r.Next(); err != nil || len(f) != len(large) || r.Buffered() != 0 {
		t.Fatalf("large: %d, %v", len(f), err)
	}
}

func TestMaxResponseBytes(t *testing.T) {
	e := wire.NewEncoder()
	ids := make([]uint64, 10000)
	for i := range ids {
		ids[i] = math.MaxUint64 - uint64(i)
	}
	frame, _ := e.AppendResponse(nil, math.MaxUint32, nil, ids)
	if n, err := wire.Split(frame, wire.MaxResponseBytes(len(ids))); err != nil || n != len(frame) {
		t.Fatalf("Split = %d, %v; frame of %d bytes", n, err, len(frame))
	}
}

func TestExplanationOf(t *testing.T) {
	c, _ := core.NewCodec(core.Vesta, time.Time{})
	x := wire.ExplanationOf(c.Explain(2610813175020394494))
	want := wire.Explanation{ID: 2610813175020394494, Type: 0, TypeName: "max-peak", Method: 2, MethodName: "rest",
		Time: 284025600, Seq: 5, Machine: 1022, Timestamp: "2024-01-01T00:00:00Z"}
	if x != want {
		t.Fatalf("got %+v; want %+v", x, want)
	}
	tt := wire.TransTimeResultOf(core.MinGranularity, time.UnixMilli(1700000000123))
	if tt.UnixMS != 1700000000123 || tt.Timestamp != "2023-11-14T22:13:20.123Z" {
		t.Fatalf("%+v", tt)
	}
}

func ExampleEncoder_AppendRequest() {
	e := wire.NewEncoder()
	frame, _ := e.AppendRequest(nil, 1, wire.ProcGenID, nil)
	fmt.Printf("% x\n", frame)
	frame, _ = e.AppendRequest(nil, 2, wire.ProcGenIDs, &wire.GenIDsParams{Count: 1000})
	fmt.Printf("% x\n", frame)
	// Output:
	// 94 00 01 ab 56 65 73 74 61 2e 47 65 6e 49 44 90
	// 94 00 02 ac 56 65 73 74 61 2e 47 65 6e 49 44 73 91 81 a5 63 6f 75 6e 74 cd 03 e8
}

func ExampleParseError() {
	e := api.ParseError("invalid_argument: count 0; want 1-10000")
	fmt.Println(e.Code, e.Code.Retryable())
	fmt.Println(e.Message)
	// Output:
	// invalid_argument false
	// count 0; want 1-10000
}
