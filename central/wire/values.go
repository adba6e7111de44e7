package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/vesta-go/vesta/core"
)

// The rare structs (params of the procedures other than GenIDs and TakeIDs;
// the Explanation, TransTimeResult and Info results) are written and read
// here by hand as well, so the package has one encoder and one decoder.
// Every writer emits what go-msgpack's MsgpackHandle{WriteExt: true}
// emits for the same value, byte for byte (the tests compare them): keys
// in sorted order, strings as str (str 8 from 32 bytes), integers in the
// shortest form of their Go type.

// appendValue appends v as a msgpack value. Besides the package's own
// types it takes the plain values a test or a hand-made request may send
// (nil, booleans, integers, floats, strings, bytes, slices of any and maps
// with string keys; map keys are written in sorted order). Any other type
// is an error: there is no reflection fallback.
func appendValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, 0xc0), nil
	case bool:
		if v {
			return append(dst, 0xc3), nil
		}
		return append(dst, 0xc2), nil
	case int:
		return appendInt(dst, int64(v)), nil
	case int8:
		return appendInt(dst, int64(v)), nil
	case int16:
		return appendInt(dst, int64(v)), nil
	case int32:
		return appendInt(dst, int64(v)), nil
	case int64:
		return appendInt(dst, v), nil
	case uint:
		return appendUint(dst, uint64(v)), nil
	case uint8:
		return appendUint(dst, uint64(v)), nil
	case uint16:
		return appendUint(dst, uint64(v)), nil
	case uint32:
		return appendUint(dst, uint64(v)), nil
	case uint64:
		return appendUint(dst, v), nil
	case core.ID:
		return appendUint(dst, uint64(v)), nil
	case float32:
		return binary.BigEndian.AppendUint32(append(dst, 0xca), math.Float32bits(v)), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(dst, 0xcb), math.Float64bits(v)), nil
	case string:
		return appendStr(dst, v), nil
	case []byte:
		return appendBin(dst, v), nil
	case []uint64:
		dst = appendArrayLen(dst, len(v))
		for _, u := range v {
			dst = appendUint(dst, u)
		}
		return dst, nil
	case []core.ID:
		return appendIDs(dst, v), nil
	case []string:
		dst = appendArrayLen(dst, len(v))
		for _, s := range v {
			dst = appendStr(dst, s)
		}
		return dst, nil
	case []int64:
		dst = appendArrayLen(dst, len(v))
		for _, i := range v {
			dst = appendInt(dst, i)
		}
		return dst, nil
	case []any:
		dst = appendArrayLen(dst, len(v))
		for _, e := range v {
			var err error
			if dst, err = appendValue(dst, e); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case map[string]any:
		return appendMap(dst, v)
	case map[string]string:
		return appendMap(dst, v)
	case map[string]int:
		return appendMap(dst, v)
	case map[string]uint64:
		return appendMap(dst, v)
	case *GenIDsParams:
		return appendCountMap(dst, v.Count), nil
	case GenIDsParams:
		return appendCountMap(dst, v.Count), nil
	case *TakeIDsParams:
		return v.appendTo(dst), nil
	case TakeIDsParams:
		return v.appendTo(dst), nil
	case *ExpIDParams:
		return appendUint(appendStr(append(dst, 0x81), "id"), v.ID), nil
	case ExpIDParams:
		return appendUint(appendStr(append(dst, 0x81), "id"), v.ID), nil
	case *TransTimeParams:
		return appendUint(appendStr(append(dst, 0x81), "time"), v.Time), nil
	case TransTimeParams:
		return appendUint(appendStr(append(dst, 0x81), "time"), v.Time), nil
	case *MakeIDParams:
		return v.appendTo(dst), nil
	case MakeIDParams:
		return v.appendTo(dst), nil
	case *NextSeqParams:
		return appendStr(appendStr(append(dst, 0x81), "tag"), v.Tag), nil
	case NextSeqParams:
		return appendStr(appendStr(append(dst, 0x81), "tag"), v.Tag), nil
	case *NextSeqsParams:
		return v.appendTo(dst), nil
	case NextSeqsParams:
		return v.appendTo(dst), nil
	case *MaskParams:
		return v.appendTo(dst), nil
	case MaskParams:
		return v.appendTo(dst), nil
	case *UnmaskParams:
		return v.appendTo(dst), nil
	case UnmaskParams:
		return v.appendTo(dst), nil
	case TakeIDsResult:
		return appendTakeIDsMap(dst, v.IDs, v.RetryAfterMS), nil
	case *TakeIDsResult:
		return appendTakeIDsMap(dst, v.IDs, v.RetryAfterMS), nil
	case Explanation:
		return v.appendTo(dst), nil
	case *Explanation:
		return v.appendTo(dst), nil
	case TransTimeResult:
		return v.appendTo(dst), nil
	case *TransTimeResult:
		return v.appendTo(dst), nil
	case Info:
		return v.appendTo(dst), nil
	case *Info:
		return v.appendTo(dst), nil
	case Holder:
		return v.appendTo(dst), nil
	case *Holder:
		return v.appendTo(dst), nil
	case *HolderParams:
		return appendUint(appendStr(append(dst, 0x81), "id"), v.ID), nil
	case HolderParams:
		return appendUint(appendStr(append(dst, 0x81), "id"), v.ID), nil
	}
	return dst, fmt.Errorf("wire: encode: cannot encode %T", v)
}

