package machineid

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
)

// renewing is where a Redis lease stands.
type renewing uint8

const (
	held    renewing = iota // renewed in time
	overdue                 // the deadline passed without a renewal; the key may still be ours
	lost                    // the key is not ours: claim again
)

// redisLease holds a machine ID leased in Redis: it renews the lease, fences
// the attached generator when it can no longer prove the lease held, and
// re-acquires a lost lease, re-keying the generator. See Lease.
type redisLease struct {
	leaseBase
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
}

func acquireRedis(ctx context.Context, b leaseBase) (*Lease, error) {
	rc := b.cfg.Redis
	l := &redisLease{
		leaseBase: b,
		ttl:       rc.LeaseTTL,
		margin:    rc.SafetyMargin,
		period:    rc.LeaseTTL / 3,
		retry:     min(max(rc.LeaseTTL/10, 10*time.Millisecond), time.Second),
		kick:      make(chan struct{}, 1),
		changed:   make(chan struct{}),
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
	l.log.Info("machineid: leased a machine ID", "machine", h.id, "method", b.method, "range", b.rng,
		"key", h.leaseKey, "ttl", l.ttl, "fence_after", l.ttl-l.margin, "redis", rc.where(),
		"clean_release", h.guard.q.clean, "min_replicas", rc.MinReplicas)
	l.wg.Add(2)
	go l.renewer()
	go l.watchdog()
	return &Lease{leaseBase: b, provider: ProviderRedis, h: l}, nil
}

func (l *redisLease) machine() core.MachineID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id
}

func (l *redisLease) guard() core.GuardStore { return l.initial }

// timeGuard is the Redis mark store: the mark lives beside the lease.
func (l *redisLease) timeGuard(string) (core.GuardStore, error) { return l.initial, nil }

func (l *redisLease) attach(gen *core.Generator) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := attachCheck(l.closed, l.gen, gen, l.id); err != nil {
		return err
	}
	l.gen = gen
	l.syncLocked()
	if l.state == lost {
		l.poke()
	}
	return nil
}

func (l *redisLease) status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Status{Provider: ProviderRedis, Machine: l.id, State: l.stateLocked(), Deadline: l.deadline,
		RenewAt: l.renewAt, At: l.clock.Now(), Fences: l.fences, RenewFailures: l.failures, Err: l.cause}
	if l.hold != nil {
		if f, clean := l.hold.guard.quarantineFloor(0); !clean {
			st.QuarantineUntil = f
		}
	}
	return st
}

