package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/vesta-go/vesta/api"
)

// Frame types, the first element of every frame.
const (
	TypeRequest      = 0
	TypeResponse     = 1
	TypeNotification = 2
)

// Request is a decoded request or notification frame. Procedure and Params
// alias the frame's bytes, except Procedure when it names a known one.
type Request struct {
	// Notify marks a notification ([2, method, params]), which has no msgid
	// and is never answered.
	Notify bool
	MsgID  uint32
	// Procedure is the procedure name (msgpack-RPC's method field); a name
	// longer than MaxProcedureLen is cut.
	Procedure string
	// Params is the msgpack map that params holds, or nil when params is
	// an empty array. See DecodeParams.
	Params []byte
}

// MaxProcedureLen bounds the procedure names kept from requests, so an unknown
// name of kilobytes is never echoed or logged whole.
const MaxProcedureLen = 64

// DecodeRequest decodes one frame as found by Split; bytes that are not
// exactly one MessagePack object fail with ErrMalformed. When the frame is a
// request whose msgid could be read but that is wrong further on, the error
// is an *Error (InvalidArgument) and req.MsgID is set: answer it and go on.
// Any other error (ErrMalformed, ErrFrame) means there is nobody to answer.
func DecodeRequest(frame []byte) (req Request, err error) {
	if n, err := Split(frame, len(frame)); err != nil || n != len(frame) {
		return req, fmt.Errorf("%w: not one complete object", ErrMalformed)
	}
	r := reader{b: frame}
	n, err := r.arrayLen()
	if err != nil {
		return req, fmt.Errorf("%w: a frame must be an array: %w", ErrFrame, err)
	}
	if n == 0 {
		return req, fmt.Errorf("%w: empty array", ErrFrame)
	}
	typ, err := r.uint()
	if err != nil {
		return req, fmt.Errorf("%w: frame type: %w", ErrFrame, err)
	}
	switch typ {
	case TypeRequest:
		if n < 2 {
			return req, fmt.Errorf("%w: a request of %d elements has no msgid", ErrFrame, n)
		}
		id, err := r.uint()
		if err != nil || id > math.MaxUint32 {
			return req, fmt.Errorf("%w: msgid must be an unsigned 32-bit integer", ErrFrame)
		}
		req.MsgID = uint32(id)
		if n != 4 {
			return req, api.Errorf(api.InvalidArgument, "a request has 4 elements, not %d", n)
		}
	case TypeNotification:
		if n != 3 {
			return req, fmt.Errorf("%w: a notification has 3 elements, not %d", ErrFrame, n)
		}
		req.Notify = true
	default:
		return req, fmt.Errorf("%w: frame type %d; want %d (request) or %d (notification)",
			ErrFrame, typ, TypeRequest, TypeNotification)
	}
	req.Procedure, req.Params, err = r.call()
	if err != nil && req.Notify {
		return req, fmt.Errorf("%w: notification: %v", ErrFrame, err)
	}
	return req, err
}

