package machineid

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// renewing is where a lease stands.
type renewing uint8

const (
	held    renewing = iota // renewed in time
	overdue                 // the deadline passed without a renewal; the key may still be ours
	lost                    // the key is not ours: claim again
)

// leased holds a machine ID leased in a store (Redis or etcd): it renews
// the lease, fences the attached generator when it can no longer prove the
// lease held, and re-acquires a lost lease, re-keying the generator. See
// Lease.
type leased struct {
	leaseBase
	provider string
	st       leasestore.Store
	ttl      time.Duration
	margin   time.Duration
	period   time.Duration // between renewals
	retry    time.Duration // between attempts after a failure
	ctx      context.Context
	cancel   context.CancelFunc
	kick     chan struct{} // wakes the renewer (Attach of a lost lease)
	wg       sync.WaitGroup
	initial  *leasestore.Guard // the store of the first hold, for core.New

	mu       sync.Mutex
	id       core.MachineID
	hold     *leasestore.Hold // the current lease; nil once lost
	state    renewing
	cause    error     // why not held
	lastErr  error     // the last failed renewal, for the cause of an overdue lease
	deadline time.Time // fence unless renewed by then
	renewAt  time.Time
	changed  chan struct{} // closed and replaced when deadline, state or hold change
	gen      *core.Generator
	fenced   bool // this lease fenced gen and has not unfenced it
	rekeying bool // a Rekey of gen to hold runs
	// lastRecoverErr is the last re-acquisition failure, logged once.
	lastRecoverErr string
	// recoverAfter holds re-acquisition off after the fleet record
	// refused this host, instead of claiming and releasing every retry.
	recoverAfter time.Time
	fences       uint64
	failures     uint64
	rangeFull    atomic.Uint64 // claims that found the range full
	closed       bool
	renewed      time.Time // when the current hold was last claimed or renewed (sent)

	// memberMu orders the member record's writes, so that an older
	// snapshot never overwrites a newer one; memberErr is the last failed
	// write, logged once. memberKick wakes the goroutine that writes the
	// record after a renewal, so that the renewer never waits for it.
	memberMu   sync.Mutex
	memberErr  string
	memberKick chan struct{}

	// The hold history (history.go, historylease.go): the hold whose entry
	// the history holds (the last installed) and when it was claimed; when
	// the generator was last fenced; the end of a hold this process lost,
	// written once it holds that machine ID again. histMu orders the
	// writes, so that none follows a hold's released entry (histEnded);
	// histErr is the last failed one, logged once.
	installed   *leasestore.Hold
	holdStarted time.Time
	fencedAt    time.Time
	lostEntry   *lostHold
	histMu      sync.Mutex
	histEnded   *leasestore.Hold
	histErr     string
}

// acquireLeased claims an ID of b's range in st and starts renewing it;
// on error st is closed.
func acquireLeased(ctx context.Context, b leaseBase, provider string, st leasestore.Store, ttl, margin time.Duration) (*Lease, error) {
	l := &leased{
		leaseBase: b,
		provider:  provider,
		st:        st,
		ttl:       ttl,
		margin:    margin,
		period:    ttl / 3,
		retry:     min(max(ttl/10, 10*time.Millisecond), time.Second),
		kick:      make(chan struct{}, 1),
		changed:   make(chan struct{}),

		memberKick: make(chan struct{}, 1),
	}
	h, sent, err := l.claim(ctx, 0, false)
	if err != nil {
		st.Close()
		return nil, err
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.install(h, sent)
	l.initial = h.Guard
	l.writeMember(ctx)
	l.writeHistory(ctx) // historylease.go
	_, waits := h.Guard.QuarantineFloor()
	l.log.Info("machineid: leased a machine ID", "machine", h.ID, "method", b.method, "range", b.rng,
		"key", h.Key, "ttl", l.ttl, "fence_after", l.ttl-l.margin, "store", st.Where(), "quarantine", waits)
	l.wg.Add(3)
	go l.renewer()
	go l.watchdog()
	go l.memberWriter() // member.go
	return &Lease{leaseBase: b, provider: provider, h: l}, nil
}

func (l *leased) machine() core.MachineID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id
}

