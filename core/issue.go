package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// validMethod refuses methods a generator never issues.
func validMethod(m Method) error {
	if m > REST {
		return &RangeError{Field: "method", Value: uint64(m), Max: uint64(REST)}
	}
	return nil
}

// NextID issues one ID with method m. It blocks only when the sequence ran
// out beyond MaxBorrow or the time guard lags; ctx bounds that wait. With a
// ctx that is already done, it issues only what needs no wait: otherwise it
// returns at once with an error wrapping ctx.Err().
func (g *Generator) NextID(ctx context.Context, m Method) (ID, error) {
	if err := validMethod(m); err != nil {
		return 0, err
	}
	sb := g.sb & 63 // masked shifts compile to single instructions
	gt := g.gate.Load()
	r := g.cur.Load()
	// The clockless path (docs/design/generator.md, the fast path): no
	// fence and no deadline, and the unit last entered by the checked path
	// is live: its alarm has not yet run at its end. Its bounds were checked when it was entered and
	// hold for the whole unit, so an atomic add reserves the next state,
	// which unlike a compare-and-swap never fails under contention. An
	// add past the unit's end is dropped unissued and closes the unit, so
	// at most the cores racing at that moment waste a state each.
	clocked := gt >= 0 // not fenced
	if gt == 0 {
		if u := r.live.Load(); u != 0 {
			p := r.state.Add(1)
			if p>>sb == u-1 {
				return ID(r.base[m&3] | (u-1)<<(g.shifts.time&63) | (p&g.seqMask)<<(g.shifts.seq&63)), nil
			}
			r.live.CompareAndSwap(u, 0)
			r.unitEnd.CompareAndSwap(g.epochNs+int64(u)*g.unitMs*1e6, 0) // the clocked path's end of the same unit
			r.wasted.Add(1)
			g.crossed(p)
			clocked = false // the state is past the unit: straight to take
		}
	}
	// The clocked path, for a deadline (checked against the clock on
	// every call) or a clock without alarms, written out inline (the
	// compiler would not inline the clock read): the clock has not left
	// the unit last issued in, and its sequence has room. Anything else
	// (a new unit, a unit's end, a fence) goes through take, with this
	// clock reading.
	var ns int64
	if s := g.sys; s != nil {
		ns = s.baseNs + int64(time.Since(s.base))
	} else {
		ns = g.clock.Now().UnixNano()
	}
	if clocked && (gt == 0 || ns < gt) {
		if e, end := r.entered.Load(), r.unitEnd.Load(); ns < end {
			p := r.state.Add(1)
			if p>>sb == e {
				return ID(r.base[m&3] | e<<(g.shifts.time&63) | (p&g.seqMask)<<(g.shifts.seq&63)), nil
			}
			r.unitEnd.CompareAndSwap(end, 0)
			r.wasted.Add(1)
			g.crossed(p)
		}
	}
	r, p, _, err := g.takeAt(ctx, 1, ns)
	if err != nil {
		return 0, err
	}
	return ID(r.base[m&3] | (p>>sb)<<(g.shifts.time&63) | (p&g.seqMask)<<(g.shifts.seq&63)), nil
}

// NextIDs issues n IDs with method m, in increasing order.
func (g *Generator) NextIDs(ctx context.Context, m Method, n int) ([]ID, error) {
	return g.AppendIDs(ctx, m, nil, n)
}

// MaxCount is the largest count NextIDs, AppendIDs and TryAppendIDs take
// in one call (16,777,216: 128 MiB of IDs, 16 s of a max-peak sequence).
// Larger counts fail with ErrInvalidCount instead of trying to allocate.
const MaxCount = 1 << 24

// checkCount refuses counts that can never be issued in one call.
func checkCount(n int) error {
	if n < 1 || n > MaxCount {
		return fmt.Errorf("%w: count %d; want 1-%d", ErrInvalidCount, n, MaxCount)
	}
	return nil
}