// awaitQuarantine is Lease.WaitQuarantine.
func (l *redisLease) awaitQuarantine(ctx context.Context, cfg core.Config) error {
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

// install makes h the current lease, claimed at sent.
func (l *redisLease) install(h *hold, sent time.Time) {
	l.hold, l.id, l.state, l.cause = h, h.id, held, nil
	l.deadline = sent.Add(l.ttl - l.margin)
	l.renewAt = sent.Add(l.period)
	l.m.setMachine(int(h.id))
	l.syncLocked()
}

// hold is one claimed lease: an ID, its keys and the token in them.
type hold struct {
	id       core.MachineID
	token    string
	leaseKey string
	guard    *redisGuard
}

// checkSkew compares the local clock with Redis's TIME (Leaf's start-up
// check). The round trip's half is allowed on top of MaxClockSkew.
func (l *redisLease) checkSkew(ctx context.Context) error {
	t0 := l.clock.Now()
	rt, err := l.rc.Time(ctx).Result()
	t1 := l.clock.Now()
	if err != nil {
		return redisErr(err, "%s: TIME", l.cfg.Redis.where())
	}
	return l.judgeSkew(t0, t1, rt)
}

// judgeSkew compares the local clock between t0 and t1 with Redis's TIME
// rt read in between, records the skew and says whether it is beyond
// MaxClockSkew (plus half the round trip).
func (l *redisLease) judgeSkew(t0, t1, rt time.Time) error {
	rtt := t1.Sub(t0)
	local := t0.Add(rtt / 2)
	skew := local.Sub(rt)
	l.m.setSkew(skew)
	maxSkew := l.cfg.Redis.MaxClockSkew
	if maxSkew > 0 && skew.Abs() > maxSkew+rtt/2 {
		return fmt.Errorf("%w: the local clock reads %s and Redis TIME %s, %s apart (max_clock_skew %s); fix the clock (NTP) of this host or of Redis",
			ErrClockSkew, local.UTC().Format(time.RFC3339Nano), rt.UTC().Format(time.RFC3339Nano), skew.Round(time.Millisecond), maxSkew)
	}
	return nil
}

// claim takes a free ID of the range with SET NX PX: prefer first (when
// it lies in the range), then every ID from a random point, so that a fleet
// starting together spreads instead of fighting over the first ID. It
// returns the hold and when the claim was sent (the lease runs from then).
// The hold's guard knows whether the claim followed a clean release on
// this very Redis instance; if not, it is quarantined (see redisGuard).
func (l *redisLease) claim(ctx context.Context, prefer core.MachineID, hasPrefer bool) (*hold, time.Time, error) {
	if err := l.checkSkew(ctx); err != nil {
		return nil, time.Time{}, err
	}
	token := newToken()
	n := int(l.rng.Count)
	start := rand.IntN(n)
	try := func(id core.MachineID) (*hold, time.Time, error) {
		leaseKey, markKey := Keys(l.cfg.Redis.KeyPrefix, id)
		relKey := ReleasedKey(l.cfg.Redis.KeyPrefix, id)
		sent := l.clock.Now()
		res, err := l.conn.run(ctx, claimScript, []string{leaseKey, relKey}, token, l.ttl.Milliseconds())
		// The quarantine runs from the reply: any renewal of an earlier
		// holder reached Redis before this claim did.
		claimed := l.clock.Now()
		if err != nil && !errors.Is(err, ErrReplicas) {
			return nil, sent, redisErr(err, "%s: claiming %s", l.cfg.Redis.where(), leaseKey)
		}
		a, ok := res.([]any)
		if !ok || len(a) == 0 {
			return nil, sent, fmt.Errorf("machineid: %s: claiming %s: unexpected reply %v", l.cfg.Redis.where(), leaseKey, res)
		}
		if got, _ := a[0].(int64); got == 0 {
			return nil, sent, nil // taken
		}
		if err != nil { // ErrReplicas: the claim may not survive a failover
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.period)
			_, rerr := l.conn.run(ctx, releaseScript, []string{leaseKey}, token)
			cancel()
			if rerr != nil && !errors.Is(rerr, ErrReplicas) {
				l.log.Warn("machineid: releasing a claim that too few replicas acknowledged failed; it expires", "key", leaseKey, "ttl", l.ttl, "err", rerr)
			}
			return nil, sent, fmt.Errorf("%w: %s: claiming %s: %w", ErrUnavailable, l.cfg.Redis.where(), leaseKey, err)
		}
		str := func(i int) string {
			if i < len(a) {
				v, _ := a[i].(string)
				return v
			}
			return ""
		}
		q := quarantine{claimed: claimed, ttl: l.ttl, skew: l.cfg.Redis.MaxClockSkew}
		if ms, perr := strconv.ParseInt(str(1), 10, 64); perr == nil && ms > 0 {
			q.record = time.UnixMilli(ms).UTC()
			q.clean = str(2) != "" && str(3) != "" && str(2) == str(4) && str(3) == str(5)
			if !q.clean {
				l.log.Warn("machineid: ignoring a release record written on another Redis instance (restarted or failed over since): quarantined",
					"machine", id, "record_run_id", str(2), "record_replid", str(3), "run_id", str(4), "replid", str(5))
			}
		}
		g := &redisGuard{conn: l.conn, machine: id, leaseKey: leaseKey, markKey: markKey,
			shapeKey: ShapeKey(l.cfg.Redis.KeyPrefix, id), token: token, notHolder: l.poke, q: q}
		return &hold{id: id, token: token, leaseKey: leaseKey, guard: g}, sent, nil
	}
	if hasPrefer && l.rng.Contains(prefer) {
		if h, sent, err := try(prefer); h != nil || err != nil {
			return h, sent, err
		}
	}
	for i := range n {
		id := l.rng.First + core.MachineID((start+i)%n)
		if hasPrefer && id == prefer {
			continue
		}
		if h, sent, err := try(id); h != nil || err != nil {
			return h, sent, err
		}
	}
	return nil, time.Time{}, fmt.Errorf("%w: all %d IDs of the %s range %s are leased (key prefix %q); wait for a holder to stop or widen the range",
		ErrRangeFull, n, rangeName(l.method), l.rng, l.cfg.Redis.KeyPrefix)
}

