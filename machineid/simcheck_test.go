package machineid

import (
	"fmt"
	"sync"
	"time"

	"github.com/vesta-go/vesta/core"
)

// simCheck is the simulation's checker. Every claim the lease makes is a
// hold; every ID a generator issues is charged to the hold of its process
// and machine ID. A run fails on:
//
//   - two holds of one machine ID issuing in the same time unit (stronger
//     than waiting for an exact repeat: the time guard makes every hold
//     start in a unit after its predecessor's last), or a hold issuing an
//     ID not above its previous one (so no ID ever repeats);
//   - an ID issued after its hold was fenced by the rule: with its host's
//     clock at or past the hold's deadline (the last successful claim or
//     renewal's sent + TTL - margin), or later than the instant its
//     process learned the lease lost (a renewal found another token, or
//     the lease released it);
//   - an ID whose machine ID its process never claimed.
type simCheck struct {
	w     *simWorld
	codec core.Codec

	mu     sync.Mutex
	holds  []*simHold
	latest map[*simProc]map[core.MachineID]*simHold
	units  map[uint64]*simHold // machine<<48 | time unit: the hold that issued in it
	ids    int                 // issued
	// handovers counts claims of an ID whose previous holder was still
	// alive and not yet fenced by the rule: the claims a quarantine or a
	// mark must keep apart.
	handovers int
	fail      string // the first failure
}

// simHold is one claim of a machine ID by a process.
type simHold struct {
	n        int // in claim order, from 1
	p        *simProc
	h        *hold
	id       core.MachineID
	deadline time.Time     // on the host's clock
	lostAt   time.Duration // true time; -1 while held
	first    core.ID       // the first and last IDs issued, 0 before
	last     core.ID
	count    int
}

func (s *simHold) String() string {
	return fmt.Sprintf("hold #%d (process %s, machine %d)", s.n, s.p.name, s.id)
}

func newSimCheck(w *simWorld) *simCheck {
	return &simCheck{w: w, latest: map[*simProc]map[core.MachineID]*simHold{}, units: map[uint64]*simHold{}}
}

func (c *simCheck) failf(format string, args ...any) {
	if c.fail == "" {
		c.fail = fmt.Sprintf("at %s: ", c.w.now()) + fmt.Sprintf(format, args...)
		c.w.tracef("CHECK", "%s", c.fail)
		c.w.stop()
	}
}

// claimed records a new hold of p, to be fenced by deadline.
func (c *simCheck) claimed(p *simProc, h *hold, deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.holds {
		if o.id == h.id && o.p != p && o.lostAt < 0 && !o.p.dead.Load() && o.p.h.clk.Now().Before(o.deadline) {
			c.handovers++
			break
		}
	}
	s := &simHold{n: len(c.holds) + 1, p: p, h: h, id: h.id, deadline: deadline, lostAt: -1}
	c.holds = append(c.holds, s)
	m := c.latest[p]
	if m == nil {
		m = map[core.MachineID]*simHold{}
		c.latest[p] = m
	}
	m[h.id] = s
}

func (c *simCheck) find(p *simProc, h *hold) *simHold {
	if s := c.latest[p][h.id]; s != nil && s.h == h {
		return s
	}
	return nil
}

// renewed moves the hold's deadline.
func (c *simCheck) renewed(p *simProc, h *hold, deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.find(p, h); s != nil {
		s.deadline = deadline
	}
}

// lost records that p learned h is no longer its own (or gave it back).
func (c *simCheck) lost(p *simProc, h *hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.find(p, h); s != nil && s.lostAt < 0 {
		s.lostAt = c.w.now()
	}
}

// issued checks the IDs one call of p's generator returned, at the host
// clock's reading at.
func (c *simCheck) issued(p *simProc, ids []core.ID, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids += len(ids)
	now := c.w.now()
	prevUnit := uint64(1<<64 - 1)
	var s *simHold
	for _, id := range ids {
		e := c.codec.Explain(id)
		if s == nil || s.id != e.Machine {
			s = c.latest[p][e.Machine]
			if s == nil {
				c.failf("process %s issued %d with machine %d, which it never claimed", p.name, id, e.Machine)
				return
			}
			switch {
			case !at.Before(s.deadline):
				c.failf("%s issued %d at %s on its clock, at or past its deadline %s", s, id, clockString(at), clockString(s.deadline))
				return
			case s.lostAt >= 0 && now > s.lostAt:
				c.failf("%s issued %d at %s, after its process learned the lease lost at %s", s, id, now, s.lostAt)
				return
			}
		}
		if s.count > 0 && id <= s.last {
			c.failf("%s issued %d after %d: not above its previous ID", s, id, s.last)
			return
		}
		if s.count == 0 {
			s.first = id
		}
		s.last = id
		s.count++
		if e.Time == prevUnit {
			continue
		}
		prevUnit = e.Time
		key := uint64(e.Machine)<<48 | e.Time
		switch owner := c.units[key]; {
		case owner == nil:
			c.units[key] = s
		case owner != s:
			c.failf("%s and %s both issued machine %d's time unit %d (%s): %d is %s's",
				owner, s, e.Machine, e.Time, e.Instant.UTC().Format(time.RFC3339Nano), id, s)
			return
		}
	}
	c.w.tracef(p.name, "issued %d IDs of machine %d, units %d-%d", len(ids), s.id, c.codec.Explain(ids[0]).Time, prevUnit)
}
