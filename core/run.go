package core

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// run is the issuing state of one machine ID.
type run struct {
	// state is the packed (unit<<sb | seq) of the last reserved ID, or
	// closedBit|last once closed. limit is the first packed state the time
	// guard has not made durable. state is written on every call, so it
	// has a cache line of its own (with limit, read beside it by take).
	state atomic.Uint64
	limit atomic.Uint64
	_     [48]byte

	// What NextID's fast path reads, on a line written once per unit.
	// entered is the last unit an ID was issued in, unitEnd where it ends
	// (Unix ns of the clock; 0 turns the fast path off until take issues
	// again). The state can be ahead of entered: the fast path reserves
	// with an atomic add and drops a state past the unit's end (counted
	// in wasted); bounds are reckoned from entered, so a dropped state
	// never opens a unit that issuing had not reached.
	//
	// live is what NextID's clockless path reads (docs/design/generator.md,
	// the fast path): u+1 while unit u, entered by the checked path, may
	// be issued in without a clock read; 0 sends every call to the clock.
	// It is raised by open and lowered by the alarm at u's end, by an add
	// that found u's sequence spent, and by close.
	entered atomic.Uint64
	unitEnd atomic.Int64
	base    [4]uint64 // version, type, method and machine bits per method
	live    atomic.Uint64
	_       [8]byte
	wasted  atomic.Uint64

	alarmMu   sync.Mutex
	stopAlarm func() bool // the live unit's alarm; under alarmMu

	// Issued-ID accounting: IDs come in contiguous segments of packed
	// states, broken only when a new unit starts at a random seq. Jumps
	// to a new segment take jumpMu, so segStart always belongs to the
	// segment that state is in.
	jumpMu     sync.Mutex
	segStart   uint64
	issuedPrev uint64
	// init is the state the run started at: the last state of the unit
	// below its floor, or 0; nothing issued it (countSpent).
	init uint64

	guard    GuardStore
	guardErr atomic.Pointer[error]         // last save failed with this error
	limitCh  atomic.Pointer[chan struct{}] // closed when limit or guardErr changes
	kick     chan struct{}                 // asks the reserver to extend now
	stop     chan struct{}
	done     chan struct{}
}

// startRun prepares issuing for machine. No ID below unit minFloor is issued
// (Rekey onto the same machine ID passes the old run's end).
func (g *Generator) startRun(ctx context.Context, machine MachineID, guard GuardStore, minFloor uint64) (*run, error) {
	r := &run{guard: guard}
	for m := range r.base {
		r.base[m] = fixedBits(g.cfg.Layout, uint64(g.cfg.Version), uint64(g.cfg.Type), uint64(m), uint64(machine))
	}
	ch := make(chan struct{})
	r.limitCh.Store(&ch)
	if guard == nil {
		if minFloor > 0 {
			r.state.Store(minFloor<<g.sb - 1)
		}
		r.limit.Store(g.endPk)
		r.init = r.state.Load()
		r.segStart = r.state.Load() + 1
		r.entered.Store(r.state.Load() >> g.sb)
		return r, nil
	}
	mk, err := loadMark(ctx, guard, GuardUse{Machine: machine, Shape: g.shape(), MaxBorrow: g.cfg.MaxBorrow})
	if err != nil {
		return nil, fmt.Errorf("%w: loading the mark of machine %d: %w", ErrGuard, machine, err)
	}
	mark, moved, err := g.shapeFloor(machine, mk)
	if err != nil {
		return nil, err
	}
	floor := max(g.unitCeil(mark), minFloor)
	if floor > g.maxTime {
		return nil, fmt.Errorf("%w: the time guard's mark %s is past the last unit", ErrEndOfTime, mark.UTC().Format(time.RFC3339Nano))
	}
	now, err := g.nowUnit()
	if err != nil {
		return nil, err
	}
	if floor > now+g.borrow {
		// The clock is behind what was already issued by more than we
		// may borrow: wait for it, or refuse.
		ready := g.instantOf(floor - g.borrow)
		gap := ready.Sub(g.clock.Now())
		if gap > g.cfg.MaxStartupWait {
			if moved != "" {
				return nil, fmt.Errorf("%w: %w: machine %d: %s; the clock reads %s, %s before that (max_borrow %s, max_startup_wait %s); keep the old epoch, use another machine ID, or wait",
					ErrClockBehind, ErrShape, machine, moved, g.clock.Now().UTC().Format(time.RFC3339Nano),
					g.instantOf(floor).Sub(g.clock.Now()).Round(time.Millisecond), g.cfg.MaxBorrow, g.cfg.MaxStartupWait)
			}
			return nil, fmt.Errorf("%w: the clock reads %s, %s behind the mark %s of machine %d (max_borrow %s, max_startup_wait %s); fix the clock or wait",
				ErrClockBehind, g.clock.Now().UTC().Format(time.RFC3339Nano), g.instantOf(floor).Sub(g.clock.Now()).Round(time.Millisecond),
				mark.UTC().Format(time.RFC3339Nano), machine, g.cfg.MaxBorrow, g.cfg.MaxStartupWait)
		}
		g.log.Warn("clock is behind the time guard's mark; waiting", "machine", machine,
			"mark", mark.UTC().Format(time.RFC3339Nano), "wait", gap.Round(time.Millisecond))
		for {
			if now, err = g.nowUnit(); err != nil {
				return nil, err
			}
			if floor <= now+g.borrow {
				break
			}
			if err := sleep(ctx, g.clock, g.instantOf(floor-g.borrow).Sub(g.clock.Now())); err != nil {
				return nil, fmt.Errorf("%w: waiting for the clock to reach the mark %s: %w", ErrClockBehind, mark.UTC().Format(time.RFC3339Nano), err)
			}
		}
	}
	if floor > 0 {
		r.state.Store(floor<<g.sb - 1)
	}
	r.init = r.state.Load()
	r.segStart = r.state.Load() + 1
	r.entered.Store(r.state.Load() >> g.sb)
	// The first reservation is durable before any ID is issued.
	target := min(max(now, floor)+g.window, g.maxTime+1)
	if err := guard.Save(ctx, g.instantOf(target)); err != nil {
		return nil, fmt.Errorf("%w: saving the first reservation of machine %d: %w", ErrGuard, machine, err)
	}
	r.limit.Store(target << g.sb)
	r.kick = make(chan struct{}, 1)
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	go g.reserve(r)
	return r, nil
}