func (l *leased) guard() core.GuardStore { return l.initial }

// timeGuard is the store's mark: it lives beside the lease.
func (l *leased) timeGuard(string) (core.GuardStore, error) { return l.initial, nil }

func (l *leased) attach(gen *core.Generator) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := attachCheck(l.closed, l.gen, gen, l.id); err != nil {
		return err
	}
	if err := l.checkReach(gen.Control().MaxBorrow()); err != nil {
		return err
	}
	l.gen = gen
	l.syncLocked()
	if l.state == lost {
		l.poke()
	}
	return nil
}

func (l *leased) status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statusLocked()
}

func (l *leased) statusLocked() Status {
	st := Status{Provider: l.provider, Machine: l.id, State: l.stateLocked(), Deadline: l.deadline,
		RenewAt: l.renewAt, At: l.clock.Now(), Fences: l.fences, RenewFailures: l.failures, RangeFull: l.rangeFull.Load(), Err: l.cause}
	if l.hold != nil {
		if f, waits := l.hold.Guard.QuarantineFloor(); waits {
			st.QuarantineUntil = f
		}
	}
	return st
}

// prepare is Lease.Prepare: the fleet's record, then the quarantine.
func (l *leased) prepare(ctx context.Context, cfg core.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	h := l.hold
	l.mu.Unlock()
	if h == nil {
		return nil // lost: core.New's first save fails
	}
	if err := l.checkReach(cfg.MaxBorrow); err != nil {
		return err
	}
	if err := l.checkFleet(ctx, cfg); err != nil {
		return err
	}
	return l.waitQuarantine(ctx, h, cfg.MaxBorrow, cfg.ReadyAt)
}

// checkFleet is Lease.CheckFleet.
func (l *leased) checkFleet(ctx context.Context, cfg core.Config) error {
	f, err := l.fleetOf(cfg)
	if err != nil {
		return err
	}
	return l.st.Fleet(ctx, f)
}

// fleetOf is the fleet record of this host with a generator of cfg: its
// shape.
func (l *leased) fleetOf(cfg core.Config) (leasestore.Fleet, error) {
	sh, err := cfg.Shape()
	if err != nil {
		return leasestore.Fleet{}, err
	}
	return leasestore.FleetOf(sh), nil
}

// checkReach refuses, on Redis, a generator borrowing so far ahead that
// this host's IDs could reach past MaxRedisReach after a lost lease: the
// bound a claimant after a Redis data loss waits for.
func (l *leased) checkReach(borrow time.Duration) error {
	if l.provider != ProviderRedis {
		return nil
	}
	return checkReach(l.ttl, l.cfg.Redis.MaxClockSkew, borrow)
}

// install makes h the current lease, claimed at sent.
func (l *leased) install(h *leasestore.Hold, sent time.Time) {
	l.hold, l.id, l.state, l.cause, l.lastErr = h, h.ID, held, nil, nil
	l.renewed = sent
	l.installed, l.holdStarted = h, sent
	l.deadline = sent.Add(l.ttl - l.margin)
	l.renewAt = sent.Add(l.period)
	l.syncLocked()
}

// claim takes a free ID of the range (prefer first), returning the hold
// and when the claim was sent (the lease runs from then). The hold's
// guard knows whether the claim must wait out a quarantine.
func (l *leased) claim(ctx context.Context, prefer core.MachineID, hasPrefer bool) (*leasestore.Hold, time.Time, error) {
	h, sent, err := l.st.Claim(ctx, claimOrder(l.rng, prefer, hasPrefer))
	if err != nil {
		return nil, time.Time{}, err
	}
	if h == nil {
		l.rangeFull.Add(1)
		return nil, time.Time{}, fmt.Errorf("%w: all %d IDs of the %s range %s are leased in %s; wait for a holder to stop or widen the range",
			ErrRangeFull, l.rng.Count, rangeName(l.method), l.rng, l.st.Where())
	}
	h.Guard.NotHolder = l.poke
	return h, sent, nil
}

