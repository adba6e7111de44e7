package machineid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
	"github.com/vesta-go/vesta/machineid/internal/redisstore"
)

// simWorld runs one simPlan inside a testing/synctest bubble: the real
// lease (leased.go, guard.go, redis.go with sentinel.go, or etcd.go) and
// a real core.Generator per process, against a model store (redisModel, a
// sentinelWorld of them, etcdModel) reached through a simulated network. Time is the bubble's:
// it advances only when every goroutine waits, so a schedule of a minute
// runs in a few milliseconds, and a host's clock is the bubble's plus an
// offset of its own that the plan steps.
type simWorld struct {
	plan     *simPlan
	plant    leasestore.PlantedBugs // the bugs planted in every process's lease
	t0       time.Time              // the bubble's time at the start: true time 0
	redis    *redisModel
	etcd     *etcdModel
	sentinel *sentinelWorld
	redisID  func() string // a new run_id or replid
	// storeOff is the store's clock minus the true time (the plan steps
	// it); storeGen counts its restarts (a connection open across one
	// breaks).
	storeOff atomic.Int64
	storeGen atomic.Int64
	down     []window // the store refusing connections: restarting
	noQuorum []window // etcd without a quorum: requests wait, nothing expires
	check    *simCheck
	trace    *simTrace // nil: not traced
	hosts    []*simHost
	ctx      context.Context // canceled at the horizon or at the first failure
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// simBase moves the bubble's clock (which starts at 2000-01-01) to the
// present, past every layout's epoch.
var simBase = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))

// simulate runs plan in the current bubble and returns what the checker
// found.
func simulate(plan *simPlan, plant leasestore.PlantedBugs, traced bool) *simCheck {
	w := &simWorld{plan: plan, plant: plant, t0: time.Now()}
	w.ctx, w.stop = context.WithCancel(context.Background())
	w.check = newSimCheck(w)
	if traced {
		w.trace = &simTrace{}
	}
	ids := rand.New(rand.NewPCG(plan.seed, 0x1d))
	newID := func() string { return fmt.Sprintf("%016x%016x%08x", ids.Uint64(), ids.Uint64(), ids.Uint32()) }
	storeClock := func() time.Time { return time.Now().Add(simBase + time.Duration(w.storeOff.Load())) }
	for _, e := range plan.store {
		switch e.kind {
		case restartEmpty, restartOld:
			w.down = append(w.down, window{e.at, e.at + e.down})
		case quorumLost, leaderChange:
			w.noQuorum = append(w.noQuorum, window{e.at, e.at + e.down})
		}
	}
	w.redisID = newID
	established := func(m *redisModel) {
		if !plan.fresh {
			// Claims have seen this Redis for an hour: an ID never claimed
			// on it starts at once.
			since := m.clock().Add(-time.Hour).UnixMilli()
			m.hset(redisstore.StoreKey(defaultKeyPrefix), 0, "run_id", m.runID, "replid", m.replid, "since_ms", fmt.Sprint(since))
		}
	}
	switch {
	case plan.provider == ProviderEtcd:
		w.etcd = newEtcdModel(w)
	case plan.sentinel != nil:
		w.sentinel = newSentinelWorld(w, plan.sentinel, newID)
		established(w.sentinel.insts[0])
		for _, m := range w.sentinel.insts[1:] {
			m.keys = w.sentinel.insts[0].snapshot()
		}
	default:
		w.redis = newRedisModel(storeClock, newID)
		established(w.redis)
	}
	for i, hp := range plan.hosts {
		h := &simHost{w: w, plan: hp, i: i}
		h.clk = &simClock{h: h}
		h.clk.off.Store(int64(hp.offset))
		w.hosts = append(w.hosts, h)
	}
	w.check.codec, _ = core.NewCodec(plan.layout, time.Time{})
	for _, h := range w.hosts {
		w.wg.Go(h.life)
	}
	w.direct()
	w.wg.Wait()
	if w.etcd != nil {
		w.etcd.close()
	}
	return w.check
}