// appendMap writes a map with string keys, in sorted key order so that a
// frame is the same every time.
func appendMap[V any](dst []byte, m map[string]V) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = appendMapLen(dst, len(m))
	for _, k := range keys {
		var err error
		if dst, err = appendValue(appendStr(dst, k), m[k]); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func appendMapLen(dst []byte, n int) []byte { return appendContainerLen(dst, n, 0x80, 0xde, 0xdf) }

// appendBin writes b as bin (the current spec).
func appendBin(dst, b []byte) []byte {
	if n := len(b); n <= 0xff {
		dst = append(dst, 0xc4, byte(n))
	} else {
		dst = appendWideLen(dst, n, 0xc5, 0xc6)
	}
	return append(dst, b...)
}

// appendCountMap writes {"count": count}.
func appendCountMap(dst []byte, count uint64) []byte {
	return appendUint(appendStr(append(dst, 0x81), "count"), count)
}

func (p *TakeIDsParams) appendTo(dst []byte) []byte {
	if p.Singles == 0 {
		return appendCountMap(dst, p.Count)
	}
	return appendUint(appendStr(appendUint(appendStr(append(dst, 0x82), "count"), p.Count), "singles"), p.Singles)
}

func appendTakeIDsMap(dst []byte, ids []uint64, retryAfterMS uint64) []byte {
	dst = appendStr(append(dst, 0x82), "ids")
	dst = appendArrayLen(dst, len(ids))
	for _, id := range ids {
		dst = appendUint(dst, id)
	}
	return appendUint(appendStr(dst, "retry_after_ms"), retryAfterMS)
}

// The writers below put the keys in sorted order, as the codec does for a
// struct (it sorts fields by their encoded name).

func (p *MakeIDParams) appendTo(dst []byte) []byte {
	fs := [...]struct {
		key string
		v   *uint64
	}{{"machine", p.Machine}, {"method", p.Method}, {"seq", &p.Seq}, {"time", &p.Time}, {"type", p.Type}, {"version", p.Version}}
	n := 0
	for _, f := range fs {
		if f.v != nil {
			n++
		}
	}
	dst = append(dst, 0x80|byte(n))
	for _, f := range fs { // omitempty: an absent field takes the server's value
		if f.v != nil {
			dst = appendUint(appendStr(dst, f.key), *f.v)
		}
	}
	return dst
}

func (p *NextSeqsParams) appendTo(dst []byte) []byte {
	dst = appendUint(appendStr(append(dst, 0x82), "count"), p.Count)
	return appendStr(appendStr(dst, "tag"), p.Tag)
}

func (e *Explanation) appendTo(dst []byte) []byte {
	dst = appendUint(appendStr(append(dst, 0x8a), "id"), e.ID)
	dst = appendUint(appendStr(dst, "machine"), e.Machine)
	dst = appendUint(appendStr(dst, "method"), e.Method)
	dst = appendStr(appendStr(dst, "method_name"), e.MethodName)
	dst = appendUint(appendStr(dst, "seq"), e.Seq)
	dst = appendUint(appendStr(dst, "time"), e.Time)
	dst = appendStr(appendStr(dst, "timestamp"), e.Timestamp)
	dst = appendUint(appendStr(dst, "type"), e.Type)
	dst = appendStr(appendStr(dst, "type_name"), e.TypeName)
	return appendUint(appendStr(dst, "version"), e.Version)
}

func (t *TransTimeResult) appendTo(dst []byte) []byte {
	dst = appendStr(appendStr(append(dst, 0x82), "timestamp"), t.Timestamp)
	return appendInt(appendStr(dst, "unix_ms"), t.UnixMS)
}

func (i *Info) appendTo(dst []byte) []byte {
	dst = appendStr(appendStr(append(dst, 0x89), "epoch"), i.Epoch)
	dst = appendStr(appendStr(dst, "layout"), i.Layout)
	dst = appendUint(appendStr(dst, "machine"), i.Machine)
	dst = appendUint(appendStr(dst, "max_batch"), i.MaxBatch)
	dst = appendUint(appendStr(dst, "method"), i.Method)
	dst = appendUint(appendStr(dst, "singles"), i.Singles)
	dst = appendUint(appendStr(dst, "take_ids"), i.TakeIDs)
	dst = appendUint(appendStr(dst, "type"), i.Type)
	return appendUint(appendStr(dst, "version"), i.Version)
}

// resultField is one key of a result map: exactly one of u, i, s and sub
// is set; sub reads a value of another shape (an array), which its
// caller zeroes.
type resultField struct {
	key string
	u   *uint64
	i   *int64
	s   *string
	sub func(*reader) error
}

// decodeResultMap reads a result map into fs, starting from the zero value
// of each field: a key the map lacks stays zero (an older server's Info has
// no take_ids), keys it does not know are skipped (a later server may add
// some), and a nil value reads as zero. Nothing past the map is allowed.
func decodeResultMap(b []byte, fs []resultField) error {
	for _, f := range fs {
		switch {
		case f.u != nil:
			*f.u = 0
		case f.i != nil:
			*f.i = 0
		case f.s != nil:
			*f.s = ""
		}
	}
	r := reader{b: b}
	n, err := r.mapLen()
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		key, err := r.str()
		if err != nil {
			return fmt.Errorf("key: %w", err)
		}
		k := slices.IndexFunc(fs, func(f resultField) bool { return f.key == string(key) })
		switch {
		case k < 0:
			err = r.skip()
		case r.isNil():
			r.i++
		case fs[k].u != nil:
			*fs[k].u, err = r.uint()
		case fs[k].i != nil:
			*fs[k].i, err = r.int()
		case fs[k].sub != nil:
			err = fs[k].sub(&r)
		default:
			var s []byte
			if s, err = r.str(); err == nil {
				*fs[k].s = string(s)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", quote(key), err)
		}
	}
	if r.i != len(b) {
		return fmt.Errorf("trailing bytes after the map")
	}
	return nil
}

func (e *Explanation) decode(b []byte) error {
	return decodeResultMap(b, []resultField{
		{key: "id", u: &e.ID},
		{key: "version", u: &e.Version},
		{key: "type", u: &e.Type},
		{key: "type_name", s: &e.TypeName},
		{key: "method", u: &e.Method},
		{key: "method_name", s: &e.MethodName},
		{key: "time", u: &e.Time},
		{key: "seq", u: &e.Seq},
		{key: "machine", u: &e.Machine},
		{key: "timestamp", s: &e.Timestamp},
	})
}

func (t *TransTimeResult) decode(b []byte) error {
	return decodeResultMap(b, []resultField{{key: "unix_ms", i: &t.UnixMS}, {key: "timestamp", s: &t.Timestamp}})
}

func (i *Info) decode(b []byte) error {
	return decodeResultMap(b, []resultField{
		{key: "layout", s: &i.Layout},
		{key: "epoch", s: &i.Epoch},
		{key: "type", u: &i.Type},
		{key: "machine", u: &i.Machine},
		{key: "method", u: &i.Method},
		{key: "version", u: &i.Version},
		{key: "max_batch", u: &i.MaxBatch},
		{key: "take_ids", u: &i.TakeIDs},
		{key: "singles", u: &i.Singles},
	})
}