// loadMark loads the mark, with its shape when the store records one.
func loadMark(ctx context.Context, guard GuardStore, use GuardUse) (Mark, error) {
	if sg, ok := guard.(ShapedGuard); ok {
		return sg.LoadFor(ctx, use)
	}
	at, err := guard.Load(ctx)
	return Mark{At: at}, err
}

// shapeFloor applies the rules of a mark written with another shape and
// returns the instant the new time fields must start at (or above). When
// that instant lies later than the mark because the epoch moved later, it
// also says so, naming both epochs, for the error if the wait is too long.
//
//   - Another layout: refused. The fields sit elsewhere, so an ID of one
//     layout can equal an ID of the other whatever the instants.
//   - A later epoch: the same instant gives smaller time fields, so the new
//     fields start above every old one at mark + (new epoch - old epoch).
//   - An earlier epoch: the mark itself suffices (larger fields).
//   - Another type or version: the IDs differ in bit 62 or 63 and cannot
//     meet; the epoch rule above still applies, because the mark is the
//     only record of every earlier shape of this machine ID (a later
//     return to the old type must still start above its IDs).
func (g *Generator) shapeFloor(machine MachineID, mk Mark) (time.Time, string, error) {
	own := g.shape()
	if !mk.HasShape || mk.At.IsZero() || mk.Shape == own {
		return mk.At, "", nil
	}
	old := mk.Shape
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	if old.Layout != own.Layout {
		return time.Time{}, "", fmt.Errorf("%w: machine %d: the time guard's mark %s was written by a generator issuing layout %s (%s); this one issues layout %s (%s): IDs of one layout can equal IDs of the other; keep layout %s for machine %d or use another machine ID",
			ErrShape, machine, at(mk.At), old.Layout, old, own.Layout, own, old.Layout, machine)
	}
	from := mk.At
	var moved string
	oldEpoch, newEpoch := time.UnixMilli(old.EpochMs), time.UnixMilli(own.EpochMs)
	switch {
	case own.EpochMs > old.EpochMs:
		from = mk.At.Add(newEpoch.Sub(oldEpoch))
		moved = fmt.Sprintf("the epoch moved later, from %s to %s, so IDs may start only at %s (the mark %s plus the %s the epoch moved), above every time field issued under the old epoch",
			at(oldEpoch), at(newEpoch), at(from), at(mk.At), newEpoch.Sub(oldEpoch))
		g.log.Warn("time guard: "+moved, "machine", machine)
	case own.EpochMs < old.EpochMs:
		g.log.Info("time guard: the epoch moved earlier; starting at the mark, whose time fields are larger than every old one",
			"machine", machine, "old_epoch", at(oldEpoch), "new_epoch", at(newEpoch), "mark", at(mk.At))
	}
	if old.Type != own.Type || old.Version != own.Version {
		g.log.Info("time guard: the mark was written with another type or version; those IDs differ in bit 62 or 63 and cannot equal the new ones",
			"machine", machine, "old", old.String(), "new", own.String(), "start", at(from))
	}
	return from, moved, nil
}

