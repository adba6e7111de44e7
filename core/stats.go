package core

import "time"

// Stats are a generator's counters and gauges.
type Stats struct {
	Issued uint64 // IDs issued since New
	Waits  uint64 // sleeps because the sequence ran out beyond MaxBorrow
	// Exhausted counts the units (milliseconds, or seconds for max-peak)
	// whose sequence ran out since New: each of their states was taken, so
	// issuing went on in a later unit (borrowing ahead of the clock, up to
	// MaxBorrow) or waited. Times the unit's length over a period, it is
	// the share of that period spent at the sequence's ceiling.
	Exhausted   uint64
	Ahead       time.Duration // how far the last issued unit is ahead of the clock
	ClockOffset time.Duration // wall clock minus the issuing clock (SystemClock only)
	Mark        time.Time     // the durable reservation (zero without a guard)
	MarkAhead   time.Duration // Mark minus the issuing clock's now (zero without a guard)
	GuardFailed bool          // the last save of the mark failed
	Fenced      bool
}

// Stats returns the current counters.
func (g *Generator) Stats() Stats {
	r := g.cur.Load()
	s := Stats{Issued: g.before.Load() + r.issued(), Waits: g.waits.Load(), Exhausted: g.spent.Load(), Fenced: g.gateErr(g.nowNanos()) != nil}
	if now, err := g.nowUnit(); err == nil && r.entered.Load() > now {
		s.Ahead = time.Duration(r.entered.Load()-now) * g.cfg.Type.Unit()
	}
	if g.sys != nil {
		s.ClockOffset = g.sys.Offset()
	}
	if r.guard != nil {
		s.Mark = g.instantOf(r.limit.Load() >> g.sb)
		s.MarkAhead = s.Mark.Sub(time.Unix(0, g.nowNanos()))
		s.GuardFailed = r.guardErr.Load() != nil
	}
	return s
}