// now is the true time since the start.
func (w *simWorld) now() time.Duration { return time.Since(w.t0) }

// sleepUntil waits until true time t or ctx's end.
func sleepUntil(ctx context.Context, w *simWorld, t time.Duration) error {
	d := t - w.now()
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// direct applies the plan's events that are no window (clock steps, data
// loss) at their instants, then ends the run at the horizon.
func (w *simWorld) direct() {
	type event struct {
		at    time.Duration
		apply func()
	}
	var evs []event
	for _, h := range w.hosts {
		for _, s := range h.plan.steps {
			evs = append(evs, event{s.at, func() {
				h.clk.off.Add(int64(s.by))
				w.tracef(h.plan.name, "clock steps %+v", s.by)
			}})
		}
	}
	for _, e := range w.plan.store {
		switch e.kind {
		case restartEmpty:
			evs = append(evs, event{e.at, func() {
				w.storeGen.Add(1)
				w.redis.restart(nil, false)
				w.tracef("store", "killed; back empty after %s (new run_id and replid)", e.down)
			}})
		case restartOld:
			var snap map[string]*redisValue
			evs = append(evs, event{max(e.at-e.age, 0), func() { snap = w.redis.snapshot() }})
			evs = append(evs, event{e.at, func() {
				w.storeGen.Add(1)
				w.redis.restart(snap, chance(rand.New(rand.NewPCG(w.plan.seed, uint64(e.at))), 0.5))
				w.tracef("store", "killed; back after %s from a snapshot %s old (new run_id)", e.down, e.age)
			}})
		case flushAll:
			evs = append(evs, event{e.at, func() {
				w.redis.flushAll()
				w.tracef("store", "FLUSHALL")
			}})
		case storeStep:
			evs = append(evs, event{e.at, func() {
				w.storeOff.Add(int64(e.by))
				w.tracef("store", "clock steps %+v", e.by)
			}})
		case leaderChange, quorumLost:
			evs = append(evs, event{e.at, func() {
				w.tracef("store", "no quorum for %s (%s)", e.down, e.kind)
			}})
			evs = append(evs, event{e.at + e.down, func() {
				w.etcd.newLeader()
				w.tracef("store", "a new leader: every lease renewed to its full TTL")
			}})
		}
	}
	if w.sentinel != nil {
		w.sentinel.events(func(at time.Duration, f func()) { evs = append(evs, event{at, f}) })
	}
	slices.SortStableFunc(evs, func(a, b event) int { return int(a.at - b.at) })
	for _, e := range evs {
		if sleepUntil(w.ctx, w, e.at) != nil {
			break
		}
		e.apply()
	}
	sleepUntil(w.ctx, w, w.plan.horizon)
	w.stop()
}

// storeDown reports whether the store refuses connections at t.
func (w *simWorld) storeDown(t time.Duration) bool {
	for _, d := range w.down {
		if d.has(t) {
			return true
		}
	}
	return false
}

func (w *simWorld) quorumLost(t time.Duration) bool {
	for _, d := range w.noQuorum {
		if d.has(t) {
			return true
		}
	}
	return false
}

// simHost is one host: its clock, network and processes.
type simHost struct {
	w    *simWorld
	plan *hostPlan
	i    int
	clk  *simClock
	mu   sync.Mutex // the random streams
}

// life runs the host's processes one after another.
func (h *simHost) life() {
	for n, pp := range h.plan.procs {
		if sleepUntil(h.w.ctx, h.w, pp.start) != nil {
			return
		}
		p := &simProc{h: h, w: h.w, plan: pp, name: fmt.Sprintf("%s%d", h.plan.name, n+1)}
		p.rnd = rand.New(rand.NewPCG(h.w.plan.seed, uint64(h.i)<<32|uint64(n)))
		p.ord = rand.New(rand.NewPCG(h.w.plan.seed^0x0cde5, uint64(h.i)<<32|uint64(n)))
		for k := range p.net {
			p.net[k] = rand.New(rand.NewPCG(h.w.plan.seed^uint64(k+1)<<40, uint64(h.i)<<32|uint64(n)))
		}
		p.run()
	}
}

// wake is when the host, paused at t, runs again: t itself unless t falls
// in a pause. What was due during a pause happens on waking in the order
// it was due, a thousand times faster (a 10s pause's timers fire over the
// first 10ms), so that a seed replays: goroutines woken at one instant
// would run in the scheduler's order.
func (h *simHost) wake(t time.Duration) time.Duration {
	for again := true; again; {
		again = false
		for _, p := range h.plan.pauses {
			if p.has(t) {
				t, again = p.to+(t-p.from)/1000, true
			}
		}
	}
	return t
}

func (h *simHost) cut(t time.Duration) bool {
	for _, p := range h.plan.partitions {
		if p.has(t) {
			return true
		}
	}
	return false
}

func (h *simHost) slow(t time.Duration) time.Duration {
	for _, s := range h.plan.slow {
		if s.has(t) {
			return h.plan.slowBy
		}
	}
	return 0
}

// simClock is a host's clock (core.Clock): the bubble's time plus an
// offset the plan steps, as core.OffsetClock is. After waits true
// durations, and never ends while the host is paused: a timer due then
// fires when it wakes.
type simClock struct {
	h   *simHost
	off atomic.Int64
}

func (c *simClock) Now() time.Time {
	return time.Now().Add(simBase + time.Duration(c.off.Load())).Round(0)
}

func (c *simClock) After(d time.Duration) <-chan time.Time {
	w := c.h.w
	now := w.now()
	due := c.h.wake(now + max(d, 0))
	return time.After(due - now)
}

// simProc is one process of a host: a lease and a generator, started
// again after each failure until its end.
type simProc struct {
	h    *simHost
	w    *simWorld
	plan procPlan
	name string
	rnd  *rand.Rand           // issuing
	ord  *rand.Rand           // claim order (under h.mu)
	net  [numKinds]*rand.Rand // the network's draws, one stream per kind of call
	dead atomic.Bool          // crashed: nothing more reaches the store
}

// run keeps the process's lease and generator going until its end.
func (p *simProc) run() {
	ctx, cancel := context.WithCancel(p.w.ctx)
	defer cancel()
	end := time.AfterFunc(p.plan.end-p.w.now(), func() {
		if p.plan.crash {
			p.dead.Store(true)
			p.tracef("crashes")
		} else {
			p.tracef("stops")
		}
		cancel()
	})
	defer end.Stop()
	p.tracef("starts")
	retry := p.plan.retry
	for {
		err := p.once(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			retry = p.plan.retry
		}
		p.tracef("failed: %v; again in %s", err, retry)
		if sleepUntil(ctx, p.w, p.h.wake(p.w.now()+retry)) != nil {
			return
		}
		retry = min(2*retry, max(p.plan.retry, 4*time.Second))
	}
}

// once acquires a lease, starts a generator on it and issues until ctx
// ends; then it closes both, the generator first.
func (p *simProc) once(ctx context.Context) error {
	lease, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	hp := p.h.plan
	gcfg := core.Config{Layout: p.w.plan.layout, Type: p.w.plan.typ, MaxBorrow: hp.borrow, GuardWindow: hp.window,
		MaxStartupWait: hp.startupWait, Clock: p.h.clk, Logger: p.logger()}
	gen, err := lease.NewGenerator(ctx, gcfg, "")
	if err != nil {
		lease.Close(context.Background())
		return err
	}
	p.tracef("issuing as machine %d", gen.Machine())
	p.issue(ctx, gen)
	gen.Close()
	lease.Close(context.Background())
	return nil
}

// config is the process's machineid.Config.
func (p *simProc) config() Config {
	hp := p.h.plan
	c := DefaultConfig()
	c.Providers = []string{p.w.plan.provider}
	c.ServerLeaseRange = p.w.plan.rng
	c.Redis.Addrs = []string{"10.99.0.1:6379"}
	if sp := p.w.plan.sentinel; sp != nil {
		c.Redis.Addrs, c.Redis.MasterName = nil, "sim"
		for j := range sp.sentinels {
			c.Redis.Addrs = append(c.Redis.Addrs, sentinelAddr(j))
		}
	}
	c.Redis.LeaseTTL, c.Redis.MaxClockSkew = hp.ttl, hp.skew
	c.Etcd.Endpoints = []string{"10.99.0.2:2379"}
	if p.w.plan.provider == ProviderEtcd {
		c.Etcd.LeaseTTL = hp.ttl
	}
	c.Clock, c.Logger = p.h.clk, p.logger()
	return c
}

// acquire is Acquire for the process's provider, with the store's
// connections going through the simulated network.
func (p *simProc) acquire(ctx context.Context) (*Lease, error) {
	c, rng, leaseRng, err := p.config().resolveFor(core.Central)
	if err != nil {
		return nil, err
	}
	b := newLeaseBase(c, core.Central, rng)
	b.rng = leaseRng
	b.plant = p.w.plant
	var st leasestore.Store
	var ttl, margin time.Duration
	if p.w.plan.provider == ProviderRedis {
		st, ttl, margin = redisstore.New(b.storeBase(), p.redisHook), c.Redis.LeaseTTL, c.Redis.SafetyMargin
	} else {
		st, ttl, margin = p.w.etcd.store(p, b), c.Etcd.LeaseTTL, c.Etcd.SafetyMargin
	}
	return acquireLeased(ctx, b, p.w.plan.provider, &simStore{Store: st, p: p, ttl: ttl, margin: margin}, ttl, margin)
}

// redisHook connects each client of the process's Redis store through
// the simulated network: to the single Redis, or to a Redis or a Sentinel
// of the Sentinel group (wire).
func (p *simProc) redisHook(addr string, sentinel int) redis.Hook {
	if p.w.sentinel != nil {
		return p.w.sentinel.wire(p, addr, sentinel)
	}
	return redisLink{p, storeTarget{p.w}, p.w.redis}
}

// issue calls the generator at random instants until ctx ends, and hands
// every ID to the checker.
func (p *simProc) issue(ctx context.Context, gen *core.Generator) {
	hp := p.h.plan
	buf := make([]core.ID, 0, hp.batch)
	for {
		d := time.Duration(p.rnd.ExpFloat64() * float64(hp.issueEvery))
		select {
		case <-ctx.Done():
			return
		case <-p.h.clk.After(d):
		}
		if ctx.Err() != nil {
			return
		}
		ids, _, err := gen.TryAppendIDs(core.Central, buf[:0], 1+p.rnd.IntN(hp.batch))
		if len(ids) > 0 {
			p.w.check.issued(p, ids, p.h.clk.Now())
		}
		if err != nil && p.w.trace != nil && !errors.Is(err, core.ErrFenced) {
			p.tracef("issuing: %v", err)
		}
	}
}

// The kinds of call, each with its own stream of network draws so that
// one kind's calls do not move another's.
const (
	kClaim = iota
	kRenew
	kMark
	kMember
	kRelease
	kFleet
	kOther
	kSentinel // one kind per Sentinel, from here
	numKinds  = kSentinel + 3
)

// leaseScripts are the lease's scripts in Redis, by what they do.
var leaseScripts = redisstore.Scripts()

var redisKinds = map[string]int{
	leaseScripts["claim"].Hash(): kClaim, leaseScripts["renew"].Hash(): kRenew, leaseScripts["mark"].Hash(): kMark,
	leaseScripts["member"].Hash(): kMember, leaseScripts["drop member"].Hash(): kMember,
	leaseScripts["put hold"].Hash(): kMember,
	leaseScripts["release"].Hash():  kRelease, leaseScripts["release clean"].Hash(): kRelease, leaseScripts["fleet"].Hash(): kFleet,
}

func redisKind(cmd redis.Cmder) int {
	if a := cmd.Args(); len(a) > 1 && cmd.Name() == "evalsha" {
		if k, ok := redisKinds[fmt.Sprint(a[1])]; ok {
			return k
		}
	}
	return kOther
}

// The errors of the simulated network, as a TCP client sees them.
var (
	errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	errTimeout = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	errReset   = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
)

// roundTrip carries one request to the store and its reply back: exec
// runs at the store at the instant the request arrives, whether or not
// the caller still waits (a request sent is not unsent). A lost request
// or reply, a cut link or a late reply cost the caller its whole timeout
// (limit, or ctx's deadline if sooner). A paused host sends nothing and
// hears nothing until it wakes.
//
// The mark's, the member record's and the hold history's writes take no
// time (instantly): the lease and the generator make them holding a mutex
// (leaseGuard.mu, Generator's mu, leased.memberMu, leased.histMu), and a
// goroutine waiting for a mutex
// is not durably blocked in a synctest bubble, so its time would stop
// while the holder waits for the network. They are still lost, cut off
// and refused like any other; a lost one fails at once.
func (p *simProc) roundTrip(ctx context.Context, tgt simTarget, kind int, limit time.Duration, exec func() (any, error)) (any, error) {
	w, h := p.w, p.h
	now := w.now()
	if kind == kMark || kind == kMember {
		return p.instant(tgt, now, kind, exec)
	}
	if wake := h.wake(now); wake > now {
		if err := sleepUntil(ctx, w, wake); err != nil {
			return nil, err
		}
		now = wake
	}
	if p.dead.Load() || tgt.down(now) {
		return nil, errRefused
	}
	deadline := now + limit
	if dl, ok := ctx.Deadline(); ok {
		deadline = min(deadline, dl.Sub(w.t0))
	}
	h.mu.Lock()
	r := p.net[kind]
	one := func() time.Duration {
		return h.plan.lat + time.Duration(r.Int64N(int64(h.plan.jitter)+1))
	}
	there, back := one()+h.slow(now), one()
	lostReq, lostRep := chance(r, h.plan.drop), chance(r, h.plan.drop)
	h.mu.Unlock()
	arrive := now + there
	gen := tgt.gen()
	run := func() (any, error) {
		if tgt.gen() != gen || tgt.down(w.now()) {
			return nil, errReset
		}
		if w.quorumLost(w.now()) {
			return nil, errTimeout
		}
		return exec()
	}
	if lostReq || tgt.cut(h, now) || tgt.cut(h, arrive) {
		return p.fail(ctx, deadline, errTimeout)
	}
	if arrive > deadline {
		time.AfterFunc(arrive-now, func() { run() })
		return p.fail(ctx, deadline, errTimeout)
	}
	if err := sleepUntil(ctx, w, arrive); err != nil {
		time.AfterFunc(arrive-w.now(), func() { run() })
		return p.fail(ctx, w.now(), err)
	}
	v, err := run()
	switch {
	case errors.Is(err, errReset):
		return p.fail(ctx, w.now(), err)
	case errors.Is(err, errTimeout):
		return p.fail(ctx, deadline, err)
	}
	home := h.wake(arrive + back + h.slow(arrive))
	if lostRep || tgt.cut(h, arrive) || tgt.cut(h, home) || home > deadline {
		return p.fail(ctx, deadline, errTimeout)
	}
	if err := sleepUntil(ctx, w, home); err != nil {
		return p.fail(ctx, w.now(), err)
	}
	return v, err
}

// fail returns err at t (or ctx's error at its end), once the host is
// awake.
func (p *simProc) fail(ctx context.Context, t time.Duration, err error) (any, error) {
	if werr := sleepUntil(ctx, p.w, t); werr != nil {
		err = werr
	}
	if wake := p.h.wake(p.w.now()); wake > p.w.now() {
		sleepUntil(context.Background(), p.w, wake)
	}
	return nil, err
}

// instant is roundTrip without the time: see there.
func (p *simProc) instant(tgt simTarget, now time.Duration, kind int, exec func() (any, error)) (any, error) {
	w, h := p.w, p.h
	if p.dead.Load() || tgt.down(now) {
		return nil, errRefused
	}
	if w.quorumLost(now) {
		return nil, errTimeout
	}
	h.mu.Lock()
	r := p.net[kind]
	lostReq, lostRep := chance(r, h.plan.drop), chance(r, h.plan.drop)
	h.mu.Unlock()
	if lostReq || tgt.cut(h, now) {
		return nil, errTimeout
	}
	v, err := exec()
	if lostRep {
		return nil, errTimeout
	}
	return v, err
}

// simTarget is what a request goes to: the store, or one Redis or one
// Sentinel of a Sentinel group.
type simTarget interface {
	down(t time.Duration) bool            // refusing connections
	cut(h *simHost, t time.Duration) bool // out of h's reach
	gen() int64                           // its restarts: a connection open across one breaks
}

// storeTarget is the single Redis or the etcd cluster.
type storeTarget struct{ w *simWorld }

func (s storeTarget) down(t time.Duration) bool            { return s.w.storeDown(t) }
func (s storeTarget) cut(h *simHost, t time.Duration) bool { return h.cut(t) }
func (s storeTarget) gen() int64                           { return s.w.storeGen.Load() }

// redisLink is a process's go-redis hook to one Redis: every command goes
// through roundTrip to the model instead of a connection.
type redisLink struct {
	p *simProc
	t simTarget
	m *redisModel
}

func (l redisLink) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("simulation: no connection is dialled")
	}
}

