package machineid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
)

// State is what a lease lets its generator do.
type State uint8

const (
	// StateNone: no Redis lease (a static, iptable or k8s ID, which
	// nothing can take away), or the lease was closed.
	StateNone State = iota
	// StateHeld: the Redis lease is held and was renewed in time.
	StateHeld
	// StateFenced: the lease could not be proven held (renewal failing
	// past the deadline, lost, or being replaced); the generator is
	// fenced.
	StateFenced
)

// String is "none", "held" or "fenced".
func (s State) String() string {
	switch s {
	case StateNone:
		return "none"
	case StateHeld:
		return "held"
	case StateFenced:
		return "fenced"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Status is a snapshot of a lease.
type Status struct {
	Provider string         // which provider gave the ID
	Machine  core.MachineID // the ID in use
	State    State
	// Deadline is when the generator is fenced unless a renewal succeeds
	// first, on the lease's clock; zero without a Redis lease.
	Deadline time.Time
	// RenewAt is when the next renewal is due, on the lease's clock; zero
	// without a Redis lease.
	RenewAt time.Time
	// At is the lease clock's reading when the snapshot was taken: the
	// time left is Deadline.Sub(At) and RenewAt.Sub(At).
	At time.Time
	// Fences counts the times the generator was fenced.
	Fences uint64
	// RenewFailures counts renewals that did not reach Redis or found the
	// lease gone.
	RenewFailures uint64
	// Err says why the state is not held; nil otherwise.
	Err error
	// QuarantineUntil is, for a Redis lease whose claim did not follow a
	// clean release on the same Redis instance, the instant above which
	// its IDs' time fields lie (an unknown earlier holder whose key Redis
	// lost may issue below it); zero otherwise. See WaitQuarantine.
	QuarantineUntil time.Time
}

// leaseBase is what every lease shares, whatever its provider.
type leaseBase struct {
	cfg   Config // resolved
	mode  Mode
	rng   Range
	log   *slog.Logger
	clock core.Clock
	m     *metrics
}

func newLeaseBase(c Config, mode Mode, rng Range) leaseBase {
	b := leaseBase{cfg: c, mode: mode, rng: rng, log: c.Logger, clock: c.Clock}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.clock == nil {
		b.clock = core.NewSystemClock()
	}
	b.m = newMetrics(c.Registerer, mode)
	return b
}

// renewing is where a Redis lease stands.
type renewing uint8

const (
	held    renewing = iota // renewed in time
	overdue                 // the deadline passed without a renewal; the key may still be ours
	lost                    // the key is not ours: claim again
)

// Lease is a machine ID held by this process. For a static, iptable or k8s
// ID it is a plain value; for a Redis lease it also owns two goroutines,
// started by Acquire and stopped by Close: one renews the lease every
// third of its TTL (and, once a generator is attached, re-acquires a lost
// lease and re-keys the generator), the other fences the generator when
// the renewal deadline passes.
//
// The wire format in Redis, per machine ID (see Keys, ShapeKey and
// ReleasedKey): the lease key holds "<128 random bits>/<host>/<pid>" with
// the TTL; the mark key holds the time guard's mark in unix milliseconds,
// without a TTL, only ever raised; the shape key the JSON shape of the
// generator that last wrote it; the released key the clean-release record.
type Lease struct {
	leaseBase
	provider string

	// Redis leases only; rc is nil for the other providers.
	rc      redis.UniversalClient
	conn    *conn
	ownsRC  bool
	ttl     time.Duration
	margin  time.Duration
	period  time.Duration // between renewals
	retry   time.Duration // between attempts after a failure
	ctx     context.Context
	cancel  context.CancelFunc
	kick    chan struct{} // wakes the renewer (Attach of a lost lease)
	wg      sync.WaitGroup
	initial core.GuardStore // the store of the first hold, for core.New

	mu       sync.Mutex
	id       core.MachineID
	hold     *hold // the current lease; nil once lost
	state    renewing
	cause    error     // why not held
	deadline time.Time // fence unless renewed by then
	renewAt  time.Time
	changed  chan struct{} // closed and replaced when deadline or state change
	gen      *core.Generator
	fenced   bool // this lease fenced gen and has not unfenced it
	rekeying bool // a Rekey of gen to hold runs
	// lastRecoverErr is the last re-acquisition failure, logged once.
	lastRecoverErr string
	skewed         bool // the last renewal found the clock beyond MaxClockSkew
	fences         uint64
	failures       uint64
	closed         bool
	file           *core.FileGuard
	fileDir        string

	closeOnce sync.Once
	closeErr  error
}

func newFixedLease(b leaseBase, provider string, id core.MachineID) *Lease {
	l := &Lease{leaseBase: b, provider: provider, id: id}
	b.log.Info("machineid: machine ID", "provider", provider, "machine", id, "mode", b.mode, "range", b.rng)
	b.m.setMachine(int(id))
	b.m.setState(StateNone)
	return l
}

func acquireRedis(ctx context.Context, b leaseBase) (*Lease, error) {
	rc := b.cfg.Redis
	l := &Lease{
		leaseBase: b, provider: ProviderRedis,
		ttl: rc.LeaseTTL, margin: rc.SafetyMargin, period: rc.LeaseTTL / 3,
		retry:   min(max(rc.LeaseTTL/10, 10*time.Millisecond), time.Second),
		kick:    make(chan struct{}, 1),
		changed: make(chan struct{}),
	}
	l.rc, l.ownsRC = newClient(rc)
	l.conn = newConn(l.rc, rc)
	h, sent, err := l.claim(ctx, 0, false)
	if err != nil {
		if l.ownsRC {
			l.rc.Close()
		}
		return nil, err
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.install(h, sent)
	l.initial = h.guard
	l.log.Info("machineid: leased a machine ID", "machine", h.id, "mode", b.mode, "range", b.rng,
		"key", h.leaseKey, "ttl", l.ttl, "fence_after", l.ttl-l.margin, "redis", rc.where(),
		"clean_release", h.guard.q.clean, "min_replicas", rc.MinReplicas)
	l.wg.Add(2)
	go l.renewer()
	go l.watchdog()
	return l, nil
}

// install makes h the current lease, claimed at sent.
func (l *Lease) install(h *hold, sent time.Time) {
	l.hold, l.id, l.state, l.cause = h, h.id, held, nil
	l.deadline = sent.Add(l.ttl - l.margin)
	l.renewAt = sent.Add(l.period)
	l.m.setMachine(int(h.id))
	l.syncLocked()
}

// ID returns the machine ID in use. After a lost lease was replaced it is
// the new one.
func (l *Lease) ID() core.MachineID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id
}

// Provider returns the name of the provider that gave the ID.
func (l *Lease) Provider() string { return l.provider }

// Range returns the range the ID was taken from.
func (l *Lease) Range() Range { return l.rng }

// Guard returns the time guard store of a Redis lease, for
// core.Config.Guard: the mark lives in Redis beside the lease and only the
// holder can raise it. It is nil for the other providers; use TimeGuard to
// fall back to a file.
func (l *Lease) Guard() core.GuardStore { return l.initial }

// TimeGuard returns the time guard to hand to core.Config.Guard: Guard for
// a Redis lease; otherwise a core.FileGuard of the machine ID in dir,
// opened on the first call and closed by Close; nil when dir is "" (no
// time guard).
func (l *Lease) TimeGuard(dir string) (core.GuardStore, error) {
	if l.initial != nil {
		return l.initial, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return nil, ErrClosed
	case l.file != nil && l.fileDir == dir:
		return l.file, nil
	case l.file != nil:
		return nil, fmt.Errorf("%w: TimeGuard(%q) after TimeGuard(%q)", ErrConfig, dir, l.fileDir)
	case dir == "":
		return nil, nil
	}
	f, err := core.OpenFileGuard(dir, l.id)
	if err != nil {
		return nil, err
	}
	l.file, l.fileDir = f, dir
	return f, nil
}

// Attach hands the lease the generator issuing with its ID (built with
// Guard or TimeGuard as its time guard). From then on the lease fences gen
// when it can no longer prove it holds the ID, and re-acquires: the same ID
// when it is free, else another of the range, moving gen to it with
// core.Generator.Rekey; then it unfences. For a static, iptable or k8s ID
// Attach only checks the machine ID.
func (l *Lease) Attach(gen *core.Generator) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosed
	case l.gen != nil:
		return fmt.Errorf("%w: a generator is already attached", ErrAttached)
	case gen.Machine() != l.id:
		return fmt.Errorf("%w: the generator issues machine ID %d, the lease holds %d", ErrAttached, gen.Machine(), l.id)
	}
	l.gen = gen
	if l.rc == nil {
		return nil
	}
	l.syncLocked()
	if l.state == lost {
		l.poke()
	}
	return nil
}

