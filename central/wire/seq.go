package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// Segment sequences: dense, increasing numbers per business tag (Leaf's
// segment mode), served by a server that has a segment sequencer.
const (
	// ProcNextSeq: [{tag}] -> int64, the next number of tag.
	ProcNextSeq = "Vesta.NextSeq"
	// ProcNextSeqs: [{tag, count}] -> [int64, ...], count numbers of tag
	// in increasing order (count 1 ... max_batch).
	ProcNextSeqs = "Vesta.NextSeqs"
)

// MaxTagLen bounds a tag's length in bytes, as package segment does
// (1-128 characters of [A-Za-z0-9_.:-]); the reader refuses longer ones
// before anything else sees them.
const MaxTagLen = 128

// NextSeqParams are the arguments of Vesta.NextSeq.
type NextSeqParams struct {
	Tag string `codec:"tag"`
}

// NextSeqsParams are the arguments of Vesta.NextSeqs.
type NextSeqsParams struct {
	Tag   string `codec:"tag"`
	Count uint64 `codec:"count"` // 1 ... the server's max_batch
}

// decodeSeqParams decodes the params of the sequence procedures; ok is false
// for any other dst.
func decodeSeqParams(params []byte, dst any) (err error, ok bool) {
	switch p := dst.(type) {
	case *NextSeqParams:
		return decodeFields(params, []field{{name: "tag", str: &p.Tag}}), true
	case *NextSeqsParams:
		return decodeFields(params, []field{{name: "tag", str: &p.Tag}, {name: "count", dst: &p.Count}}), true
	}
	return nil, false
}

// tag reads a string field of 1 to MaxTagLen bytes of valid UTF-8. Its
// characters are checked by the issuer, whose rule it is.
func (r *reader) tag() (string, error) {
	b, err := r.str()
	if err != nil {
		return "", err
	}
	switch {
	case len(b) == 0:
		return "", fmt.Errorf("empty; want 1-%d characters", MaxTagLen)
	case len(b) > MaxTagLen:
		return "", fmt.Errorf("%d bytes; want at most %d", len(b), MaxTagLen)
	case !utf8.Valid(b):
		return "", fmt.Errorf("%s is not UTF-8", quote(b))
	}
	return string(b), nil
}

// int reads an integer in any msgpack integer encoding that holds an
// int64 (a uint 64 above 2^63-1 does not).
func (r *reader) int() (int64, error) {
	if r.i >= len(r.b) {
		return 0, r.want("an integer")
	}
	c := r.b[r.i]
	switch {
	case c <= 0x7f:
		r.i++
		return int64(c), nil
	case c >= 0xe0:
		r.i++
		return int64(int8(c)), nil
	case c < 0xcc || c > 0xd3:
		return 0, r.want("an integer")
	}
	u, w, err := r.fixedInt(c)
	if err != nil {
		return 0, err
	}
	r.i += 1 + w
	if c >= 0xd0 { // signed: sign-extend
		return int64(u<<(64-8*w)) >> (64 - 8*w), nil
	}
	if u > math.MaxInt64 {
		return 0, fmt.Errorf("%d does not fit in a signed 64-bit integer", u)
	}
	return int64(u), nil
}

// decodeInts reads an array of integers into dst.
func decodeInts(b []byte, dst []int64) ([]int64, error) {
	return decodeArray(b, dst, (*reader).int)
}

// appendInt writes v as the codec does for an int64: a positive or
// negative fixint when it fits, else the shortest signed encoding.
func appendInt(dst []byte, v int64) []byte {
	switch {
	case v >= -32 && v <= math.MaxInt8:
		return append(dst, byte(v))
	case v > math.MaxInt8 && v <= math.MaxInt16, v < math.MinInt8 && v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, 0xd1), uint16(v))
	case v >= math.MinInt8 && v < -32:
		return append(dst, 0xd0, byte(v))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(v))
}

// AppendIntResponse appends the response [1, msgid, nil, v] to dst, as
// AppendResponse does for an int64 result: the answer to Vesta.NextSeq.
func AppendIntResponse(dst []byte, msgid uint32, v int64) []byte {
	dst = append(dst, 0x94, TypeResponse)
	dst = appendUint(dst, uint64(msgid))
	return appendInt(append(dst, 0xc0), v)
}