func (l redisLink) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		limit := leasestore.CommandTimeout(l.p.h.plan.ttl)
		v, err := l.p.roundTrip(ctx, l.t, redisKind(cmd), limit, func() (any, error) { return l.m.do(cmd.Args()) })
		setReply(cmd, v, err)
		return cmd.Err()
	}
}

func (l redisLink) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		type reply struct {
			v   any
			err error
		}
		rs := make([]reply, len(cmds))
		limit := leasestore.CommandTimeout(l.p.h.plan.ttl)
		_, err := l.p.roundTrip(ctx, l.t, kOther, limit, func() (any, error) {
			for i, c := range cmds {
				rs[i].v, rs[i].err = l.m.do(c.Args())
			}
			return nil, nil
		})
		for i, c := range cmds {
			if err != nil {
				c.SetErr(err)
			} else {
				setReply(c, rs[i].v, rs[i].err)
			}
		}
		for _, c := range cmds {
			if c.Err() != nil {
				return c.Err()
			}
		}
		return nil
	}
}

// simStore is the process's store as the lease sees it: the real one,
// watched by the checker (which holds were claimed, when each must fence)
// and with a claim order drawn from the plan's seed instead of the global
// source (claimOrder), so that a seed replays.
type simStore struct {
	leasestore.Store
	p           *simProc
	ttl, margin time.Duration
	claims      int
}