// poke wakes the renewer: to renew now (a save of the mark found the lease
// gone) or to re-acquire (Attach of a lost lease).
func (l *redisLease) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *redisLease) stateLocked() State {
	switch {
	case l.closed:
		return StateNone
	case l.state == held && !l.rekeying:
		return StateHeld
	}
	return StateFenced
}

// syncLocked fences or unfences the generator to match the state, and
// tells the watchdog the deadline may have moved.
func (l *redisLease) syncLocked() {
	st := l.stateLocked()
	l.m.setState(st)
	close(l.changed)
	l.changed = make(chan struct{})
	if l.gen == nil {
		return
	}
	if st == StateHeld {
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
		l.fences++
		l.m.fenced()
		l.log.Error("machineid: issuing fenced", "machine", l.id, "err", cause)
	case st == StateHeld && l.fenced:
		l.gen.Control().Unfence()
		l.fenced = false
		l.log.Info("machineid: issuing resumed", "machine", l.id)
	}
}

// overdueLocked marks a held lease whose deadline passed.
func (l *redisLease) overdueLocked() {
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
func (l *redisLease) lostLocked(cause error) {
	l.state, l.hold, l.cause = lost, nil, cause
	l.syncLocked()
	l.poke()
}

// renewer renews the lease on schedule and, once a generator is attached,
// re-acquires a lost one.
func (l *redisLease) renewer() {
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
func (l *redisLease) renew(h *hold) {
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
func (l *redisLease) recover(gen *core.Generator) {
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
	h.guard.setShape(gen.Control().Shape())
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
func (l *redisLease) rekey(gen *core.Generator, h *hold, old core.MachineID) {
	defer l.wg.Done()
	err := l.waitQuarantine(l.ctx, h, gen.Control().MaxBorrow(), gen.Control().ReadyAt)
	if err == nil {
		err = gen.Control().Rekey(l.ctx, h.id, h.guard)
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
func (l *redisLease) release(h *hold) error {
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
func (l *redisLease) watchdog() {
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

func (l *redisLease) close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	h, gen := l.hold, l.gen
	l.hold = nil
	if gen != nil && !l.fenced {
		gen.Control().Fence(fmt.Errorf("%w: machine %d: the lease was released", ErrLeaseLost, l.id))
		l.fenced = true
	}
	l.m.setState(StateNone)
	l.mu.Unlock()

	l.cancel()
	l.wg.Wait()
	var errs []error
	if h != nil {
		errs = append(errs, l.releaseClean(ctx, h))
	}
	if l.ownsRC {
		errs = append(errs, l.rc.Close())
	}
	return errors.Join(errs...)
}

// releaseClean deletes h's key if it still holds h's token and, when a
// generator loaded h's mark, writes the release record: the exact end of
// what was issued under h, and the identity of the Redis instance, so that
// the next claim on this same instance need not wait out the quarantine.
func (l *redisLease) releaseClean(ctx context.Context, h *hold) error {
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

func (l *redisLease) waitQuarantine(ctx context.Context, h *hold, borrow time.Duration, readyAt func(time.Time) time.Time) error {
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