// AppendIDs appends n new IDs with method m to dst. Runs of sequence numbers
// are reserved with one compare-and-swap each, spanning units as needed. On
// error, dst holds the IDs issued before it. n must be 1-MaxCount.
func (g *Generator) AppendIDs(ctx context.Context, m Method, dst []ID, n int) ([]ID, error) {
	if err := validMethod(m); err != nil {
		return dst, err
	}
	if err := checkCount(n); err != nil {
		return dst, err
	}
	if cap(dst)-len(dst) < n {
		grown := make([]ID, len(dst), len(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	for left := uint64(n); left > 0; {
		r, p, cnt, err := g.take(ctx, left)
		if err != nil {
			return dst, err
		}
		left -= cnt
		dst = g.appendStates(dst, r, p, cnt, m)
	}
	return dst, nil
}

// appendStates appends the IDs of the cnt packed states from p of run r.
func (g *Generator) appendStates(dst []ID, r *run, p, cnt uint64, m Method) []ID {
	dst = slices.Grow(dst, int(cnt))
	for cnt > 0 {
		seq := p & g.seqMask
		k := min(cnt, g.seqMask-seq+1) // the rest of this unit
		id := r.base[m] | (p>>g.sb)<<g.shifts.time | seq<<g.shifts.seq
		step := uint64(1) << g.shifts.seq
		out := dst[len(dst) : len(dst)+int(k)]
		for i := range out {
			out[i] = ID(id)
			id += step
		}
		dst = dst[:len(dst)+int(k)]
		p += k
		cnt -= k
	}
	return dst
}

// guardRetry is the retry hint of TryAppendIDs while the time guard's
// reservation lags behind issuing (a save in flight): it is usually a
// store's round trip away, and says nothing about the sequence.
const guardRetry = 10 * time.Millisecond

// TryAppendIDs appends to dst up to n new IDs with method m that can be
// issued now, in increasing order, and never waits. When it appended fewer
// than n, retryAfter (above zero) says when issuing may continue: the start
// of the next unit that MaxBorrow lets it reach, or guardRetry while the
// time guard's reservation lags. An error (fenced, closed, clock, a failed
// time guard) comes with the IDs issued before it. n must be 1-MaxCount.
// Results grow as IDs are issued: nothing is allocated for IDs not issued.
func (g *Generator) TryAppendIDs(m Method, dst []ID, n int) ([]ID, time.Duration, error) {
	return g.tryAppend(m, dst, n, 0, nil)
}

// tryAppend is TryAppendIDs that also stays below pace (a packed state; 0
// is no such bound), the bound of Share. One call's IDs come from one run:
// when *from is set and the generator was re-keyed since, it fails with
// ErrFenced (the IDs of two machine IDs need not increase); from nil is
// one call.
func (g *Generator) tryAppend(m Method, dst []ID, n int, pace uint64, from **run) ([]ID, time.Duration, error) {
	if err := validMethod(m); err != nil {
		return dst, 0, err
	}
	if err := checkCount(n); err != nil {
		return dst, 0, err
	}
	var own *run
	if from == nil {
		from = &own
	}
	ns := g.nowNanos()
	for left := uint64(n); left > 0; {
		r, p, cnt, blocked, err := g.reserveAt(left, ns, pace)
		if err != nil {
			return dst, 0, err
		}
		if *from == nil {
			*from = r
		} else if r != *from {
			return dst, 0, fmt.Errorf("%w: the machine ID changed during the call", ErrFenced)
		}
		if cnt == 0 {
			d, err := g.retryAfter(r, blocked, ns, pace)
			return dst, d, err
		}
		left -= cnt
		dst = g.appendStates(dst, r, p, cnt, m)
	}
	return dst, 0, nil
}

// retryAfter says how long from ns until start may be issued, or why it
// never can; it asks the reserver to extend when the guard is the bound.
func (g *Generator) retryAfter(r *run, start uint64, ns int64, pace uint64) (time.Duration, error) {
	if start >= g.endPk {
		return 0, fmt.Errorf("%w: unit %d is past the last unit %d (%s)", ErrEndOfTime, start>>g.sb, g.maxTime,
			FormatInstant(g.cfg.Type, g.instantOf(g.maxTime)))
	}
	if start >= r.limit.Load() {
		if e := r.guardErr.Load(); e != nil {
			return 0, *e
		}
		select {
		case r.kick <- struct{}{}:
		default:
		}
		return guardRetry, nil
	}
	var at int64 // Unix ns at which start may be issued
	if pace != 0 && start >= pace {
		at = g.paceTime(start)
	} else {
		at = g.epochNs + int64(start>>g.sb-g.borrow)*g.unitMs*1e6
	}
	return time.Duration(max(at-ns, 1)), nil
}

// take reserves up to n consecutive packed states and returns the first and
// how many, checking every bound. With NextID's fast path it is the whole
// concurrency story: both only ever raise the state (by compare-and-swap
// here, by atomic add there), so no packed state, hence no ID, is handed
// out twice.
func (g *Generator) take(ctx context.Context, n uint64) (*run, uint64, uint64, error) {
	return g.takeAt(ctx, n, g.nowNanos())
}

// takeAt is take with the clock already read at ns, waiting as needed.
func (g *Generator) takeAt(ctx context.Context, n uint64, ns int64) (*run, uint64, uint64, error) {
	for {
		r, p, cnt, blocked, err := g.reserveAt(n, ns, 0)
		if err != nil || cnt > 0 {
			return r, p, cnt, err
		}
		if err := g.wait(ctx, r, blocked); err != nil {
			return nil, 0, 0, err
		}
		ns = g.nowNanos()
	}
}

// reserveAt reserves up to n consecutive packed states at clock reading ns
// without waiting, also below pace unless it is 0. With nothing issuable
// now it returns cnt 0, the run and the first state it could not issue.
// The clock is read once, before the state: the window between loading the
// state and swapping it stays a few instructions wide, and a lost race
// retries without another clock read. A reading a little stale is
// harmless: it can only delay a new unit or tighten the bound.
func (g *Generator) reserveAt(n uint64, ns int64, pace uint64) (r *run, p, cnt, blocked uint64, err error) {
	for {
		if gt := g.gate.Load(); gt != 0 && (gt < 0 || ns >= gt) {
			if err := g.gateErr(ns); err != nil {
				return nil, 0, 0, 0, err
			}
		}
		now, err := g.unitOf(ns)
		if err != nil {
			return nil, 0, 0, 0, err
		}
		r := g.cur.Load()
		old := r.state.Load()
		next := old + 1 // carries into the next unit when the sequence runs out
		start, jump := next, false
		if now > next>>g.sb {
			// The clock has moved past: start the new unit at a random seq.
			start, jump = now<<g.sb|g.randSeq(), true
		}
		// Issue within the current unit, and up to MaxBorrow ahead of the
		// clock; never at or past the durable mark or the end of time.
		bound := max(now+g.borrow+1, r.entered.Load()+1) << g.sb
		bound = min(bound, g.endPk, r.limit.Load())
		if pace != 0 {
			bound = min(bound, pace)
		}
		if start >= bound { // also when the run is closed: its state is above any bound
			if old&closedBit != 0 {
				if g.cur.Load() != r {
					continue // re-keyed under us
				}
				if g.rekeying.Load() {
					return nil, 0, 0, 0, errRekeying
				}
				return nil, 0, 0, 0, ErrClosed
			}
			return r, 0, 0, start, nil
		}
		end := min(start+n, bound)
		if !jump {
			if r.state.CompareAndSwap(old, end-1) {
				g.countSpent(r, old, start, end)
				g.enter(r, (end-1)>>g.sb)
				g.open(r, (end-1)>>g.sb, ns)
				return r, start, end - start, 0, nil
			}
			continue
		}
		r.jumpMu.Lock()
		ok := r.state.CompareAndSwap(old, end-1)
		if ok {
			r.issuedPrev += old - r.segStart + 1
			r.segStart = start
		}
		r.jumpMu.Unlock()
		if ok {
			g.countSpent(r, old, start, end)
			g.enter(r, (end-1)>>g.sb)
			g.open(r, (end-1)>>g.sb, ns)
			return r, start, end - start, 0, nil
		}
	}
}

// crossed counts the unit a failed add of NextID's fast path ran out of:
// the add that took the state from a unit's last state to the next unit's
// first (p, its result, has seq 0) is the one that found it spent. Other
// failed adds found the state past the unit already. It runs only when the
// add failed, so the fast path's successful add pays nothing for it.
func (g *Generator) crossed(p uint64) {
	if p&g.seqMask == 0 {
		g.spent.Add(1)
	}
}

// countSpent counts the units whose sequence a reservation ran out of: it
// took the state from old to end-1, issuing [start, end). Every unit
// boundary inside the reservation was crossed because a unit ran out, and
// so was old's when old was its unit's last state (a jump, which starts a
// new unit because the clock moved on, leaves a unit that did not run out
// otherwise). The run's starting state is the last state of the unit below
// its floor, which nothing issued: it counts nothing.
func (g *Generator) countSpent(r *run, old, start, end uint64) {
	n := (end-1)>>g.sb - start>>g.sb
	if old&g.seqMask == g.seqMask && old != r.init {
		n++
	}
	if n > 0 {
		g.spent.Add(n)
	}
}

func (g *Generator) randSeq() uint64 {
	if g.randMax == 1 {
		return 0
	}
	return rand.Uint64N(g.randMax)
}

// wait blocks until start may be issued, or says why it never can. The
// run's limit channel wakes it too: it is closed when the limit moves and
// when the run is closed (Close, Rekey), so no caller stays parked on a run
// that will never issue again; its retry then finds ErrClosed, ErrFenced
// while re-keying, or the new run.
func (g *Generator) wait(ctx context.Context, r *run, start uint64) error {
	unit := start >> g.sb
	if start >= g.endPk {
		return fmt.Errorf("%w: unit %d is past the last unit %d (%s)", ErrEndOfTime, unit, g.maxTime,
			FormatInstant(g.cfg.Type, g.instantOf(g.maxTime)))
	}
	ch := *r.limitCh.Load()
	if r.state.Load()&closedBit != 0 {
		return nil // closed since reserveAt looked: it says so on the retry
	}
	if start >= r.limit.Load() {
		if e := r.guardErr.Load(); e != nil {
			return *e
		}
		if start < r.limit.Load() {
			return nil
		}
		select {
		case r.kick <- struct{}{}:
		default:
		}
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for the time guard: %w", ErrGuard, ctx.Err())
		}
	}
	// Out of sequence beyond MaxBorrow: sleep until the clock reaches the
	// unit that makes start issuable. A context already done means "only
	// what needs no wait" (the servers use it to keep waits off their
	// read loops), so it is not counted as a wait.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sequence exhausted, waiting for the clock: %w", err)
	}
	g.waits.Add(1)
	d := g.instantOf(unit - g.borrow).Sub(g.clock.Now())
	if d <= 0 {
		return nil
	}
	select {
	case <-g.clock.After(d):
		return nil
	case <-ch: // the limit moved or the run closed: look again
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sequence exhausted, waiting for the clock: %w", ctx.Err())
	}
}