func (s *simStore) Claim(ctx context.Context, ids []core.MachineID) (*leasestore.Hold, time.Time, error) {
	ids = s.p.order(ids, s.claims > 0)
	s.claims++
	h, sent, err := s.Store.Claim(ctx, ids)
	if h != nil {
		s.p.w.check.claimed(s.p, h, sent.Add(s.ttl-s.margin))
		if s.p.w.trace != nil {
			s.p.tracef("claimed machine %d (%s); fence at %s", h.ID, describeQuarantine(h.Guard.Quarantine()), clockString(sent.Add(s.ttl-s.margin)))
		}
	} else if err != nil {
		s.p.tracef("claim failed: %v", err)
	}
	return h, sent, err
}

func (s *simStore) Renew(ctx context.Context, h *leasestore.Hold) (time.Time, error) {
	sent, err := s.Store.Renew(ctx, h)
	switch {
	case err == nil:
		s.p.w.check.renewed(s.p, h, sent.Add(s.ttl-s.margin))
	case errors.Is(err, ErrLeaseLost):
		s.p.w.check.lost(s.p, h)
		s.p.tracef("renewal: lost: %v", err)
	default:
		s.p.tracef("renewal failed: %v", err)
	}
	return sent, err
}

func (s *simStore) Release(ctx context.Context, h *leasestore.Hold, final time.Time, exact bool) error {
	s.p.w.check.lost(s.p, h)
	err := s.Store.Release(ctx, h, final, exact)
	s.p.tracef("released machine %d (exact %t, final %s): %v", h.ID, exact, clockString(final), err)
	return err
}