// poke wakes the renewer: to renew now (a save of the mark found the lease
// gone) or to re-acquire (Attach of a lost lease).
func (l *leased) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *leased) stateLocked() State {
	switch {
	case l.closed:
		return StateNone
	case l.state == held && !l.rekeying:
		return StateHeld
	}
	return StateFenced
}

// syncLocked fences or unfences the generator to match the state, and
// tells the watchdog the deadline or the hold may have changed.
func (l *leased) syncLocked() {
	st := l.stateLocked()
	close(l.changed)
	l.changed = make(chan struct{})
	if l.gen == nil {
		return
	}
	if st == StateHeld && !l.plant.NoDeadlineFence {
		// Besides the watchdog's timer, the generator itself refuses to
		// issue past the deadline, checked on every call: a late timer
		// (a paused process) cannot let an ID slip out.
		l.gen.Control().FenceAfter(l.deadline.Sub(l.clock.Now()), fmt.Errorf("%w: machine %d: no renewal succeeded before the deadline %s",
			ErrLeaseLost, l.id, l.deadline.UTC().Format(time.RFC3339Nano)))
	}
	switch {
	case st == StateFenced && !l.fenced:
		cause := l.cause
		if cause == nil {
			cause = fmt.Errorf("%w: machine %d: the lease is being replaced", ErrLeaseLost, l.id)
		}
		l.gen.Control().Fence(cause)
		l.fenced = true
		l.fencedAt = l.clock.Now()
		l.fences++
		// The deadline the generator was held to until now (FenceAfter):
		// with the log line's time, a reader of the log bounds the last
		// instant this hold could issue, whichever came first.
		l.log.Error("machineid: issuing fenced", "machine", l.id, "deadline", l.deadline.UTC().Format(time.RFC3339Nano), "err", cause)
	case st == StateHeld && l.fenced:
		l.gen.Control().Unfence()
		l.fenced = false
		l.log.Info("machineid: issuing resumed", "machine", l.id)
	}
}

// overdueLocked marks a held lease whose deadline passed.
func (l *leased) overdueLocked() {
	if l.state != held {
		return
	}
	l.state = overdue
	l.overdueCauseLocked()
	l.syncLocked()
}

// overdueCauseLocked says why an overdue lease is fenced, with the last
// failed attempt when there was one.
func (l *leased) overdueCauseLocked() {
	cause := fmt.Errorf("%w: machine %d: no renewal succeeded before the deadline %s (lease TTL %s, safety margin %s)",
		ErrLeaseLost, l.id, l.deadline.UTC().Format(time.RFC3339Nano), l.ttl, l.margin)
	if l.lastErr != nil {
		cause = fmt.Errorf("%w; the last attempt: %w", cause, l.lastErr)
	}
	l.cause = cause
}

// lostLocked marks the lease as not ours, and has the renewer claim again
// at once.
func (l *leased) lostLocked(cause error) {
	l.loseLocked(cause) // the hold history's end of this hold (historylease.go)
	l.state, l.hold, l.cause = lost, nil, cause
	l.syncLocked()
	l.poke()
}

// renewer renews the lease on schedule and, once a generator is attached,
// re-acquires a lost one.
func (l *leased) renewer() {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		var wait time.Duration
		switch {
		case l.state == lost && (l.gen == nil || l.rekeying):
			wait = l.ttl // nothing to do until Attach or the Rekey ends
		case l.state == lost:
			wait = max(l.retry, l.recoverAfter.Sub(l.clock.Now()))
		default:
			wait = l.renewAt.Sub(l.clock.Now())
		}
		l.mu.Unlock()
		select {
		case <-l.ctx.Done():
			return
		case <-l.kick:
		case <-l.clock.After(wait):
		}
		l.mu.Lock()
		h, st, gen, rekeying := l.hold, l.state, l.gen, l.rekeying
		l.mu.Unlock()
		switch {
		case st != lost:
			if l.renew(h) {
				l.refreshMember()
			}
		case gen != nil && !rekeying:
			l.recover(gen)
		}
	}
}