// poke wakes the renewer: to renew now (a save of the mark found the lease
// gone) or to re-acquire (Attach of a lost lease).
func (l *Lease) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Status returns a snapshot of the lease.
func (l *Lease) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Status{Provider: l.provider, Machine: l.id, State: l.stateLocked(), Deadline: l.deadline,
		Fences: l.fences, RenewFailures: l.failures, Err: l.cause, At: l.clock.Now()}
	if l.rc != nil {
		st.RenewAt = l.renewAt
	}
	if l.hold != nil {
		if f, clean := l.hold.guard.quarantineFloor(0); !clean {
			st.QuarantineUntil = f
		}
	}
	return st
}

func (l *Lease) stateLocked() State {
	switch {
	case l.rc == nil || l.closed:
		return StateNone
	case l.state == held && !l.rekeying:
		return StateHeld
	}
	return StateFenced
}

// syncLocked fences or unfences the generator to match the state, and
// tells the watchdog the deadline may have moved.
func (l *Lease) syncLocked() {
	st := l.stateLocked()
	l.m.setState(st)
	close(l.changed)
	l.changed = make(chan struct{})
	if l.gen == nil {
		return
	}
	if l.rc != nil && st == StateHeld {
		// Besides the watchdog's timer, the generator itself refuses to
		// issue past the deadline, checked on every call: a late timer
		// (a paused process) cannot let an ID slip out.
		l.gen.FenceAfter(l.deadline.Sub(l.clock.Now()), fmt.Errorf("%w: machine %d: no renewal succeeded before the deadline %s",
			ErrLeaseLost, l.id, l.deadline.UTC().Format(time.RFC3339Nano)))
	}
	switch {
	case st == StateFenced && !l.fenced:
		cause := l.cause
		if cause == nil {
			cause = fmt.Errorf("%w: machine %d: the lease is being replaced", ErrLeaseLost, l.id)
		}
		l.gen.Fence(cause)
		l.fenced = true
		l.fences++
		l.m.fenced()
		l.log.Error("machineid: issuing fenced", "machine", l.id, "err", cause)
	case st == StateHeld && l.fenced:
		l.gen.Unfence()
		l.fenced = false
		l.log.Info("machineid: issuing resumed", "machine", l.id)
	}
}