func (s *simStore) Fleet(ctx context.Context, f leasestore.Fleet) error {
	err := s.Store.Fleet(ctx, f)
	if err != nil {
		s.p.tracef("fleet record: %v", err)
	}
	return err
}

// order is the claim order: claimOrder's, from the process's random
// stream. The lease's first claim takes no preference; every later one
// (a re-acquisition) prefers the generator's ID, which claimOrder put
// first.
func (p *simProc) order(ids []core.MachineID, again bool) []core.MachineID {
	keep := 0
	if again {
		keep = 1
	}
	rest := slices.Clone(ids[keep:])
	slices.Sort(rest)
	if len(rest) == 0 {
		return ids
	}
	p.h.mu.Lock()
	k := p.ord.IntN(len(rest))
	p.h.mu.Unlock()
	return append(slices.Clone(ids[:keep]), append(rest[k:], rest[:k]...)...)
}

// describeQuarantine says what a claim knows of the ID's previous holders.
func describeQuarantine(q leasestore.Quarantine) string {
	switch {
	case !q.Exact.IsZero():
		return "after a clean release ending " + clockString(q.Exact)
	case q.Trusted:
		return "trusted mark"
	}
	return fmt.Sprintf("quarantine until %s", clockString(q.Floor()))
}

// clockString shows an instant of the simulation's clocks, the date left
// out.
func clockString(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05.000000")
}

