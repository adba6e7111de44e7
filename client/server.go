package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// server is one central server: its breaker and its connections.
type server struct {
	addr  string
	cb    *gobreaker.CircuitBreaker[struct{}]
	slots []slot
	rr    atomic.Uint32
	c     *Client
	calls calls // by result, and the breaker's state (Stats)
	// busyUntil is when the server said its sequence has room again (the
	// client clock's Unix nanoseconds); until then calls skip it.
	busyUntil atomic.Int64
	// failed says a call that ran past the closed breaker failed and no
	// success has been reported to the breaker since (guarded).
	failed atomic.Bool
}

// guarded runs f under s's breaker. While the breaker is closed, f runs
// outside it and only what can change the breaker is reported: every
// failure, and the first success after one, which resets the consecutive
// failures it trips on. The trip rule then sees the sequence it would see
// if every call went through, and a closed breaker costs a call no lock
// and no clock read (gobreaker takes its mutex and reads the clock twice a
// call: with 64 callers, a seventh of the client's time). Open or
// half-open, every call goes through it, as its probing needs. The error
// is f's, or the breaker's refusal (rejected).
func (s *server) guarded(f func() error) error {
	if s.calls.breaker.Load() != 0 { // not closed (breakerChanged)
		_, err := s.cb.Execute(func() (struct{}, error) { return struct{}{}, f() })
		return err
	}
	err := f()
	if err != nil {
		s.report(err) // first, then the mark: a success that sees the mark comes after it
		s.failed.Store(true)
	} else if s.failed.Load() && s.failed.CompareAndSwap(true, false) {
		s.report(nil)
	}
	return err
}

// report tells the breaker the outcome of a call that ran outside it; the
// breaker classifies it (IsExcluded, IsSuccessful) as its own calls'.
func (s *server) report(err error) {
	s.cb.Execute(func() (struct{}, error) { return struct{}{}, err })
}

// slot holds one connection of a server, dialled on first use and again
// after it broke. Concurrent callers share one dial.
type slot struct {
	c    atomic.Pointer[conn] // the last connection dialled; read without mu, as every call does
	mu   sync.Mutex
	dial *dialing // the dial in progress, if any; mu holds it
}

type dialing struct {
	done chan struct{}
	c    *conn
	err  error
}

// rejected reports how the breaker rejects a call without making it.
func rejected(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// conn returns a live connection of s, picking its slots in turn. A dial
// runs on a goroutine of its own, bounded by Config.Timeout and Close but
// not by any caller's context or deadline, so that neither the caller who
// started it nor those who wait for it wait past their own deadline, and a
// caller giving up does not fail the dial for the others. A caller waits
// for a dial up to timeout.
func (s *server) conn(ctx context.Context, timeout time.Duration) (*conn, error) {
	sl := &s.slots[int(s.rr.Add(1)-1)%len(s.slots)]
	if c := sl.c.Load(); c != nil && c.alive() {
		return c, nil
	}
	sl.mu.Lock()
	if c := sl.c.Load(); c != nil && c.alive() { // dialled meanwhile
		sl.mu.Unlock()
		return c, nil
	}
	d := sl.dial
	if d == nil {
		d = &dialing{done: make(chan struct{})}
		if !s.c.spawn(func() { s.dialSlot(sl, d) }) {
			sl.mu.Unlock()
			return nil, ErrClosed
		}
		sl.dial = d
	}
	sl.mu.Unlock()
	t := time.NewTimer(timeout) // only while a dial runs
	defer t.Stop()
	select {
	case <-d.done:
		return d.c, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("%w: waiting for the dial", ErrTimeout)
	}
}

func (s *server) dialSlot(sl *slot, d *dialing) {
	ctx, cancel := context.WithTimeout(s.c.bg, s.c.cfg.Timeout)
	d.c, d.err = s.c.dial(ctx, s.addr)
	if d.err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		d.err = fmt.Errorf("%w: dial and handshake: %w", ErrTimeout, d.err)
	}
	cancel()
	sl.mu.Lock()
	sl.dial = nil
	if d.err == nil {
		sl.c.Store(d.c)
	}
	sl.mu.Unlock()
	close(d.done)
}