// renew extends h, and says whether it did. The deadline is checked
// before renewing as well as by the watchdog.
func (l *leased) renew(h *leasestore.Hold) bool {
	l.mu.Lock()
	if h == nil || l.hold != h || l.closed { // Close took the hold away
		l.mu.Unlock()
		return false
	}
	if !l.clock.Now().Before(l.deadline) {
		l.overdueLocked()
	}
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(l.ctx, l.period)
	start := time.Now()
	sent, err := l.st.Renew(ctx, h)
	cancel()
	if l.ctx.Err() != nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold != h {
		return false
	}
	switch {
	case errors.Is(err, ErrLeaseLost):
		l.failures++
		l.stats.renew.Observe(time.Since(start))
		l.lostLocked(err)
	case err != nil:
		l.failures++
		l.lastErr = err
		if l.failures == 1 || l.state == held {
			l.log.Warn("machineid: renewing the lease failed; retrying", "machine", h.ID,
				"deadline", l.deadline.UTC().Format(time.RFC3339Nano), "err", err)
		}
		l.renewAt = l.clock.Now().Add(l.retry)
		switch {
		case l.state == overdue:
			l.overdueCauseLocked()
		case !l.clock.Now().Before(l.deadline):
			l.overdueLocked()
		}
	default:
		l.stats.renew.Observe(time.Since(start))
		// The store extended the lease at or after sent, so it lives at
		// least until sent+ttl; the margin keeps the deadline before that.
		l.deadline = sent.Add(l.ttl - l.margin)
		l.renewAt = sent.Add(l.period)
		l.renewed = sent
		if l.state == overdue {
			// The lease was still ours, so nobody held the ID meanwhile.
			l.log.Info("machineid: lease renewed after its deadline; it was never lost", "machine", h.ID)
		}
		l.state, l.cause, l.lastErr = held, nil, nil
		l.syncLocked()
		return true
	}
	return false
}

// recover claims a lease again (the same ID first) and re-keys gen to it.
// Even for the same ID the generator is re-keyed: its old run's guard
// holds the old lease, and the new run must start after whatever a holder
// in between issued. The mark is first raised to gen's own reservation,
// which covers a store that lost its data.
func (l *leased) recover(gen *core.Generator) {
	old := gen.Machine()
	h, sent, err := l.claim(l.ctx, old, true)
	if err != nil {
		if l.ctx.Err() == nil {
			l.mu.Lock()
			l.cause = fmt.Errorf("%w: machine %d: re-acquiring: %w", ErrLeaseLost, old, err)
			repeated := err.Error() == l.lastRecoverErr
			l.lastRecoverErr = err.Error()
			l.mu.Unlock()
			if !repeated { // one line per kind of failure, not one per retry
				l.log.Warn("machineid: re-acquiring a lease failed; retrying", "err", err)
			}
		}
		return
	}
	h.Guard.SetShape(gen.Control().Shape())
	// The store may have lost the fleet record with the lease, and a host
	// of another shape may have recorded its own since: a lost lease is
	// claimed again only under the record as it is now.
	ctx, cancel := context.WithTimeout(l.ctx, l.period)
	err = l.st.Fleet(ctx, leasestore.FleetOf(gen.Control().Shape()))
	cancel()
	if err != nil {
		if l.ctx.Err() == nil {
			l.log.Error("machineid: re-acquired a lease, but the fleet record refuses this host; releasing it and staying fenced", "machine", h.ID, "err", err)
		}
		l.release(h)
		l.mu.Lock()
		l.cause = fmt.Errorf("%w: machine %d: re-acquiring: %w", ErrLeaseLost, old, err)
		if errors.Is(err, ErrFleet) {
			l.recoverAfter = l.clock.Now().Add(l.ttl)
		}
		l.mu.Unlock()
		return
	}
	if h.ID == old {
		// Save stores no less than a quarantine's floor (the generator's
		// own reservation can lie below what a holder the store lost
		// issued, and the next claim trusts this instance's mark).
		ctx, cancel := context.WithTimeout(l.ctx, l.period)
		err := h.Guard.Save(ctx, gen.Stats().Mark)
		cancel()
		if err != nil {
			l.log.Warn("machineid: raising the mark of a re-acquired lease failed; releasing it", "machine", h.ID, "err", err)
			l.release(h)
			return
		}
	}
	l.mu.Lock()
	if l.closed { // Close came while claiming: give the ID back at once
		l.mu.Unlock()
		l.release(h)
		return
	}
	l.rekeying = true // before install, which must not unfence the old run
	l.install(h, sent)
	l.mu.Unlock()
	l.refreshMember()
	l.lastRecoverErr = ""
	l.log.Info("machineid: re-acquired a lease; re-keying", "from", old, "to", h.ID)
	l.wg.Add(1)
	go l.rekey(gen, h, old)
}

