package core

import (
	"context"
	"sync"
	"time"
)

// Clock is the generator's source of time. Implementations must be safe for
// concurrent use. The generator copes with a clock that goes back (it never
// issues below its last unit), but a wall clock that steps is best hidden by
// a monotonic-anchored clock such as SystemClock.
type Clock interface {
	// Now returns the current instant.
	Now() time.Time
	// After delivers the instant once d has passed on this clock.
	After(d time.Duration) <-chan time.Time
}

// SystemClock reads the wall clock once, when made, and then advances by
// Go's monotonic clock, so steps of the wall clock (NTP, an operator's
// `date -s`) while running change nothing. Offset tells how far the wall
// clock has since moved away.
type SystemClock struct {
	base   time.Time // carries a monotonic reading
	baseNs int64     // base's wall reading, for the generator's fast path
}

// NewSystemClock anchors a SystemClock at the wall clock's current reading.
func NewSystemClock() *SystemClock {
	now := time.Now()
	return &SystemClock{base: now, baseNs: now.UnixNano()}
}

// Now returns the anchor plus the monotonic time elapsed since it.
func (c *SystemClock) Now() time.Time { return c.base.Add(time.Since(c.base)) }

// After is time.After: timers run on the monotonic clock.
func (c *SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Offset is the wall clock minus this clock: positive when the wall clock has
// stepped (or drifted) ahead since the anchor, negative when it went back.
func (c *SystemClock) Offset() time.Duration {
	return time.Now().Round(0).Sub(c.Now().Round(0))
}

// ManualClock is a Clock that moves only when told to, for tests: it can
// step forward and back, and reports how often it was read and how many
// timers wait on it, so a test can tell waiting from spinning.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	reads   int64
	waiters []manualWaiter
	added   chan struct{} // closed and replaced whenever a timer is added
}

type manualWaiter struct {
	at time.Time
	ch chan time.Time
}

// NewManualClock returns a ManualClock reading t.
func NewManualClock(t time.Time) *ManualClock {
	return &ManualClock{now: t, added: make(chan struct{})}
}

// Now returns the clock's reading.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.now
}

// After fires once the clock reads at least Now()+d.
func (c *ManualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := c.now.Add(d)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, manualWaiter{at: at, ch: ch})
	close(c.added)
	c.added = make(chan struct{})
	return ch
}

// Set moves the clock to t, forward or back, firing due timers.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !t.Before(w.at) {
			w.ch <- t
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

// Advance moves the clock by d (negative d steps it back).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	t := c.now.Add(d)
	c.mu.Unlock()
	c.Set(t)
}

// Reads returns how many times Now was called.
func (c *ManualClock) Reads() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// Waiters returns how many After timers have not fired yet.
func (c *ManualClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// BlockUntil waits until at least n timers wait on the clock or ctx ends,
// so tests advance the clock only once a goroutine is really asleep.
func (c *ManualClock) BlockUntil(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, added := len(c.waiters), c.added
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-added:
		}
	}
}

// sleep waits d on clk, or until ctx ends.
func sleep(ctx context.Context, clk Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-clk.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
