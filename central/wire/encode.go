package wire

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/vesta-go/vesta/core"
)

// handle is the codec's configuration, shared by every Encoder and by
// DecodeResult. WriteExt writes the current spec (str 8, bin); results are
// decoded from complete frames only, within the bounds below.
var handle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{WriteExt: true}
	h.MaxInitLen = 1024 // never pre-allocate more elements than that
	h.MaxDepth = MaxDepth
	h.RawToString = true
	return h
}()

// frame4 is a request or response: [type, msgid, method|error, params|result].
type frame4 struct {
	//lint:ignore U1000 the codec reads its tag
	_struct bool `codec:",toarray"`
	Type    uint8
	MsgID   uint32
	A       any
	B       any
}

// frame3 is a notification: [2, method, params].
type frame3 struct {
	//lint:ignore U1000 the codec reads its tag
	_struct bool `codec:",toarray"`
	Type    uint8
	Method  string
	Params  any
}

// noParams and oneParam encode the params array: [] and [p].
type noParams struct {
	//lint:ignore U1000 the codec reads its tag
	_struct bool `codec:",toarray"`
}

type oneParam struct {
	//lint:ignore U1000 the codec reads its tag
	_struct bool `codec:",toarray"`
	P       any
}

func paramsOf(p any) any {
	if p == nil {
		return noParams{}
	}
	return oneParam{P: p}
}

// Encoder appends frames to byte slices with the codec. It is not safe for
// concurrent use; keep one per connection (or per writer).
type Encoder struct {
	enc     *codec.Encoder
	scratch []byte
}

// NewEncoder returns an Encoder.
func NewEncoder() *Encoder {
	e := &Encoder{scratch: make([]byte, 0, 256)}
	e.enc = codec.NewEncoderBytes(&e.scratch, handle)
	return e
}

func (e *Encoder) append(dst []byte, v any) ([]byte, error) {
	e.scratch = e.scratch[:0]
	e.enc.ResetBytes(&e.scratch)
	if err := e.enc.Encode(v); err != nil {
		return dst, fmt.Errorf("wire: encode: %w", err)
	}
	dst = append(dst, e.scratch...)
	if cap(e.scratch) > 64<<10 { // do not keep a large batch's buffer
		e.scratch = make([]byte, 0, 256)
	}
	return dst, nil
}

// AppendRequest appends the request [0, msgid, method, params] to dst.
// params is nil (no arguments) or one of the *Params structs (or any value
// that encodes as a map).
func (e *Encoder) AppendRequest(dst []byte, msgid uint32, method string, params any) ([]byte, error) {
	switch p := params.(type) {
	case nil: // Vesta.GenID, the most common request of old clients
		dst = append(dst, 0x94, TypeRequest)
		dst = appendUint(dst, uint64(msgid))
		dst = appendStr(dst, method)
		return append(dst, 0x90), nil
	case *TakeIDsParams: // the most common request of new clients
		return appendCountRequest(dst, msgid, method, p.Count), nil
	case TakeIDsParams:
		return appendCountRequest(dst, msgid, method, p.Count), nil
	case *GenIDsParams:
		return appendCountRequest(dst, msgid, method, p.Count), nil
	case GenIDsParams:
		return appendCountRequest(dst, msgid, method, p.Count), nil
	}
	return e.append(dst, frame4{Type: TypeRequest, MsgID: msgid, A: method, B: paramsOf(params)})
}

// AppendNotification appends the notification [2, method, params] to dst.
func (e *Encoder) AppendNotification(dst []byte, method string, params any) ([]byte, error) {
	return e.append(dst, frame3{Type: TypeNotification, Method: method, Params: paramsOf(params)})
}