// overdueLocked marks a held lease whose deadline passed.
func (l *Lease) overdueLocked() {
	if l.state != held {
		return
	}
	l.state = overdue
	l.cause = fmt.Errorf("%w: machine %d: no renewal succeeded before the deadline %s (lease TTL %s, safety margin %s)",
		ErrLeaseLost, l.id, l.deadline.UTC().Format(time.RFC3339Nano), l.ttl, l.margin)
	l.syncLocked()
}

// lostLocked marks the lease as not ours, and has the renewer claim again
// at once.
func (l *Lease) lostLocked(cause error) {
	l.state, l.hold, l.cause = lost, nil, cause
	l.syncLocked()
	l.poke()
}

// renewer renews the lease on schedule and, once a generator is attached,
// re-acquires a lost one.
func (l *Lease) renewer() {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		var wait time.Duration
		switch {
		case l.state == lost && (l.gen == nil || l.rekeying):
			wait = l.ttl // nothing to do until Attach or the Rekey ends
		case l.state == lost:
			wait = l.retry
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
			l.renew(h)
		case gen != nil && !rekeying:
			l.recover(gen)
		}
	}
}

// renew extends h with the compare-and-extend script. The deadline is
// checked before renewing as well as by the watchdog.
func (l *Lease) renew(h *hold) {
	l.mu.Lock()
	if h == nil || l.hold != h || l.closed { // Close took the hold away
		l.mu.Unlock()
		return
	}
	if !l.clock.Now().Before(l.deadline) {
		l.overdueLocked()
	}
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(l.ctx, l.period)
	sent, start := l.clock.Now(), time.Now()
	res, err := l.conn.run(ctx, renewScript, []string{h.leaseKey}, h.token, l.ttl.Milliseconds())
	back := l.clock.Now()
	cancel()
	if l.ctx.Err() != nil {
		return
	}
	var n int64
	if err == nil {
		n, err = renewReply(res)
	} else if errors.Is(err, ErrReplicas) {
		err = fmt.Errorf("%w: machine %d: renewing %s: %w", ErrUnavailable, h.id, h.leaseKey, err)
	}
	var skewErr error
	if err == nil {
		// The renewal re-checks the clock against Redis's TIME: the
		// quarantine of the next holder counts on it.
		rt, _ := renewTime(res)
		skewErr = l.judgeSkew(sent, back, rt)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold != h {
		return
	}
	if skewErr != nil && n != 0 {
		// The key was extended and stays ours, but a clock this far from
		// Redis's breaks the bound another holder's quarantine relies on:
		// count it as a failed renewal, so issuing stops at the deadline
		// until the clock is back within the bound.
		if !l.skewed {
			l.log.Error("machineid: the clock drifted beyond max_clock_skew; renewals count as failed until it is back", "machine", h.id, "err", skewErr)
		}
		l.skewed = true
		err = skewErr
	} else if err == nil && l.skewed {
		l.skewed = false
		l.log.Info("machineid: the clock is back within max_clock_skew", "machine", h.id)
	}
	switch {
	case err != nil:
		l.failures++
		l.m.renewFailed()
		if l.failures == 1 || l.state == held {
			l.log.Warn("machineid: renewing the lease failed; retrying", "machine", h.id,
				"deadline", l.deadline.UTC().Format(time.RFC3339Nano), "err", err)
		}
		l.renewAt = l.clock.Now().Add(l.retry)
		if !l.clock.Now().Before(l.deadline) {
			l.overdueLocked()
			if skewErr != nil {
				l.cause = fmt.Errorf("%w: machine %d: %w", ErrLeaseLost, h.id, skewErr)
			}
		}
	case n == 0:
		l.failures++
		l.m.renewFailed()
		l.m.observeRenew(time.Since(start))
		l.lostLocked(fmt.Errorf("%w: machine %d: %s no longer holds this process's token (expired or taken over)",
			ErrLeaseLost, h.id, h.leaseKey))
	default:
		l.m.observeRenew(time.Since(start))
		// Redis extended the key at or after sent, so it lives at least
		// until sent+ttl; the margin keeps the deadline before that.
		l.deadline = sent.Add(l.ttl - l.margin)
		l.renewAt = sent.Add(l.period)
		if l.state == overdue {
			// The token was still there, so nobody held the ID meanwhile.
			l.log.Info("machineid: lease renewed after its deadline; it was never lost", "machine", h.id)
		}
		l.state, l.cause = held, nil
		l.syncLocked()
	}
}

// recover claims a lease again (the same ID first) and re-keys gen to it.
// Even for the same ID the generator is re-keyed: its old run's guard
// holds the old token, and the new run must start after whatever a
// holder in between issued. The mark is first raised to gen's own
// reservation, which covers a Redis that lost its data.
func (l *Lease) recover(gen *core.Generator) {
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
	h.guard.setShape(gen.Shape())
	if h.id == old {
		ctx, cancel := context.WithTimeout(l.ctx, l.period)
		err := h.guard.raise(ctx, gen.Stats().Mark)
		cancel()
		if err != nil {
			l.log.Warn("machineid: raising the mark of a re-acquired lease failed; releasing it", "machine", h.id, "err", err)
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
	l.lastRecoverErr = ""
	l.log.Info("machineid: re-acquired a lease; re-keying", "from", old, "to", h.id)
	l.wg.Add(1)
	go l.rekey(gen, h, old)
}

// rekey moves gen to h; Rekey may wait for the clock to pass the new ID's
// mark while the renewer keeps h alive.
func (l *Lease) rekey(gen *core.Generator, h *hold, old core.MachineID) {
	defer l.wg.Done()
	err := l.waitQuarantine(l.ctx, h, gen.MaxBorrow(), gen.ReadyAt)
	if err == nil {
		err = gen.Rekey(l.ctx, h.id, h.guard)
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
		l.cause = fmt.Errorf("%w: machine %d: re-keying from %d: %w", ErrLeaseLost, h.id, old, err)
		if current {
			l.state, l.hold = lost, nil
		}
	}
	l.syncLocked()
	l.mu.Unlock()
	switch {
	case err == nil:
		l.log.Info("machineid: re-keyed", "from", old, "to", h.id)
	case l.ctx.Err() != nil || errors.Is(err, core.ErrClosed):
		// Closing.
	default:
		l.log.Error("machineid: re-keying failed; releasing the lease and retrying", "machine", h.id, "err", err)
		if current {
			l.release(h)
		}
	}
}

// release deletes h's key if it still holds h's token.
func (l *Lease) release(h *hold) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), l.period)
	defer cancel()
	h.guard.final() // no write of this hold succeeds any more
	res, err := l.conn.run(ctx, releaseScript, []string{h.leaseKey}, h.token)
	if err != nil {
		return redisErr(err, "releasing %s", h.leaseKey)
	}
	n, _ := res.(int64)
	if n == 0 {
		l.log.Info("machineid: the lease was no longer ours at release", "key", h.leaseKey)
	}
	return nil
}

