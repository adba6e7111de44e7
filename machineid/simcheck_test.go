package machineid

import (
	"fmt"
	"sync"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
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
	fail      string        // the first failure
	kind      failKind      // its kind
	at        time.Duration // its instant
}

// simHold is one claim of a machine ID by a process.
type simHold struct {
	n        int // in claim order, from 1
	p        *simProc
	h        *leasestore.Hold
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

// The kinds of failure.
type failKind uint8

const (
	failNone      failKind = iota
	failOverlap            // two holds in one time unit
	failOrder              // an ID not above its hold's previous one
	failDeadline           // issued at or past the hold's deadline
	failLost               // issued after the process learned the lease lost
	failUnclaimed          // issued with a machine ID never claimed
)

func (k failKind) String() string {
	return [...]string{"none", "overlap", "order", "deadline", "lost", "unclaimed"}[k]
}

func (c *simCheck) failf(kind failKind, format string, args ...any) {
	if c.fail == "" {
		c.kind, c.at = kind, c.w.now()
		c.fail = fmt.Sprintf("at %s: ", c.w.now()) + fmt.Sprintf(format, args...)
		c.w.tracef("CHECK", "%s", c.fail)
		c.w.stop()
	}
}

// claimed records a new hold of p, to be fenced by deadline.
func (c *simCheck) claimed(p *simProc, h *leasestore.Hold, deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.holds {
		if o.id == h.ID && o.p != p && o.lostAt < 0 && !o.p.dead.Load() && o.p.h.clk.Now().Before(o.deadline) {
			c.handovers++
			break
		}
	}
	s := &simHold{n: len(c.holds) + 1, p: p, h: h, id: h.ID, deadline: deadline, lostAt: -1}
	c.holds = append(c.holds, s)
	m := c.latest[p]
	if m == nil {
		m = map[core.MachineID]*simHold{}
		c.latest[p] = m
	}
	m[h.ID] = s
}

func (c *simCheck) find(p *simProc, h *leasestore.Hold) *simHold {
	if s := c.latest[p][h.ID]; s != nil && s.h == h {
		return s
	}
	return nil
}

// renewed moves the hold's deadline.
func (c *simCheck) renewed(p *simProc, h *leasestore.Hold, deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.find(p, h); s != nil {
		s.deadline = deadline
	}
}

// lost records that p learned h is no longer its own (or gave it back).
func (c *simCheck) lost(p *simProc, h *leasestore.Hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.find(p, h); s != nil && s.lostAt < 0 {
		s.lostAt = c.w.now()
	}
}

// issued checks the IDs one call of p's generator returned, at the host
// clock's reading at. One call's IDs come from one run (one machine ID)
// and increase (core's own tests hold it to that), so the first and the
// last say what the checks need: the hold, the order, the time units.
func (c *simCheck) issued(p *simProc, ids []core.ID, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids += len(ids)
	now := c.w.now()
	first, last := c.codec.Explain(ids[0]), c.codec.Explain(ids[len(ids)-1])
	s := c.latest[p][first.Machine]
	switch {
	case s == nil:
		c.failf(failUnclaimed, "process %s issued %d with machine %d, which it never claimed", p.name, ids[0], first.Machine)
		return
	case last.Machine != first.Machine || ids[len(ids)-1] < ids[0]:
		c.failf(failOrder, "%s issued %d to %d in one call: not one run's increasing IDs", s, ids[0], ids[len(ids)-1])
		return
	case !at.Before(s.deadline):
		c.failf(failDeadline, "%s issued %d at %s on its clock, at or past its deadline %s", s, ids[0], clockString(at), clockString(s.deadline))
		return
	case s.lostAt >= 0 && now > s.lostAt:
		c.failf(failLost, "%s issued %d at %s, after its process learned the lease lost at %s", s, ids[0], now, s.lostAt)
		return
	case s.count > 0 && ids[0] <= s.last:
		c.failf(failOrder, "%s issued %d after %d: not above its previous ID", s, ids[0], s.last)
		return
	}
	if s.count == 0 {
		s.first = ids[0]
	}
	s.last = ids[len(ids)-1]
	s.count += len(ids)
	for u := first.Time; u <= last.Time; u++ {
		key := uint64(first.Machine)<<48 | u
		switch owner := c.units[key]; {
		case owner == nil:
			c.units[key] = s
		case owner != s:
			c.failf(failOverlap, "%s and %s both issued machine %d's time unit %d (%s): %s issued %d to %d",
				owner, s, first.Machine, u, c.unitInstant(u), s, ids[0], ids[len(ids)-1])
			return
		}
	}
	c.w.tracef(p.name, "issued %d IDs of machine %d, units %d-%d", len(ids), s.id, first.Time, last.Time)
}

// unitInstant shows when time unit u begins.
func (c *simCheck) unitInstant(u uint64) string {
	t, err := c.codec.TransTime(c.w.plan.typ, u)
	if err != nil {
		return err.Error()
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// issuedBy counts the IDs process name issued.
func (c *simCheck) issuedBy(name string) int {
	n := 0
	for _, s := range c.holds {
		if s.p.name == name {
			n += s.count
		}
	}
	return n
}