// call reads the procedure (the method field) and params of a request or
// notification.
func (r *reader) call() (string, []byte, error) {
	m, err := r.str()
	if err != nil {
		return "", nil, api.Errorf(api.InvalidArgument, "method must be a string: %v", err)
	}
	proc := internProcedure(m)
	n, err := r.arrayLen()
	if err != nil {
		return proc, nil, api.Errorf(api.InvalidArgument, "params must be an array: %v", err)
	}
	switch n {
	case 0:
		return proc, nil, nil
	case 1:
	default:
		return proc, nil, api.Errorf(api.InvalidArgument, "params holds %d elements; want at most one map", n)
	}
	start := r.i
	if _, err := r.mapLen(); err != nil {
		return proc, nil, api.Errorf(api.InvalidArgument, "params[0] must be a map: %v", err)
	}
	r.i = start
	if err := r.skip(); err != nil {
		return proc, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return proc, r.b[start:r.i], nil
}

// internProcedure returns the constant for a known procedure name, so decoding
// the common requests allocates nothing, and a bounded copy otherwise.
func internProcedure(b []byte) string {
	for _, m := range procedures {
		if string(b) == m {
			return m
		}
	}
	if len(b) > MaxProcedureLen {
		b = b[:MaxProcedureLen]
	}
	return string(b)
}

// Response is a decoded response frame. Result aliases the frame.
type Response struct {
	MsgID uint32
	// Error is the error of a failed call, nil on success.
	Error *api.Error
	// Result is the msgpack result, for DecodeResult; nil with an Error.
	Result []byte
}

// DecodeResponse decodes one frame as found by Split. An error string is
// parsed with ParseError; an error that is not a string (not sent by this
// server) becomes Internal.
func DecodeResponse(frame []byte) (resp Response, err error) {
	r := reader{b: frame}
	n, err := r.arrayLen()
	if err != nil || n != 4 {
		return resp, fmt.Errorf("%w: a response is an array of 4 elements", ErrFrame)
	}
	if typ, err := r.uint(); err != nil || typ != TypeResponse {
		return resp, fmt.Errorf("%w: frame type must be %d (response)", ErrFrame, TypeResponse)
	}
	id, err := r.uint()
	if err != nil || id > math.MaxUint32 {
		return resp, fmt.Errorf("%w: msgid must be an unsigned 32-bit integer", ErrFrame)
	}
	resp.MsgID = uint32(id)
	if r.isNil() {
		r.i++
	} else if s, err := r.str(); err == nil {
		resp.Error = api.ParseError(string(s))
	} else {
		start := r.i
		if err := r.skip(); err != nil {
			return resp, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		resp.Error = api.Errorf(api.Internal, "error of msgpack type 0x%02x", r.b[start])
	}
	start := r.i
	if err := r.skip(); err != nil {
		return resp, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if resp.Error == nil {
		resp.Result = r.b[start:r.i]
	}
	return resp, nil
}

// reader reads msgpack values from a complete frame. Every read checks its
// bounds: DecodeRequest may be handed bytes Split never saw.
type reader struct {
	b []byte
	i int
}

func (r *reader) isNil() bool { return r.i < len(r.b) && r.b[r.i] == 0xc0 }

// kind names the msgpack type at the read position, for errors.
func (r *reader) kind() string {
	if r.i >= len(r.b) {
		return "end of frame"
	}
	c := r.b[r.i]
	switch {
	case c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3):
		return "integer"
	case c <= 0x8f || c == 0xde || c == 0xdf:
		return "map"
	case c <= 0x9f || c == 0xdc || c == 0xdd:
		return "array"
	case c <= 0xbf || (c >= 0xd9 && c <= 0xdb):
		return "string"
	case c == 0xc0:
		return "nil"
	case c == 0xc2 || c == 0xc3:
		return "bool"
	case c >= 0xc4 && c <= 0xc6:
		return "binary"
	case c == 0xca || c == 0xcb:
		return "float"
	}
	return "extension"
}

func (r *reader) want(what string) error {
	return fmt.Errorf("want %s, got %s", what, r.kind())
}

// length reads a w-byte big-endian length after the type byte.
func (r *reader) length(w int) (uint64, error) {
	l, err := uintAt(r.b, r.i+1, w)
	if err != nil {
		return 0, fmt.Errorf("%w: truncated length", ErrMalformed)
	}
	r.i += 1 + w
	return l, nil
}

func (r *reader) arrayLen() (uint64, error) { return r.containerLen(0x90, 0xdc, 0xdd, "array") }

func (r *reader) mapLen() (uint64, error) { return r.containerLen(0x80, 0xde, 0xdf, "map") }

// containerLen reads the length of an array or a map (what): its fix form
// (fix with the length in the low four bits), or its 16- or 32-bit form
// (the codes c16 and c32).
func (r *reader) containerLen(fix, c16, c32 byte, what string) (uint64, error) {
	if r.i >= len(r.b) {
		return 0, r.want(what)
	}
	switch c := r.b[r.i]; {
	case c&0xf0 == fix:
		r.i++
		return uint64(c & 0x0f), nil
	case c == c16:
		return r.length(2)
	case c == c32:
		return r.length(4)
	}
	return 0, r.want(what)
}

// str reads a string; binary is accepted too, as old-spec encoders write
// every string as "raw".
func (r *reader) str() ([]byte, error) {
	if r.i >= len(r.b) {
		return nil, r.want("string")
	}
	var l uint64
	var err error
	switch c := r.b[r.i]; {
	case c >= 0xa0 && c <= 0xbf:
		l = uint64(c & 0x1f)
		r.i++
	case c == 0xd9 || c == 0xc4:
		l, err = r.length(1)
	case c == 0xda || c == 0xc5:
		l, err = r.length(2)
	case c == 0xdb || c == 0xc6:
		l, err = r.length(4)
	default:
		return nil, r.want("string")
	}
	if err != nil {
		return nil, err
	}
	if l > uint64(len(r.b)-r.i) {
		return nil, fmt.Errorf("%w: truncated string", ErrMalformed)
	}
	s := r.b[r.i : r.i+int(l)]
	r.i += int(l)
	return s, nil
}

// uint reads a non-negative integer in any msgpack integer encoding.
func (r *reader) uint() (uint64, error) {
	if r.i >= len(r.b) {
		return 0, r.want("an unsigned integer")
	}
	c := r.b[r.i]
	if c <= 0x7f {
		r.i++
		return uint64(c), nil
	}
	if c >= 0xe0 {
		return 0, fmt.Errorf("want an unsigned integer, got %d", int8(c))
	}
	if c < 0xcc || c > 0xd3 {
		return 0, r.want("an unsigned integer")
	}
	u, w, err := r.fixedInt(c)
	if err != nil {
		return 0, err
	}
	if c >= 0xd0 { // signed: sign-extend and refuse negatives
		v := int64(u<<(64-8*w)) >> (64 - 8*w)
		if v < 0 {
			return 0, fmt.Errorf("want an unsigned integer, got %d", v)
		}
		u = uint64(v)
	}
	r.i += 1 + w
	return u, nil
}

// fixedInt reads the payload of the fixed-width integer whose type byte c
// (0xcc-0xd3) is at r.i, without moving r.i: its raw bits and its width in
// bytes. uint and int share it and differ in what they accept.
func (r *reader) fixedInt(c byte) (u uint64, w int, err error) {
	w = int(fixedWidth[c-0xca])
	if r.i+1+w > len(r.b) {
		return 0, 0, fmt.Errorf("%w: truncated integer", ErrMalformed)
	}
	p := r.b[r.i+1 : r.i+1+w]
	switch w {
	case 1:
		u = uint64(p[0])
	case 2:
		u = uint64(binary.BigEndian.Uint16(p))
	case 4:
		u = uint64(binary.BigEndian.Uint32(p))
	default:
		u = binary.BigEndian.Uint64(p)
	}
	return u, w, nil
}

// skip moves past one object.
func (r *reader) skip() error {
	n, err := Split(r.b[r.i:], len(r.b)-r.i)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: truncated", ErrMalformed)
	}
	r.i += n
	return nil
}

// quote formats b for an error message: quoted and cut to MaxProcedureLen.
func quote(b []byte) string {
	if len(b) > MaxProcedureLen {
		return strconv.Quote(string(b[:MaxProcedureLen])) + "..."
	}
	return strconv.Quote(string(b))
}
