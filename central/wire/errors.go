package wire

import "errors"

// Sentinel errors of frame handling. A connection that produces one of them
// cannot be answered any further and is closed.
var (
	// ErrMalformed: bytes that are not MessagePack, or a frame cut short.
	ErrMalformed = errors.New("wire: malformed msgpack")

	// ErrTooLarge: a frame longer than the limit, or a header claiming so.
	ErrTooLarge = errors.New("wire: frame too large")

	// ErrTooDeep: arrays and maps nested deeper than MaxDepth.
	ErrTooDeep = errors.New("wire: frame nested too deeply")

	// ErrFrame: well-formed MessagePack that is not a frame of the expected
	// kind, and has no msgid that an error response could carry.
	ErrFrame = errors.New("wire: not a MessagePack-RPC frame")
)