// rekey moves gen to h; Rekey may wait for the clock to pass the new ID's
// mark while the renewer keeps h alive.
func (l *leased) rekey(gen *core.Generator, h *leasestore.Hold, old core.MachineID) {
	defer l.wg.Done()
	err := l.waitQuarantine(l.ctx, h, gen.Control().MaxBorrow(), gen.Control().ReadyAt)
	if err == nil {
		err = gen.Control().Rekey(l.ctx, h.ID, h.Guard)
	}
	l.mu.Lock()
	l.rekeying = false
	current := l.hold == h
	switch {
	case errors.Is(err, core.ErrClosed):
		// Its owner closed the generator: nothing is left to fence or
		// re-key. The lease stays held until Close releases it.
		l.gen, l.fenced = nil, false
	case err != nil:
		l.cause = fmt.Errorf("%w: machine %d: re-keying from %d: %w", ErrLeaseLost, h.ID, old, err)
		if current {
			l.state, l.hold = lost, nil
		}
	}
	l.syncLocked()
	l.mu.Unlock()
	switch {
	case err == nil:
		l.log.Info("machineid: re-keyed", "from", old, "to", h.ID)
		l.refreshMember() // held again
	case l.ctx.Err() != nil || errors.Is(err, core.ErrClosed):
		// Closing.
	default:
		l.log.Error("machineid: re-keying failed; releasing the lease and retrying", "machine", h.ID, "err", err)
		if current {
			l.release(h)
		}
	}
}

// release gives h's ID back, if h still holds it, with the exact end of
// what was issued under it when that is known (leaseGuard.final), so that
// the next claim need not wait out a quarantine for a hold that issued
// little or nothing.
func (l *leased) release(h *leasestore.Hold) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), l.period)
	defer cancel()
	final, ok := h.Guard.Final(ctx) // no write of this hold succeeds any more
	l.dropMember(ctx, h)
	l.endHistory(ctx, h, final, ok)
	if err := l.st.Release(ctx, h, final, ok); err != nil {
		l.log.Warn("machineid: releasing a lease failed; it expires", "key", h.Key, "ttl", l.ttl, "err", err)
	}
}

// watchdog fences the generator when the deadline passes without a
// renewal, even while a renewal is stuck in the network, and at once when
// the store reports the lease gone.
func (l *leased) watchdog() {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		changed, dl, armed, h := l.changed, l.deadline, l.state == held, l.hold
		l.mu.Unlock()
		var fire <-chan time.Time
		if armed && !l.plant.NoDeadlineFence {
			fire = l.clock.After(dl.Sub(l.clock.Now()))
		}
		var gone <-chan struct{}
		if h != nil {
			gone = h.Lost
		}
		select {
		case <-l.ctx.Done():
			return
		case <-changed:
		case <-fire:
			l.mu.Lock()
			if l.state == held && l.deadline.Equal(dl) {
				l.overdueLocked()
			}
			l.mu.Unlock()
		case <-gone:
			l.mu.Lock()
			if l.hold == h {
				l.lostLocked(fmt.Errorf("%w: machine %d: %s was deleted or taken over in %s", ErrLeaseLost, h.ID, h.Key, l.st.Where()))
			}
			l.mu.Unlock()
		}
	}
}

