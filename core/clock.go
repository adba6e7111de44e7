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

// alarm runs f once the clock reads at least at (Unix ns), on a runtime
// timer: no goroutine waits for it, and none runs until it fires.
func (c *SystemClock) alarm(at int64, f func()) func() bool {
	return time.AfterFunc(time.Duration(at-c.baseNs)-time.Since(c.base), f).Stop
}

// Offset is the wall clock minus this clock: positive when the wall clock has
// stepped (or drifted) ahead since the anchor, negative when it went back.
func (c *SystemClock) Offset() time.Duration {
	return time.Now().Round(0).Sub(c.Now().Round(0))
}

// alarmClock is a Clock that can run a function when it reaches an
// instant. The generator uses it to end NextID's clockless path at the end
// of a unit (docs/design/generator.md, the fast path); with a Clock that
// lacks it every call reads the clock. Alarms are not timers a caller waits on: ManualClock neither
// counts them as waiters nor their arming as reads, and runs them within
// the Set that reaches them, so a test that moves the clock finds the
// clockless path already closed when Set returns.
type alarmClock interface {
	Clock
	// alarm runs f once the clock reads at least at (Unix ns): at once
	// (maybe on the calling goroutine) if it already does. The returned
	// function cancels an alarm that has not run.
	alarm(at int64, f func()) (stop func() bool)
}

// ManualClock is a Clock that moves only when told to, for tests: it can
// step forward and back, and reports how often it was read and how many
// timers wait on it, so a test can tell waiting from spinning.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	reads   int64
	waiters []manualWaiter
	alarms  []*manualAlarm
	added   chan struct{} // closed and replaced whenever a timer is added
}

type manualAlarm struct {
	at   int64
	f    func()
	done bool // ran or stopped; under mu
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

// Set moves the clock to t, forward or back, firing due timers and
// running due alarms before it returns.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
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
	var due []func()
	alarms := c.alarms[:0]
	for _, a := range c.alarms {
		switch {
		case a.done:
		case t.UnixNano() >= a.at:
			a.done = true
			due = append(due, a.f)
		default:
			alarms = append(alarms, a)
		}
	}
	clear(c.alarms[len(alarms):])
	c.alarms = alarms
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// alarm runs f within the Set that reaches at, or at once if the clock
// reads at already. It is neither a read nor a waiter.
func (c *ManualClock) alarm(at int64, f func()) func() bool {
	c.mu.Lock()
	if c.now.UnixNano() >= at {
		c.mu.Unlock()
		f()
		return func() bool { return false }
	}
	a := &manualAlarm{at: at, f: f}
	c.alarms = append(c.alarms, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		stopped := !a.done
		a.done = true
		return stopped
	}
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
