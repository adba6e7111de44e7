package core

import (
	"sync/atomic"
	"time"
)

// OffsetClock is a base clock shifted by an offset that may change while
// it runs: a step of the offset is a step of the wall clock, as NTP or
// `date -s` makes one, for fault-injection tests. Now jumps with the
// offset; After waits real durations on the base clock, as timers on
// Go's monotonic clock do whatever the wall clock does.
type OffsetClock struct {
	base   Clock
	offset atomic.Int64 // nanoseconds
}

// NewOffsetClock returns base shifted by nothing yet.
func NewOffsetClock(base Clock) *OffsetClock { return &OffsetClock{base: base} }

// Now is the base clock's reading plus the offset.
func (c *OffsetClock) Now() time.Time {
	return c.base.Now().Add(time.Duration(c.offset.Load()))
}

// After is the base clock's After: a step of the offset neither shortens
// nor lengthens a wait already begun. The instant it delivers is the base
// clock's; the generator and the lease never read it.
func (c *OffsetClock) After(d time.Duration) <-chan time.Time { return c.base.After(d) }

// alarm is the base clock's alarm at the same reading of this clock, when
// the base has alarms: like After, a later step of the offset does not
// move an alarm already armed (it runs a real duration later). Without
// one, it runs f at once, which only sends the generator to its clock.
func (c *OffsetClock) alarm(at int64, f func()) func() bool {
	if b, ok := c.base.(alarmClock); ok {
		return b.alarm(at-c.offset.Load(), f)
	}
	f()
	return func() bool { return false }
}

// SetShift sets the offset and returns the one it replaces.
func (c *OffsetClock) SetShift(d time.Duration) time.Duration {
	return time.Duration(c.offset.Swap(int64(d)))
}

// Shift returns the offset.
func (c *OffsetClock) Shift() time.Duration { return time.Duration(c.offset.Load()) }