func (l *leased) close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	h, gen := l.hold, l.gen
	l.hold = nil
	if gen != nil && !l.fenced {
		gen.Control().Fence(fmt.Errorf("%w: machine %d: the lease was released", ErrLeaseLost, l.id))
		l.fenced = true
	}
	l.mu.Unlock()

	l.cancel()
	l.wg.Wait()
	var errs []error
	if h != nil {
		// With the exact end of what was issued under h, so that the next
		// claim need not wait out a quarantine nor the unused reservation.
		final, ok := h.Guard.Final(ctx)
		l.dropMember(ctx, h)
		l.endHistory(ctx, h, final, ok)
		if err := l.st.Release(ctx, h, final, ok); err != nil {
			errs = append(errs, err)
		} else {
			l.log.Info("machineid: released the lease", "machine", h.ID, "key", h.Key, "exact_end", ok,
				"final_mark", final.UTC().Format(time.RFC3339Nano))
		}
	}
	errs = append(errs, l.st.Close())
	return errors.Join(errs...)
}

// waitQuarantine waits, renewing meanwhile, until the clock lets gen issue
// above h's floor: a quarantine's, or the exact end of the previous hold
// when that lies ahead (a hold released before it issued anything leaves
// its own floor). Only ctx bounds it, not the generator's MaxStartupWait.
func (l *leased) waitQuarantine(ctx context.Context, h *leasestore.Hold, borrow time.Duration, readyAt func(time.Time) time.Time) error {
	floor, waits := h.Guard.QuarantineFloor()
	if floor.IsZero() {
		return nil
	}
	until := readyAt(floor)
	left := until.Sub(l.clock.Now())
	if left <= 0 {
		return nil
	}
	if waits {
		l.log.Warn(fmt.Sprintf("machineid: quarantine: machine %d issues from %s; %s may have lost a lease since the ID was last held", h.ID, floor.UTC().Format(time.RFC3339Nano), l.st.Where()),
			"machine", h.ID, "wait", left.Round(time.Millisecond), "max_redis_reach", maxRedisReach, "max_borrow", borrow)
	} else {
		l.log.Info(fmt.Sprintf("machineid: machine %d issues from %s, where the hold before it would have started", h.ID, floor.UTC().Format(time.RFC3339Nano)),
			"machine", h.ID, "wait", left.Round(time.Millisecond), "max_borrow", borrow)
	}
	l.stats.quarantine.Store(until.UnixNano())
	defer l.stats.quarantine.Store(0)
	for {
		left := until.Sub(l.clock.Now())
		if left <= 0 {
			return nil
		}
		l.mu.Lock()
		lost := l.hold != h
		l.mu.Unlock()
		if lost {
			return fmt.Errorf("%w: machine %d: lost during the quarantine", ErrLeaseLost, h.ID)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("machineid: machine %d: waiting out the quarantine until %s: %w", h.ID, until.UTC().Format(time.RFC3339Nano), ctx.Err())
		case <-l.clock.After(min(left, time.Second)):
		}
	}
}

// claimOrder is the order a claim tries the IDs of rng: prefer first (when
// it lies in rng), then every other ID from a random point, so that a fleet
// starting together spreads out instead of fighting over the first ID.
func claimOrder(rng core.MachineRange, prefer core.MachineID, hasPrefer bool) []core.MachineID {
	n := int(rng.Count)
	out := make([]core.MachineID, 0, n)
	hasPrefer = hasPrefer && rng.Contains(prefer)
	if hasPrefer {
		out = append(out, prefer)
	}
	start := rand.IntN(n)
	for i := range n {
		id := rng.First + core.MachineID((start+i)%n)
		if !hasPrefer || id != prefer {
			out = append(out, id)
		}
	}
	return out
}