// AppendResponse appends the response [1, msgid, error, result] to dst:
// with err non-nil, the error string and a nil result; otherwise a nil error
// and result.
func (e *Encoder) AppendResponse(dst []byte, msgid uint32, err *Error, result any) ([]byte, error) {
	if err == nil {
		switch r := result.(type) {
		case uint64:
			return AppendIDResponse(dst, msgid, r), nil
		case []core.ID: // Vesta.GenIDs: the codec would reflect on every ID
			dst = append(dst, 0x94, TypeResponse)
			dst = appendUint(dst, uint64(msgid))
			return appendIDs(append(dst, 0xc0), r), nil
		case TakeIDsResult:
			dst = append(dst, 0x94, TypeResponse)
			dst = appendUint(dst, uint64(msgid))
			dst = append(dst, 0xc0, 0x82)
			dst = appendStr(dst, "ids")
			dst = appendArrayLen(dst, len(r.IDs))
			for _, id := range r.IDs {
				dst = appendUint(dst, id)
			}
			dst = appendStr(dst, "retry_after_ms")
			return appendUint(dst, r.RetryAfterMS), nil
		case int64: // Vesta.NextSeq
			return AppendIntResponse(dst, msgid, r), nil
		case []int64: // Vesta.NextSeqs
			return appendIntsResponse(dst, msgid, r), nil
		}
	}
	if err != nil { // by hand too: a server refusing a flood answers many
		dst = append(dst, 0x94, TypeResponse)
		dst = appendUint(dst, uint64(msgid))
		return append(appendStr(dst, err.Error()), 0xc0), nil
	}
	return e.append(dst, frame4{Type: TypeResponse, MsgID: msgid, B: result})
}

// AppendIDResponse appends the response [1, msgid, nil, id] to dst, as
// AppendResponse does for a uint64 result, without an Encoder: the answer
// to Vesta.GenID and Vesta.MakeID.
func AppendIDResponse(dst []byte, msgid uint32, id uint64) []byte {
	dst = append(dst, 0x94, TypeResponse)
	dst = appendUint(dst, uint64(msgid))
	return appendUint(append(dst, 0xc0), id)
}

// AppendTakeIDsResponse appends the answer to Vesta.TakeIDs,
// [1, msgid, nil, {"ids": ids, "retry_after_ms": retryAfterMS}], to dst,
// as AppendResponse does for a TakeIDsResult holding the same values,
// without an Encoder and without converting the IDs.
func AppendTakeIDsResponse(dst []byte, msgid uint32, ids []core.ID, retryAfterMS uint64) []byte {
	dst = append(dst, 0x94, TypeResponse)
	dst = appendUint(dst, uint64(msgid))
	dst = append(dst, 0xc0, 0x82)
	dst = appendStr(dst, "ids")
	dst = appendIDs(dst, ids)
	dst = appendStr(dst, "retry_after_ms")
	return appendUint(dst, retryAfterMS)
}

// appendCountRequest appends [0, msgid, method, [{"count": count}]], the
// request of Vesta.GenIDs and Vesta.TakeIDs.
func appendCountRequest(dst []byte, msgid uint32, method string, count uint64) []byte {
	dst = append(dst, 0x94, TypeRequest)
	dst = appendUint(dst, uint64(msgid))
	dst = appendStr(dst, method)
	dst = append(dst, 0x91, 0x81)
	dst = appendStr(dst, "count")
	return appendUint(dst, count)
}

func appendIDs(dst []byte, ids []core.ID) []byte {
	dst = appendArrayLen(dst, len(ids))
	for _, id := range ids {
		dst = appendUint(dst, uint64(id))
	}
	return dst
}

// The frames sent most often are written by the functions below rather
// than by the codec, which reflects on each value; they write what the
// codec writes, byte for byte (see the tests).

// appendUint writes v in the shortest unsigned encoding.
func appendUint(dst []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(dst, byte(v))
	case v <= 0xff:
		return append(dst, 0xcc, byte(v))
	case v <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(v))
	case v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), v)
}

// appendStr writes s as a str (str 8 for 32-255 bytes: the current spec).
func appendStr(dst []byte, s string) []byte {
	switch n := len(s); {
	case n <= 31:
		dst = append(dst, 0xa0|byte(n))
	case n <= 0xff:
		dst = append(dst, 0xd9, byte(n))
	case n <= 0xffff:
		dst = binary.BigEndian.AppendUint16(append(dst, 0xda), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
	}
	return append(dst, s...)
}

func appendArrayLen(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, 0x90|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xdd), uint32(n))
}