// simTrace is a run's events, for a failing seed's report.
type simTrace struct {
	mu    sync.Mutex
	lines []string
}

func (w *simWorld) tracef(who, format string, args ...any) {
	if w.trace == nil {
		return
	}
	line := fmt.Sprintf("%12s %-6s %s", w.now().Round(time.Microsecond), who, fmt.Sprintf(format, args...))
	w.trace.mu.Lock()
	w.trace.lines = append(w.trace.lines, line)
	w.trace.mu.Unlock()
}

func (p *simProc) tracef(format string, args ...any) { p.w.tracef(p.name, format, args...) }

// logger is the process's logger: into the trace, or nowhere.
func (p *simProc) logger() *slog.Logger {
	if p.w.trace == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(&traceHandler{p: p})
}

// traceHandler writes the lease's and the generator's log lines into the
// trace.
type traceHandler struct {
	p     *simProc
	attrs []slog.Attr
}

func (t *traceHandler) Enabled(context.Context, slog.Level) bool { return true }

func (t *traceHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range t.attrs {
		add(a)
	}
	r.Attrs(add)
	t.p.tracef("log: %s", b.String())
	return nil
}

func (t *traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &traceHandler{p: t.p, attrs: append(slices.Clone(t.attrs), as...)}
}

func (t *traceHandler) WithGroup(string) slog.Handler { return t }
