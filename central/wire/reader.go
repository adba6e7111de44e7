package wire

import (
	"errors"
	"io"
)

// Reader reads frames from a stream, with Split: it holds at most one
// frame's limit of bytes, whatever the stream claims.
type Reader struct {
	r          io.Reader
	limit      int
	buf        []byte
	start, end int // unread bytes: buf[start:end]
	err        error
}

// NewReader returns a Reader of frames of at most limit bytes from r.
func NewReader(r io.Reader, limit int) *Reader {
	return &Reader{r: r, limit: limit, buf: make([]byte, min(limit, 4096))}
}

// Next returns the next frame. The bytes are valid until the next call.
// After an error (io.EOF at a frame boundary, io.ErrUnexpectedEOF within
// a frame, a read error or a Split error) every later call returns it.
func (r *Reader) Next() ([]byte, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		n, err := Split(r.buf[r.start:r.end], r.limit)
		if err != nil {
			r.err = err
			return nil, err
		}
		if n > 0 {
			f := r.buf[r.start : r.start+n]
			r.start += n
			return f, nil
		}
		r.fill()
	}
}

// Buffered returns how many bytes are read but not yet returned as frames.
func (r *Reader) Buffered() int { return r.end - r.start }

// fill reads more bytes, first making room: moving the partial frame to
// the front, then growing the buffer up to the limit.
func (r *Reader) fill() {
	if r.start > 0 {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		grown := make([]byte, min(2*len(r.buf), r.limit))
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	if err != nil && n == 0 {
		if errors.Is(err, io.EOF) && r.end > 0 {
			err = io.ErrUnexpectedEOF
		}
		r.err = err
	}
}