// reserve keeps the durable mark ahead of issuing: every third of the window
// (or when a caller reaches the limit) it saves now+window and then raises
// the limit. While saves fail, issuing continues up to the last durable
// limit, and then callers get ErrGuard.
func (g *Generator) reserve(r *run) {
	defer close(r.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	period := time.Duration(g.window) * g.cfg.Type.Unit() / 3
	for {
		kick := r.kick
		if r.guardErr.Load() != nil {
			kick = nil // failing: retry once a period, however many callers ask
		}
		select {
		case <-r.stop:
			return
		case <-kick:
		case <-g.clock.After(period):
		}
		now, err := g.nowUnit()
		if err != nil {
			continue
		}
		last := (r.state.Load() &^ closedBit) >> g.sb
		target := min(max(now, last+1)+g.window, g.maxTime+1)
		if target<<g.sb <= r.limit.Load() {
			continue
		}
		err = r.guard.Save(ctx, g.instantOf(target))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if r.guardErr.Load() == nil {
				g.log.Error("time guard: saving the reservation failed; issuing stops at the last durable mark",
					"mark", g.instantOf(r.limit.Load()>>g.sb), "err", err)
			}
			e := fmt.Errorf("%w: %w", ErrGuard, err)
			r.guardErr.Store(&e)
		} else {
			if r.guardErr.Swap(nil) != nil {
				g.log.Info("time guard: saving works again")
			}
			r.limit.Store(target << g.sb)
		}
		next := make(chan struct{})
		close(*r.limitCh.Swap(&next))
	}
}

// enter records that an ID of unit u was issued. entered and unitEnd may
// be seen out of step: NextID's fast path then finds the state outside
// entered, or the clock past unitEnd, and takes the checked path.
func (g *Generator) enter(r *run, u uint64) {
	for {
		e := r.entered.Load()
		if u < e || (u == e && r.unitEnd.Load() != 0) {
			return
		}
		if r.entered.CompareAndSwap(e, u) {
			r.unitEnd.Store(g.epochNs + int64(u+1)*g.unitMs*1e6)
			return
		}
	}
}

// open lets NextID issue in unit u without reading the clock, which read
// ns when the checked path entered u, until the clock's alarm at u's end
// closes it. Only a unit entered by the checked path is opened: its
// bounds (the time guard's durable limit, MaxBorrow, the end of time)
// were checked then and hold for all of it, since each is a whole unit.
// A late open, of a unit the clock has left or below the live one, is
// harmless: the alarm runs at once, and an add outside the state's unit
// issues nothing.
func (g *Generator) open(r *run, u uint64, ns int64) {
	end := g.epochNs + int64(u+1)*g.unitMs*1e6
	if g.alarms == nil || ns >= end {
		return
	}
	for {
		l := r.live.Load()
		if l >= u+1 {
			return // open already (the common case: no alarm to arm)
		}
		if r.live.CompareAndSwap(l, u+1) {
			break
		}
	}
	r.alarmMu.Lock()
	defer r.alarmMu.Unlock()
	if r.live.Load() != u+1 || r.state.Load()&closedBit != 0 {
		return // a later unit was opened meanwhile, with its own alarm; or u or the run closed already
	}
	if r.stopAlarm != nil {
		r.stopAlarm() // a unit below u's: it would find nothing to close
	}
	r.stopAlarm = g.alarms.alarm(end, func() { r.live.CompareAndSwap(u+1, 0) })
}

// shut closes NextID's clockless path of r and stops its alarm.
func (r *run) shut() {
	r.alarmMu.Lock()
	defer r.alarmMu.Unlock()
	r.live.Store(0)
	if r.stopAlarm != nil {
		r.stopAlarm()
		r.stopAlarm = nil
	}
}

// issued counts the IDs the run has issued.
func (r *run) issued() uint64 {
	r.jumpMu.Lock()
	defer r.jumpMu.Unlock()
	return r.issuedPrev + (r.state.Load() &^ closedBit) + 1 - r.segStart - r.wasted.Load()
}

// closeRun closes r and returns the last packed state it issued.
func (g *Generator) closeRun(r *run) (uint64, error) {
	last := r.state.Or(closedBit) &^ closedBit // one atomic step, however busy
	r.shut()                                   // adds already fail on the closed state; this frees the alarm
	if r.guard == nil {
		close(*r.limitCh.Load()) // wake the callers waiting for the clock
		return last, nil
	}
	close(r.stop)
	<-r.done
	// The reserver has stopped, so nothing else closes the limit channel:
	// close it to wake every caller waiting on this run for the guard or
	// the clock.
	close(*r.limitCh.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	end := min(last>>g.sb+1, g.maxTime+1)
	if err := r.guard.Save(ctx, g.instantOf(end)); err != nil {
		// The last reservation stays: safe, only a longer wait at restart.
		return last, fmt.Errorf("%w: saving the final mark: %w", ErrGuard, err)
	}
	return last, nil
}
