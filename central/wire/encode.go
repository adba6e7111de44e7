package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
)

// Encoder appends frames to byte slices. Every frame is written by hand
// (see values.go), so an Encoder holds no state today; it stays a type so
// that a connection keeps one per writer, as it may need a scratch buffer
// again. It is not safe for concurrent use.
type Encoder struct{}

// NewEncoder returns an Encoder.
func NewEncoder() *Encoder { return &Encoder{} }

// appendParams writes the params array: [] for nil, else [params]. On an
// error it returns dst as it was.
func appendParams(dst []byte, params any) ([]byte, error) {
	if params == nil {
		return append(dst, 0x90), nil
	}
	out, err := appendValue(append(dst, 0x91), params)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// AppendRequest appends the request [0, msgid, method, params] to dst; proc
// is the procedure name, which the method field holds.
// params is nil (no arguments), one of the *Params structs, or a plain map
// with string keys (see appendValue); a value of another type is an error.
func (e *Encoder) AppendRequest(dst []byte, msgid uint32, proc string, params any) ([]byte, error) {
	out := append(dst, 0x94, TypeRequest)
	out = appendStr(appendUint(out, uint64(msgid)), proc)
	out, err := appendParams(out, params)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// AppendNotification appends the notification [2, method, params] to dst.
func (e *Encoder) AppendNotification(dst []byte, proc string, params any) ([]byte, error) {
	out, err := appendParams(appendStr(append(dst, 0x93, TypeNotification), proc), params)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// AppendResponse appends the response [1, msgid, error, result] to dst:
// with err non-nil, the error string and a nil result; otherwise a nil error
// and result (a uint64, []uint64, []core.ID, int64, []int64, TakeIDsResult,
// Explanation, TransTimeResult or Info).
func (e *Encoder) AppendResponse(dst []byte, msgid uint32, err *api.Error, result any) ([]byte, error) {
	out := append(dst, 0x94, TypeResponse)
	out = appendUint(out, uint64(msgid))
	if err != nil {
		return append(appendStr(out, err.Error()), 0xc0), nil
	}
	out, encErr := appendValue(append(out, 0xc0), result)
	if encErr != nil {
		return dst, encErr
	}
	return out, nil
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

func appendIDs(dst []byte, ids []core.ID) []byte {
	dst = appendArrayLen(dst, len(ids))
	for _, id := range ids {
		dst = appendUint(dst, uint64(id))
	}
	return dst
}

// The writers below emit what go-msgpack emits for the same Go values,
// byte for byte (see the tests).

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
	default:
		dst = appendWideLen(dst, n, 0xda, 0xdb)
	}
	return append(dst, s...)
}

func appendArrayLen(dst []byte, n int) []byte { return appendContainerLen(dst, n, 0x90, 0xdc, 0xdd) }

// appendContainerLen writes the header of an array or a map of n items:
// its fix form (fix with n in the low four bits), or its 16- or 32-bit
// form (the codes c16 and c32).
func appendContainerLen(dst []byte, n int, fix, c16, c32 byte) []byte {
	if n <= 15 {
		return append(dst, fix|byte(n))
	}
	return appendWideLen(dst, n, c16, c32)
}

// appendWideLen writes a length past the short forms: code c16 and n in two
// bytes, or past 0xffff code c32 and n in four.
func appendWideLen(dst []byte, n int, c16, c32 byte) []byte {
	if n <= 0xffff {
		return binary.BigEndian.AppendUint16(append(dst, c16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, c32), uint32(n))
}

// DecodeResult decodes a Response's Result into v: *uint64 (Vesta.GenID,
// Vesta.MakeID), *[]uint64 (Vesta.GenIDs, Vesta.Unmask), *TakeIDsResult,
// *int64 (Vesta.NextSeq), *[]int64 (Vesta.NextSeqs), *[]string
// (Vesta.Mask), *Explanation, *TransTimeResult, *Info or *Holder
// (Vesta.Holder). Keys it does not know are ignored, so a later server may add
// some. The slices of *[]uint64 and *TakeIDsResult are reused when they have
// room.
func DecodeResult(result []byte, v any) error {
	if len(result) == 0 {
		return fmt.Errorf("%w: empty result", ErrMalformed)
	}
	var err error
	switch v := v.(type) {
	case *uint64: // the most common results
		r := reader{b: result}
		*v, err = r.uint()
	case *[]uint64:
		*v, err = decodeUints(result, (*v)[:0])
	case *int64: // Vesta.NextSeq
		r := reader{b: result}
		*v, err = r.int()
	case *[]int64: // Vesta.NextSeqs
		*v, err = decodeInts(result, (*v)[:0])
	case *[]string: // Vesta.Mask
		*v, err = decodeStrs(result, (*v)[:0])
	case *TakeIDsResult: // NextID's answer with a new server: by hand too
		err = decodeTakeIDs(result, v)
	case *Explanation:
		err = v.decode(result)
	case *TransTimeResult:
		err = v.decode(result)
	case *Info: // an older server's Info has no take_ids: it reads 0
		err = v.decode(result)
	case *Holder: // Vesta.Holder
		err = v.decode(result)
	default:
		return fmt.Errorf("wire: DecodeResult cannot decode into %T", v)
	}
	if err != nil {
		return fmt.Errorf("%w: result: %w", ErrMalformed, err)
	}
	return nil
}

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
	return decodeArray(b, dst, (*reader).uint)
}

// decodeArray reads an array of items read by read into dst (allocated
// when nil, to the array's length, which the bytes bound).
func decodeArray[T any](b []byte, dst []T, read func(*reader) (T, error)) ([]T, error) {
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
		dst = make([]T, 0, n)
	}
	for ; n > 0; n-- {
		v, err := read(&r)
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}