// DecodeResult decodes a Response's Result into v: *uint64 (Vesta.GenID,
// Vesta.MakeID), *[]uint64 (Vesta.GenIDs), *TakeIDsResult, *int64
// (Vesta.NextSeq), *[]int64 (Vesta.NextSeqs), *Explanation, *TransTimeResult
// or *Info. Keys it does not know are ignored, so a later server may add
// some. The slices of *[]uint64 and *TakeIDsResult are reused when they have
// room.
func DecodeResult(result []byte, v any) error {
	if len(result) == 0 {
		return fmt.Errorf("%w: empty result", ErrMalformed)
	}
	var err error
	switch v := v.(type) {
	case *uint64: // the most common results, read without the codec
		r := reader{b: result}
		*v, err = r.uint()
	case *[]uint64:
		*v, err = decodeUints(result, (*v)[:0])
	case *int64: // Vesta.NextSeq
		r := reader{b: result}
		*v, err = r.int()
	case *[]int64: // Vesta.NextSeqs
		*v, err = decodeInts(result, (*v)[:0])
	case *TakeIDsResult: // NextID's answer with a new server: by hand too
		err = decodeTakeIDs(result, v)
	default:
		// The codec leaves the fields of absent keys as they were: start
		// from zero, so an old server's Info reads TakeIDs 0.
		switch v := v.(type) {
		case *Info:
			*v = Info{}
		case *Explanation:
			*v = Explanation{}
		case *TransTimeResult:
			*v = TransTimeResult{}
		}
		d := decoders.Get().(*codec.Decoder)
		d.ResetBytes(result)
		err = d.Decode(v)
		d.ResetBytes([]byte{}) // drop the result
		decoders.Put(d)
	}
	if err != nil {
		return fmt.Errorf("%w: result: %w", ErrMalformed, err)
	}
	return nil
}

// decoders are reused: a new Decoder costs some 500 bytes.
var decoders = sync.Pool{New: func() any { return codec.NewDecoderBytes(nil, handle) }}

// decodeTakeIDs reads a TakeIDsResult map: "ids" is required (an array of
// unsigned integers, never nil), "retry_after_ms" optional (0), each at
// most once; other keys are skipped. Nothing past the map is allowed.
func decodeTakeIDs(b []byte, v *TakeIDsResult) error {
	r := reader{b: b}
	n, err := r.mapLen()
	if err != nil {
		return err
	}
	ids, retry := v.IDs[:0], uint64(0)
	var seenIDs, seenRetry bool
	for ; n > 0; n-- {
		key, err := r.str()
		if err != nil {
			return fmt.Errorf("key: %w", err)
		}
		switch string(key) {
		case "ids":
			if seenIDs {
				return fmt.Errorf("key ids given twice")
			}
			seenIDs = true
			start := r.i
			if r.isNil() {
				return fmt.Errorf("ids: want an array, got nil")
			}
			if err := r.skip(); err != nil {
				return fmt.Errorf("ids: %w", err)
			}
			if ids, err = decodeUints(b[start:r.i], ids); err != nil {
				return fmt.Errorf("ids: %w", err)
			}
		case "retry_after_ms":
			if seenRetry {
				return fmt.Errorf("key retry_after_ms given twice")
			}
			seenRetry = true
			if retry, err = r.uint(); err != nil {
				return fmt.Errorf("retry_after_ms: %w", err)
			}
		default:
			if err := r.skip(); err != nil {
				return fmt.Errorf("%s: %w", quote(key), err)
			}
		}
	}
	if r.i != len(b) {
		return fmt.Errorf("trailing bytes after the map")
	}
	if !seenIDs {
		return fmt.Errorf("missing key ids")
	}
	if ids == nil {
		ids = []uint64{}
	}
	v.IDs, v.RetryAfterMS = ids, retry
	return nil
}

// decodeUints reads an array of unsigned integers into dst.
func decodeUints(b []byte, dst []uint64) ([]uint64, error) {
	r := reader{b: b}
	if r.isNil() {
		return nil, nil
	}
	n, err := r.arrayLen()
	if err != nil {
		return dst, err
	}
	if n > uint64(len(b)) { // one byte at least each: never trust a header
		return dst, fmt.Errorf("an array of %d in %d bytes", n, len(b))
	}
	if dst == nil {
		dst = make([]uint64, 0, n)
	}
	for ; n > 0; n-- {
		u, err := r.uint()
		if err != nil {
			return dst, err
		}
		dst = append(dst, u)
	}
	return dst, nil
}