// watchdog fences the generator when the deadline passes without a
// renewal, even while a renewal is stuck in the network.
func (l *Lease) watchdog() {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		changed, dl, armed := l.changed, l.deadline, l.state == held
		l.mu.Unlock()
		var fire <-chan time.Time
		if armed {
			fire = l.clock.After(dl.Sub(l.clock.Now()))
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
		}
	}
}

// Close stops renewing, fences an attached generator (close the generator
// first, so that its final mark is saved while the lease is still held),
// releases the lease with compare-and-delete so the ID is free at once,
// and closes a file guard opened by TimeGuard. It is idempotent; later
// calls wait for the first and return its result.
func (l *Lease) Close(ctx context.Context) error {
	l.closeOnce.Do(func() { l.closeErr = l.close(ctx) })
	return l.closeErr
}

func (l *Lease) close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	h, gen := l.hold, l.gen
	l.hold = nil
	if gen != nil && l.rc != nil && !l.fenced {
		gen.Fence(fmt.Errorf("%w: machine %d: the lease was released", ErrLeaseLost, l.id))
		l.fenced = true
	}
	file := l.file
	l.m.setState(StateNone)
	l.mu.Unlock()

	var errs []error
	if l.rc != nil {
		l.cancel()
		l.wg.Wait()
		if h != nil {
			errs = append(errs, l.releaseClean(ctx, h))
		}
		if l.ownsRC {
			errs = append(errs, l.rc.Close())
		}
	}
	if file != nil {
		errs = append(errs, file.Close())
	}
	return errors.Join(errs...)
}

