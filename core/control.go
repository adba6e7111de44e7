package core

import (
	"context"
	"fmt"
	"time"
)

// Control is the handle a machine-ID lease (package machineid) holds on a
// generator: it stops and resumes issuing, moves the generator to another
// machine ID, and reads what a lease needs to hold a new holder off. An
// embedding user needs none of it; get it with Generator.Control.
type Control struct{ g *Generator }

// Control returns the generator's lease handle.
func (g *Generator) Control() *Control { return &g.ctl }

// Fence stops issuing: every call fails with an error wrapping ErrFenced and
// cause, until Unfence. The lease holder (package machineid) fences when it
// can no longer prove it holds the machine ID.
func (c *Control) Fence(cause error) {
	g := c.g
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	g.fenceErr = fmt.Errorf("%w: %w", ErrFenced, cause)
	g.gate.Store(-1)
}

// FenceAfter makes every call from d from now on (by the generator's
// clock) fail with an error wrapping ErrFenced and cause, checked on every
// call: a lease holder sets it to the time its lease has left, so issuing
// stops in time even if the holder's own timer runs late. Being relative,
// it holds whatever clock each side reads. A later call replaces the
// deadline; NoDeadline removes it.
func (c *Control) FenceAfter(d time.Duration, cause error) {
	g := c.g
	g.setDeadline(max(g.nowNanos()+int64(d), 1), fmt.Errorf("%w: %w", ErrFenced, cause))
}

// NoDeadline removes the deadline of FenceAfter.
func (c *Control) NoDeadline() { c.g.setDeadline(0, nil) }

func (g *Generator) setDeadline(ns int64, cause error) {
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	g.deadline, g.deadErr = ns, cause
	if g.fenceErr == nil {
		g.gate.Store(g.deadline)
	}
}

// Unfence lets issuing resume.
func (c *Control) Unfence() {
	g := c.g
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	g.fenceErr = nil
	g.gate.Store(g.deadline)
}

// gateErr is why a call at ns may not issue, or nil.
func (g *Generator) gateErr(ns int64) error {
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	if g.fenceErr != nil {
		return g.fenceErr
	}
	if g.deadline != 0 && ns >= g.deadline {
		return g.deadErr
	}
	return nil
}

// errRekeying is returned while Rekey has closed the old machine ID and not
// yet started the new one (or failed to).
var errRekeying = fmt.Errorf("%w: the machine ID is changing", ErrFenced)

// Rekey moves the generator to another machine ID and time guard, as when a
// lost lease is replaced by a lease on a different ID. The old run is closed
// first (its exact mark saved to its guard), then the new one starts like New
// does: it loads the new guard's mark and waits for the clock or fails with
// ErrClockBehind. IDs issued after Rekey carry the new machine ID and none
// of them was ever issued under it. While Rekey runs, and after it fails,
// calls fail with ErrFenced until a Rekey succeeds.
func (c *Control) Rekey(ctx context.Context, machine MachineID, guard GuardStore) error {
	g := c.g
	if machine > MaxMachine {
		return &RangeError{Field: "machine", Value: uint64(machine), Max: uint64(MaxMachine)}
	}
	g.rekeyMu.Lock()
	defer g.rekeyMu.Unlock()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g.cancelRekey = cancel
	old := g.cur.Load()
	last := old.state.Load() &^ closedBit
	if old.state.Load()&closedBit == 0 {
		g.rekeying.Store(true)
		g.before.Add(old.issued())
		var err error
		if last, err = g.closeRun(old); err != nil {
			g.log.Warn("rekey: saving the old machine ID's final mark failed; its last reservation stands", "err", err)
		}
	}
	g.mu.Unlock()

	var minFloor uint64
	if machine == g.machineOf(old) {
		minFloor = last>>g.sb + 1 // never below what this generator issued
	}
	r, err := g.startRun(ctx, machine, guard, minFloor)

	g.mu.Lock()
	defer g.mu.Unlock()
	g.cancelRekey = nil
	if g.closed {
		if err == nil {
			g.closeRun(r)
		}
		return ErrClosed
	}
	if err != nil {
		return err
	}
	g.cur.Store(r)
	g.rekeying.Store(false)
	return nil
}

// Close stops issuing, stops the reserver and saves the exact end of what
// was issued as the guard's mark, so a restart need not wait out the whole
// window. It is idempotent; later calls return the first result.
func (g *Generator) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		g.rekeying.Store(false)
		if g.cancelRekey != nil {
			g.cancelRekey()
		}
		if r := g.cur.Load(); r.state.Load()&closedBit == 0 {
			_, g.closeErr = g.closeRun(r)
		}
	}
	return g.closeErr
}

// Shape returns what the generator's time fields mean: layout, type,
// epoch and version.
func (c *Control) Shape() Shape { return c.g.shape() }

func (g *Generator) shape() Shape {
	return Shape{Layout: g.cfg.Layout, Type: g.cfg.Type, EpochMs: g.epochMs, Version: g.cfg.Version}
}

// ReadyAt is the first clock reading at which a run starting on a guard
// whose mark is mark needs no wait: the unit at or after mark, less the
// whole units of MaxBorrow. A lease that must hold a new holder off until
// mark waits until then, however long, before New or Rekey (which wait
// only MaxStartupWait).
func (c *Control) ReadyAt(mark time.Time) time.Time { return c.g.cfg.ReadyAt(mark) }

// MaxBorrow returns how far the generator may issue ahead of its clock.
func (c *Control) MaxBorrow() time.Duration { return c.g.cfg.MaxBorrow }
