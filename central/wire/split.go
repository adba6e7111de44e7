package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Limits of frames.
const (
	// MaxDepth is how deeply arrays and maps may nest in a frame. The
	// deepest frame of the protocol, a request with params, nests three
	// deep ([0, id, method, [{...}]]).
	MaxDepth = 8

	// DefaultMaxRequestBytes is the default size limit of a request frame.
	DefaultMaxRequestBytes = 64 << 10
)

// MaxResponseBytes returns the size limit a client should give Split for
// responses of a server whose max_batch is maxBatch: a GenIDs result of
// maxBatch IDs, each at most nine bytes, plus room for the frame and errors.
func MaxResponseBytes(maxBatch int) int {
	return 9*max(maxBatch, 1) + 4096
}

// errShort: the object continues past the end of the bytes at hand.
var errShort = errors.New("wire: short")

// Split returns the length of the MessagePack object at the start of b when
// b holds all of it, or 0 and a nil error when more bytes are needed. It
// fails with ErrMalformed on bytes that are not MessagePack, ErrTooDeep on
// nesting deeper than MaxDepth, and ErrTooLarge once the object is known to
// be longer than limit bytes, which it may know from a header alone. It
// neither decodes nor allocates.
func Split(b []byte, limit int) (int, error) {
	if len(b) > limit {
		b = b[:limit]
	}
	n, err := skip(b, 0, 0, limit)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, errShort) && len(b) >= limit:
		return 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	case errors.Is(err, errShort):
		return 0, nil
	}
	return 0, err
}

// skip returns the offset just past the object at b[i:]. Lengths are
// checked against limit before they are trusted, so a header claiming
// gigabytes fails at once instead of waiting for them.
func skip(b []byte, i, depth, limit int) (int, error) {
	if i >= len(b) {
		return 0, errShort
	}
	c := b[i]
	i++
	lw := 0 // width of a str or bin length
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return i, nil
	case c <= 0x8f:
		return skipItems(b, i, 2*uint64(c&0x0f), depth, limit)
	case c <= 0x9f:
		return skipItems(b, i, uint64(c&0x0f), depth, limit)
	case c <= 0xbf: // fixstr
		return advance(b, i, uint64(c&0x1f), limit)
	case c == 0xc1:
		return 0, fmt.Errorf("%w: byte 0xc1 at offset %d", ErrMalformed, i-1)
	case c == 0xc4 || c == 0xd9: // bin 8, str 8
		lw = 1
	case c == 0xc5 || c == 0xda: // bin 16, str 16
		lw = 2
	case c == 0xc6 || c == 0xdb: // bin 32, str 32
		lw = 4
	case c >= 0xc7 && c <= 0xc9: // ext 8/16/32: length, type, data
		w := 1 << (c - 0xc7)
		l, err := uintAt(b, i, w)
		if err != nil {
			return 0, err
		}
		return advance(b, i+w+1, l, limit)
	case c >= 0xca && c <= 0xd3: // float 32/64, uint 8-64, int 8-64
		return advance(b, i, uint64(fixedWidth[c-0xca]), limit)
	case c >= 0xd4 && c <= 0xd8: // fixext 1-16: type, data
		return advance(b, i, 1+uint64(1)<<(c-0xd4), limit)
	case c == 0xdc || c == 0xdd || c == 0xde || c == 0xdf: // array/map 16/32
		w := 2 << ((c - 0xdc) & 1)
		l, err := uintAt(b, i, w)
		if err != nil {
			return 0, err
		}
		if c >= 0xde {
			l *= 2
		}
		return skipItems(b, i+w, l, depth, limit)
	}
	l, err := uintAt(b, i, lw) // str or bin with an lw-byte length
	if err != nil {
		return 0, err
	}
	return advance(b, i+lw, l, limit)
}

var fixedWidth = [...]uint8{4, 8, 1, 2, 4, 8, 1, 2, 4, 8}

// skipItems skips n objects, one container level down.
func skipItems(b []byte, i int, n uint64, depth, limit int) (int, error) {
	if depth >= MaxDepth {
		return 0, fmt.Errorf("%w: deeper than %d", ErrTooDeep, MaxDepth)
	}
	if n > uint64(limit-i) { // every object takes at least one byte
		return 0, fmt.Errorf("%w: a container of %d objects", ErrTooLarge, n)
	}
	for ; n > 0; n-- {
		var err error
		if i, err = skip(b, i, depth+1, limit); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// advance moves past n payload bytes at b[i:].
func advance(b []byte, i int, n uint64, limit int) (int, error) {
	if n > uint64(limit-i) {
		return 0, fmt.Errorf("%w: a payload of %d bytes", ErrTooLarge, n)
	}
	if i+int(n) > len(b) {
		return 0, errShort
	}
	return i + int(n), nil
}

// uintAt reads a w-byte big-endian length at b[i:].
func uintAt(b []byte, i, w int) (uint64, error) {
	if i+w > len(b) {
		return 0, errShort
	}
	switch w {
	case 1:
		return uint64(b[i]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b[i:])), nil
	}
	return uint64(binary.BigEndian.Uint32(b[i:])), nil
}
