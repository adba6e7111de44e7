package wire

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"
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
	f := frame4{Type: TypeResponse, MsgID: msgid, B: result}
	if err != nil {
		f.A, f.B = err.Error(), nil
	}
	return e.append(dst, f)
}

// DecodeResult decodes a Response's Result into v: *uint64 (Vesta.GenID,
// Vesta.MakeID), *[]uint64 (Vesta.GenIDs), *Explanation, *TransTimeResult or
// *Info. Keys it does not know are ignored, so a later server may add some.
func DecodeResult(result []byte, v any) error {
	if len(result) == 0 {
		return fmt.Errorf("%w: empty result", ErrMalformed)
	}
	d := codec.NewDecoderBytes(result, handle)
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: result: %w", ErrMalformed, err)
	}
	return nil
}
