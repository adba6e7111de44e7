package machineid

import (
	"context"
	"fmt"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// The hold history's writes and reads on the lease's side (history.go says
// what the history is): the entry of the current hold, written from the
// member record's goroutine after each claim and renewal and at a release
// while still held; the end of a hold this process lost, written once it
// holds the same machine ID again.

// holdEntryLocked is the entry of hold h as this process knows it now,
// claimed at started, but for what its guard knows (withSpan); l.mu is
// held.
func (l *leased) holdEntryLocked(h *leasestore.Hold, started time.Time) HoldEntry {
	ls := l.self.listeners()
	name, lease := l.st.HoldName(h)
	e := HoldEntry{Machine: h.ID, Hold: name, Lease: lease, Self: true, Provider: l.provider, Range: rangeName(l.method),
		Host: ls.Host, PID: l.self.pid, Pod: l.self.pod, Version: l.self.version, TTL: l.ttl,
		Started: started, From: started, Renewed: leasestore.Latest(l.renewed, started)}
	if l.gen != nil {
		e.Shape, e.HasShape = l.gen.Control().Shape(), true
		e.MaxBorrow = l.gen.Control().MaxBorrow()
	}
	return e
}

// withSpan is e with what h's guard knows: where its IDs begin, the
// highest mark saved, the shape. Not under l.mu: the guard's lock is held
// across a mark's write, which waits for the store.
func withSpan(e HoldEntry, h *leasestore.Hold) HoldEntry {
	floor, saved, loaded, shape := h.Guard.Span()
	// The generator issues at its clock or later, in units of at most a
	// second, and at or after the floor.
	e.From = leasestore.Latest(floor, e.Started.Truncate(time.Second))
	if loaded {
		e.Mark = leasestore.Latest(e.Mark, leasestore.Latest(floor, saved))
	}
	if sh, err := leasestore.DecodeShape(shape); !e.HasShape && shape != "" && err == nil {
		e.Shape, e.HasShape = sh, true
	}
	return e
}

// lostHold is a hold this process lost, with its entry as it ended.
type lostHold struct {
	e HoldEntry
	h *leasestore.Hold
}

// writeHistory writes the current hold's entry, and first the end of the
// hold this process lost of the same machine ID, if it holds that ID
// again. Bounded by the store's command timeout; a failure is logged once
// per kind and changes nothing else.
func (l *leased) writeHistory(ctx context.Context) {
	l.mu.Lock()
	h := l.hold
	if h == nil || l.closed {
		l.mu.Unlock()
		return
	}
	e := l.holdEntryLocked(h, l.holdStarted)
	prev := l.lostEntry
	if prev != nil && prev.e.Machine != h.ID {
		prev, l.lostEntry = nil, nil // another ID: its end stays inferred
	}
	l.mu.Unlock()
	e = withSpan(e, h)
	l.histMu.Lock()
	defer l.histMu.Unlock()
	if l.histEnded == h {
		return // released meanwhile: its entry says so already
	}
	if prev != nil {
		if l.putHold(ctx, h, withSpan(prev.e, prev.h)) == nil {
			l.mu.Lock()
			if l.lostEntry == prev {
				l.lostEntry = nil
			}
			l.mu.Unlock()
		}
	}
	l.putHold(ctx, h, e)
}

// endHistory writes h's end, released, while h still holds its lease;
// final is the exact end of what it issued (ok false: unknown). A hold
// that was never installed (given back during a re-acquisition) issued
// nothing and has no entry.
func (l *leased) endHistory(ctx context.Context, h *leasestore.Hold, final time.Time, ok bool) {
	l.mu.Lock()
	if h != l.installed {
		l.mu.Unlock()
		return
	}
	e := l.holdEntryLocked(h, l.holdStarted)
	l.mu.Unlock()
	e = withSpan(e, h)
	e.End, e.Ended = EndReleased, l.clock.Now()
	if ok {
		e.Mark = leasestore.Latest(e.Mark, final)
	}
	l.histMu.Lock()
	defer l.histMu.Unlock()
	l.histEnded = h // no later write of h's entry: this one is its last
	l.putHold(ctx, h, e)
}

// loseLocked notes the end of the current hold, lost: this process wrote
// its last renewal, and fenced (at fencedAt) because of cause. The entry is
// written if the process claims the same ID again; l.mu is held.
func (l *leased) loseLocked(cause error) {
	h := l.hold
	if h == nil {
		return
	}
	e := l.holdEntryLocked(h, l.holdStarted)
	e.End, e.Ended = EndFenced, l.clock.Now()
	if l.fenced && l.fencedAt.After(e.Started) {
		e.Ended = l.fencedAt // fenced before it was found lost (its deadline passed)
	}
	if cause != nil {
		e.Note = cause.Error()
	}
	l.lostEntry = &lostHold{e: e, h: h}
}

// putHold writes e under h, bounded; a failure is logged once per kind.
// histMu is held.
func (l *leased) putHold(ctx context.Context, h *leasestore.Hold, e HoldEntry) error {
	rec := recordOfHold(e, l.self.run)
	ctx, cancel := leasestore.Bounded(ctx, l.ttl)
	defer cancel()
	now := l.clock.Now()
	err := l.st.PutHold(ctx, h, e.Hold, rec.Encode(), rec.Last(), leasestore.Keep(l.cfg.History), msOf(now.Add(-l.cfg.History.MaxAge)))
	l.noteWrite(&l.histErr, "the hold history", h.ID, err)
	return err
}

// history reads machine id's history from the store, this process's
// current hold as it knows itself now. An ID outside the lease ranges is
// a fixed ID, which keeps no history.
func (l *leased) history(ctx context.Context, id core.MachineID) (History, error) {
	if !l.leasable(id) {
		return History{Machine: id, Store: StoreNone, Fixed: true, Kept: l.cfg.History}, nil
	}
	l.mu.Lock()
	var self *HoldEntry
	if l.hold != nil && l.hold.ID == id {
		e := l.holdEntryLocked(l.hold, l.holdStarted)
		self = &e
	}
	h := l.hold
	l.mu.Unlock()
	if self != nil {
		*self = withSpan(*self, h)
	}
	ctx, cancel := leasestore.Bounded(ctx, l.ttl)
	defer cancel()
	raws, err := l.st.Holds(ctx, id)
	if err != nil {
		return History{Machine: id, Store: l.provider, Prefix: l.st.Prefix(), Kept: l.cfg.History},
			fmt.Errorf("%w: the hold history of machine %d: %w", ErrUnavailable, id, err)
	}
	return buildHistory(l.provider, l.st.Prefix(), id, l.cfg.History, raws, self, l.self.run, l.clock.Now()), nil
}

// leasable reports whether a lease in this configuration's store could
// hold id: it lies in the server or the embedded lease range.
func (l *leased) leasable(id core.MachineID) bool {
	for _, m := range []core.Method{core.Central, core.Embedded} {
		if l.cfg.LeaseRange(m).Contains(id) {
			return true
		}
	}
	return false
}

// history of a fixed ID: this process's own record since it started, for
// its own ID; nothing for another.
func (f *fixedLease) history(_ context.Context, id core.MachineID) (History, error) {
	h := History{Machine: id, Store: StoreNone, Fixed: true}
	if id != f.id {
		return h, nil
	}
	s := f.base.self
	ls := s.listeners()
	now := f.clock.Now()
	e := HoldEntry{Machine: id, Self: true, Provider: f.provider, Range: rangeName(f.base.method), Host: ls.Host, PID: s.pid,
		Pod: s.pod, Version: s.version, Started: s.started, From: s.started.Truncate(time.Second), Renewed: now, Mark: now,
		Lease: fmt.Sprintf("fixed ID (%s)", f.provider)}
	f.mu.Lock()
	if f.gen != nil {
		e.Shape, e.HasShape, e.MaxBorrow = f.gen.Control().Shape(), true, f.gen.Control().MaxBorrow()
	}
	f.mu.Unlock()
	h.Holds = []HoldEntry{e}
	return h, nil
}