// releaseClean deletes h's key if it still holds h's token and, when a
// generator loaded h's mark, writes the release record: the exact end of
// what was issued under h, and the identity of the Redis instance, so that
// the next claim on this same instance need not wait out the quarantine.
func (l *Lease) releaseClean(ctx context.Context, h *hold) error {
	final, ok := h.guard.final()
	var res any
	var err error
	if ok {
		relKey := ReleasedKey(l.cfg.Redis.KeyPrefix, h.id)
		res, err = l.conn.run(ctx, releaseCleanScript, []string{h.leaseKey, relKey}, h.token, final.UnixMilli())
	} else {
		res, err = l.conn.run(ctx, releaseScript, []string{h.leaseKey}, h.token)
	}
	n, _ := res.(int64)
	switch {
	case err != nil && n != 0: // ErrReplicas: a failover may lose the record (the next claim is then quarantined)
		return redisErr(err, "releasing %s", h.leaseKey)
	case err != nil:
		return redisErr(err, "releasing %s (it expires within %s)", h.leaseKey, l.ttl)
	case n == 0:
		l.log.Info("machineid: the lease was no longer ours at release", "key", h.leaseKey)
	default:
		l.log.Info("machineid: released the lease", "machine", h.id, "key", h.leaseKey, "release_record", ok,
			"final_mark", final.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// WaitQuarantine waits, renewing the lease meanwhile, until a generator
// with cfg can start on the lease's guard without waiting: when the claim
// did not follow a clean release of the previous holder on the same Redis
// instance, a holder whose key Redis lost may still issue IDs with time
// fields up to lease TTL + 2*max_clock_skew + max_borrow after the claim,
// and the new holder's fields must lie above them. The wait is bounded by
// ctx only, not by cfg.MaxStartupWait. NewGenerator calls it; call it
// before core.New when building the generator yourself. It returns at once
// for the other providers.
func (l *Lease) WaitQuarantine(ctx context.Context, cfg core.Config) error {
	if l.rc == nil {
		return nil
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	h := l.hold
	l.mu.Unlock()
	if h == nil {
		return nil // lost: core.New's first save fails
	}
	return l.waitQuarantine(ctx, h, cfg.MaxBorrow, cfg.ReadyAt)
}

func (l *Lease) waitQuarantine(ctx context.Context, h *hold, borrow time.Duration, readyAt func(time.Time) time.Time) error {
	floor, clean := h.guard.quarantineFloor(borrow)
	if clean {
		l.log.Info("machineid: the previous holder released cleanly on this Redis instance: no quarantine",
			"machine", h.id, "issues_from", floor.UTC().Format(time.RFC3339Nano))
		return nil
	}
	until := readyAt(floor)
	l.log.Warn(fmt.Sprintf("machineid: quarantine: machine %d issues from %s; no clean release of the previous holder", h.id, floor.UTC().Format(time.RFC3339Nano)),
		"machine", h.id, "wait", max(until.Sub(l.clock.Now()), 0).Round(time.Millisecond),
		"lease_ttl", l.ttl, "max_clock_skew", l.cfg.Redis.MaxClockSkew, "max_borrow", borrow)
	defer l.m.setQuarantine(0)
	for {
		left := until.Sub(l.clock.Now())
		l.m.setQuarantine(max(left, 0))
		if left <= 0 {
			return nil
		}
		l.mu.Lock()
		lost := l.hold != h
		l.mu.Unlock()
		if lost {
			return fmt.Errorf("%w: machine %d: lost during the quarantine", ErrLeaseLost, h.id)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("machineid: machine %d: waiting out the quarantine until %s: %w", h.id, until.UTC().Format(time.RFC3339Nano), ctx.Err())
		case <-l.clock.After(min(left, time.Second)):
		}
	}
}

// NewGenerator runs the rest of the order of operations on the lease: it
// opens the time guard (TimeGuard(dataDir)), waits out the quarantine of a
// Redis lease (WaitQuarantine), starts a core.Generator with cfg on the
// lease's machine ID and guard, and attaches it. cfg.Machine and cfg.Guard
// are overwritten; a nil cfg.Clock takes the lease's clock. On success
// close the generator first, then the lease; on error only the lease.
func (l *Lease) NewGenerator(ctx context.Context, cfg core.Config, dataDir string) (*core.Generator, error) {
	guard, err := l.TimeGuard(dataDir)
	if err != nil {
		return nil, err
	}
	if err := l.WaitQuarantine(ctx, cfg); err != nil {
		return nil, err
	}
	if guard == nil && cfg.Logger != nil {
		cfg.Logger.Warn("no time guard (time_guard.dir is empty): a restart with the clock set back may re-issue IDs",
			"machine", l.ID())
	}
	cfg.Machine, cfg.Guard = l.ID(), guard
	if cfg.Clock == nil {
		cfg.Clock = l.clock
	}
	gen, err := core.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := l.Attach(gen); err != nil {
		gen.Close()
		return nil, err
	}
	return gen, nil
}

// renewReply is the renew script's first element: 1 when extended.
func renewReply(res any) (int64, error) {
	a, ok := res.([]any)
	if !ok || len(a) < 3 {
		return 0, fmt.Errorf("machineid: renewal: unexpected reply %v", res)
	}
	n, _ := a[0].(int64)
	return n, nil
}

// renewTime is Redis's TIME as the renew script returned it.
func renewTime(res any) (time.Time, bool) {
	a, ok := res.([]any)
	if !ok || len(a) < 3 {
		return time.Time{}, false
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(a[1]), 10, 64)
	usec, err2 := strconv.ParseInt(fmt.Sprint(a[2]), 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, usec*1000), true
}
