package machineid

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// A simPlan is one schedule of the lease simulation, drawn whole from a
// seed before it runs (newSimPlan): the store, the hosts with their
// settings, clocks and networks, and every fault with its instant. The run
// (simWorld) adds no randomness of its own but the network's delays and
// drops, drawn from streams of the same seed, so the seed replays the
// schedule.
type simPlan struct {
	seed     uint64
	provider string // ProviderRedis or ProviderEtcd
	layout   core.Layout
	typ      core.Type
	rng      core.MachineRange // the lease range every host claims from
	fresh    bool              // a new store; else claims have seen it for an hour
	sentinel *sentinelPlan     // Redis under Sentinel (provider redis)
	shared   bool              // every host has the first one's settings
	horizon  time.Duration
	hosts    []*hostPlan
	store    []storeEvent // by instant
}

// hostPlan is one host: its settings (each within what Validate accepts),
// its clock, its network to the store, its processes and its faults.
type hostPlan struct {
	name        string
	ttl         time.Duration // Redis.LeaseTTL or Etcd.LeaseTTL
	skew        time.Duration // Redis.MaxClockSkew
	borrow      time.Duration // core.Config.MaxBorrow
	window      time.Duration // core.Config.GuardWindow
	startupWait time.Duration // core.Config.MaxStartupWait
	offset      time.Duration // the host's clock minus the true time, at first
	steps       []clockStep   // later steps of the host's clock
	lat, jitter time.Duration // one way, to the store
	drop        float64       // of each request and each reply
	partitions  []window      // cut from the store
	slow        []window      // every message takes slowBy more
	slowBy      time.Duration
	pauses      []window // the whole host stopped (SIGSTOP)
	procs       []procPlan
	issueEvery  time.Duration // mean time between issuing calls
	batch       int           // IDs per call, at most
}

// procPlan is one process of a host: it starts at start (claims, prepares,
// issues) and ends at end: crashed (nothing more reaches the store) or
// stopped cleanly (the generator closed, then the lease). A process whose
// Acquire or start fails tries again after retry, as a supervisor
// restarts a refused server.
type procPlan struct {
	start, end time.Duration
	crash      bool
	retry      time.Duration
}

type window struct{ from, to time.Duration }

func (w window) has(t time.Duration) bool { return t >= w.from && t < w.to }

type clockStep struct{ at, by time.Duration }

// storeEvent is something that happens to the store itself.
type storeEvent struct {
	at   time.Duration
	kind storeEventKind
	down time.Duration // restarts: unreachable for this long from at
	by   time.Duration // clockStep: the step
	age  time.Duration // restartOld: the snapshot was taken this long before at
}

type storeEventKind uint8

const (
	restartEmpty storeEventKind = iota // killed, back empty: a new run_id and replid
	restartOld                         // killed, back from a snapshot taken age before
	flushAll                           // FLUSHALL: the same instance, empty
	storeStep                          // the store's clock steps by by
	leaderChange                       // etcd: a new leader, every lease renewed to its full TTL
	quorumLost                         // etcd: no quorum for down: every request fails
)

func (k storeEventKind) String() string {
	return [...]string{"restart-empty", "restart-from-snapshot", "flushall", "clock-step", "leader-change", "quorum-lost"}[k]
}

// simFaults says which faults plans may draw. The zero simFaults draws
// only faults the lease is designed to survive.
type simFaults struct {
	// notSurvived draws steps of Redis's clock in schedules that also lose
	// Redis's data: the case docs/guarantees.md names redis-clock-moved
	// (the quarantine compares the cut-off holder's clock and the
	// claimant's through Redis's, which moved). Without it, Redis's clock
	// steps only where Redis keeps its data.
	notSurvived bool
}

// pick returns one of vs.
func pick[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }

// dur is a duration uniform in [lo, hi).
func dur(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

// chance is true with probability p.
func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

// newSimPlan draws the schedule of seed. Plans are small on purpose: a
// lease range no wider than the hosts (every fault can end in a
// takeover), a horizon of a few lease TTLs, and the faults timed where the
// lease can break: around renewals and deadlines, and a store's data loss
// while a holder is cut off or paused.
func newSimPlan(seed uint64, provider string, faults simFaults) *simPlan {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	p := &simPlan{seed: seed, provider: provider}
	if provider == "" {
		p.provider = pick(r, ProviderRedis, ProviderRedis, "sentinel", ProviderEtcd, ProviderEtcd)
	}
	sentinel := p.provider == "sentinel"
	if sentinel {
		p.provider = ProviderRedis
	}
	etcd := p.provider == ProviderEtcd
	p.layout = pick(r, core.Sorted, core.Sorted, core.Vesta, core.Leaf)
	p.typ = pick(r, core.MaxPeak, core.MinGranularity)
	if p.layout == core.Leaf {
		p.typ = core.MinGranularity
	}
	p.fresh = chance(r, 0.2)
	nHosts := pick(r, 2, 2, 2, 3, 3, 4)
	p.rng = core.MachineRange{First: DefaultServerRange.First, Count: uint16(1 + r.IntN(min(nHosts, 2)))}

	// One fleet's settings, shared by every host or not.
	p.shared = chance(r, 0.5)
	shared := p.shared
	var fleetHost *hostPlan
	maxTTL := time.Duration(0)
	for i := range nHosts {
		h := &hostPlan{name: string(rune('A' + i))}
		if shared && fleetHost != nil {
			*h = *fleetHost
			h.name = string(rune('A' + i))
			h.steps, h.partitions, h.slow, h.pauses, h.procs = nil, nil, nil, nil, nil
		} else {
			drawSettings(r, h, etcd, p.typ)
			fleetHost = h
		}
		// The clock: within the bound mostly, sometimes past it.
		bound := h.skew
		if etcd {
			bound = 500 * time.Millisecond
		}
		h.offset = dur(r, -bound, bound)
		if chance(r, 0.1) {
			h.offset = dur(r, bound, 3*bound+time.Second) * time.Duration(pick(r, -1, 1))
		}
		h.lat = pick(r, 100*time.Microsecond, time.Millisecond, 5*time.Millisecond)
		if chance(r, 0.1) {
			h.lat = leasestore.CommandTimeout(h.ttl) / 8 // a far host
		}
		h.jitter = h.lat / 2
		h.drop = pick(r, 0, 0, 0.01, 0.05)
		h.issueEvery = pick(r, 250*time.Millisecond, 500*time.Millisecond, time.Second)
		h.batch = pick(r, 1, 10, 500)
		maxTTL = max(maxTTL, h.ttl)
		p.hosts = append(p.hosts, h)
	}
	p.horizon = min(max(3*maxTTL, 6*time.Second), 30*time.Second)
	H := p.horizon

	for _, h := range p.hosts {
		// Processes: one from near the start, sometimes ended by a crash or
		// a clean stop and started again.
		start := dur(r, 0, pick(r, 100*time.Millisecond, 2*time.Second, H/3))
		retry := pick(r, time.Second, 2*time.Second)
		for start < H {
			pr := procPlan{start: start, end: H, retry: retry}
			if chance(r, 0.3) {
				pr.end = start + dur(r, h.ttl/2, H)
				pr.crash = chance(r, 0.5)
			}
			h.procs = append(h.procs, pr)
			if pr.end >= H {
				break
			}
			start = pr.end + dur(r, 0, 2*h.ttl)
		}
	}

	// Faults: a few per schedule, each on a host drawn at random and timed
	// at random or around one of its lease instants.
	for range 1 + r.IntN(3) {
		h := p.hosts[r.IntN(len(p.hosts))]
		from := dur(r, 0, H)
		if chance(r, 0.5) {
			// Around the fence: renewals every ttl/3, a deadline ttl - margin
			// after one.
			from = max(h.procs[0].start+time.Duration(1+r.IntN(6))*h.ttl/3+dur(r, -300*time.Millisecond, 300*time.Millisecond), 0)
		}
		switch r.IntN(5) {
		case 0, 1:
			h.partitions = append(h.partitions, window{from, from + pick(r, dur(r, 0, time.Second), dur(r, time.Second, 2*h.ttl), H)})
		case 2:
			h.pauses = append(h.pauses, window{from, from + pick(r, dur(r, 0, time.Second), dur(r, time.Second, 2*h.ttl))})
		case 3:
			h.slow = append(h.slow, window{from, from + dur(r, 0, 2*h.ttl)})
			h.slowBy = pick(r, leasestore.CommandTimeout(h.ttl)/4, leasestore.CommandTimeout(h.ttl)/2, leasestore.CommandTimeout(h.ttl))
		case 4:
			by := pick(r, dur(r, -time.Second, time.Second), dur(r, -10*time.Second, 10*time.Second))
			h.steps = append(h.steps, clockStep{at: from, by: by})
		}
	}

	// The store.
	if sentinel {
		p.sentinel = drawSentinel(r, p)
		return p
	}
	if !etcd && chance(r, 0.5) {
		// Data loss while a holder is cut off: the case a quarantine is
		// for. The victim is likely to hold an ID by then.
		// The victim is the host that starts first: likely to hold an ID.
		v := p.hosts[0]
		for _, h := range p.hosts {
			if h.procs[0].start < v.procs[0].start {
				v = h
			}
		}
		from := v.procs[0].start + dur(r, v.ttl/3, 2*v.ttl)
		v.partitions = append(v.partitions, window{from, from + pick(r, v.ttl, 2*v.ttl, H)})
		if chance(r, 0.5) {
			p.rng.Count = 1 // every other host waits for the victim's ID
		}
		loss := storeEvent{at: from + dur(r, 0, time.Second), kind: pick(r, restartEmpty, restartOld, flushAll),
			down: pick(r, 0, dur(r, 0, time.Second)), age: dur(r, 0, 3*time.Second)}
		p.store = append(p.store, loss)
		if faults.notSurvived && len(p.hosts) > 1 && chance(r, 0.5) {
			// redis-clock-moved: Redis comes back on a clock S away, and a
			// standby's clock, set from the same wrong source, with it.
			by := dur(r, 5*time.Second, 30*time.Second) * time.Duration(pick(r, -1, 1))
			p.store = append(p.store, storeEvent{at: loss.at + 1, kind: storeStep, by: by})
			o := p.hosts[r.IntN(len(p.hosts))]
			for o == v {
				o = p.hosts[r.IntN(len(p.hosts))]
			}
			o.steps = append(o.steps, clockStep{at: loss.at + 1, by: by})
		}
	}
	lost := len(p.store) > 0
	for range r.IntN(2) {
		e := storeEvent{at: dur(r, 0, H)}
		if etcd {
			e.kind = pick(r, leaderChange, leaderChange, quorumLost)
			e.down = dur(r, 0, time.Second) // an election
			if e.kind == quorumLost {
				e.down = dur(r, time.Second, 3*max(p.hosts[0].ttl, time.Second))
			}
		} else {
			e.kind = pick(r, restartEmpty, restartEmpty, restartOld, flushAll, storeStep)
			if e.kind == storeStep && lost && !faults.notSurvived {
				e.kind = flushAll
			}
			if e.kind == storeStep {
				e.by = pick(r, dur(r, -time.Second, time.Second), dur(r, -5*time.Second, 5*time.Second))
			} else if !faults.notSurvived {
				// Redis keeps its clock where it loses data: drop the
				// steps drawn before.
				p.store = slices.DeleteFunc(p.store, func(e storeEvent) bool { return e.kind == storeStep })
			}
			lost = lost || e.kind != storeStep
			if e.kind == restartEmpty || e.kind == restartOld {
				e.down = pick(r, 0, dur(r, 0, time.Second), dur(r, 0, 5*time.Second))
			}
			if e.kind == restartOld {
				e.age = dur(r, 0, 3*time.Second)
			}
		}
		p.store = append(p.store, e)
	}
	slices.SortFunc(p.store, func(a, b storeEvent) int { return int(a.at - b.at) })
	return p
}

// drawSentinel draws a Sentinel group: two or three Redis and three
// Sentinels, their clocks within the hosts' bound but now and then not,
// and one or two failovers, each promoting a replica that may lack the
// last writes, the old master cut off half the time with some hosts (a
// split brain), often the one holding since the start.
func drawSentinel(r *rand.Rand, p *simPlan) *sentinelPlan {
	bound := p.hosts[0].skew
	for _, h := range p.hosts {
		bound = min(bound, h.skew)
	}
	clock := func() time.Duration {
		if chance(r, 0.1) {
			return dur(r, time.Second, 3*time.Second) * time.Duration(pick(r, -1, 1))
		}
		return dur(r, -bound/2, bound/2)
	}
	sp := &sentinelPlan{}
	for range pick(r, 2, 3) {
		sp.redis = append(sp.redis, clock())
	}
	for range 3 {
		sp.sentinels = append(sp.sentinels, clock())
	}
	first := p.hosts[0]
	for _, h := range p.hosts {
		if h.procs[0].start < first.procs[0].start {
			first = h
		}
	}
	for range 1 + r.IntN(2) {
		f := failoverPlan{at: dur(r, 0, p.horizon), lag: pick(r, 0, 100*time.Millisecond, time.Second, 3*time.Second)}
		if chance(r, 0.5) {
			f.at = first.procs[0].start + dur(r, first.ttl/3, 2*first.ttl)
		}
		if chance(r, 0.5) {
			f.isolate = dur(r, time.Second, 2*first.ttl+time.Second)
			for i, h := range p.hosts {
				if h == first || chance(r, 0.3) {
					f.side = append(f.side, i)
				}
			}
		}
		sp.failovers = append(sp.failovers, f)
	}
	slices.SortFunc(sp.failovers, func(a, b failoverPlan) int { return int(a.at - b.at) })
	master := 0
	for i := range sp.failovers {
		sp.failovers[i].to = (master + 1 + r.IntN(len(sp.redis)-1)) % len(sp.redis)
		master = sp.failovers[i].to
	}
	return sp
}

// drawSettings draws a host's settings among what Validate accepts.
func drawSettings(r *rand.Rand, h *hostPlan, etcd bool, typ core.Type) {
	if etcd {
		h.ttl = pick(r, 2*time.Second, 3*time.Second, 5*time.Second, 10*time.Second)
	} else {
		h.ttl = pick(r, time.Second, time.Second, 2*time.Second, 5*time.Second, 15*time.Second)
		if chance(r, 0.01) {
			// The Go API's least (conf's is 1s): 30 renewals a second, a
			// schedule's cost several times over.
			h.ttl = 100 * time.Millisecond
		}
		h.skew = pick(r, 20*time.Millisecond, 200*time.Millisecond, 2*time.Second)
	}
	h.borrow = pick(r, 0, typ.Unit(), time.Second, 3*time.Second)
	h.window = pick(r, time.Second, 3*time.Second, 10*time.Second)
	h.startupWait = pick(r, 0, time.Second, 10*time.Second)
}

// String is the plan, one line per host and per store event, for a
// failure's report.
func (p *simPlan) String() string {
	var b strings.Builder
	age := "established"
	if p.fresh {
		age = "new"
	}
	fmt.Fprintf(&b, "seed %d: %s (%s), layout %s, type %s, lease range %s, horizon %s\n", p.seed, p.provider, age, p.layout, p.typ, p.rng, p.horizon)
	for _, h := range p.hosts {
		fmt.Fprintf(&b, "  host %s: ttl %s", h.name, h.ttl)
		if p.provider == ProviderRedis {
			fmt.Fprintf(&b, " max_clock_skew %s", h.skew)
		}
		fmt.Fprintf(&b, " max_borrow %s window %s startup_wait %s; clock %+v; link %s±%s drop %.0f%%; issues every %s (≤%d)\n",
			h.borrow, h.window, h.startupWait, h.offset, h.lat, h.jitter, h.drop*100, h.issueEvery, h.batch)
		for _, pr := range h.procs {
			end := "runs to the end"
			if pr.end < p.horizon {
				end = "stops cleanly at " + pr.end.String()
				if pr.crash {
					end = "crashes at " + pr.end.String()
				}
			}
			fmt.Fprintf(&b, "    process from %s, %s (retries every %s)\n", pr.start, end, pr.retry)
		}
		for _, w := range h.partitions {
			fmt.Fprintf(&b, "    cut from the store %s-%s\n", w.from, w.to)
		}
		for _, w := range h.pauses {
			fmt.Fprintf(&b, "    paused %s-%s\n", w.from, w.to)
		}
		for _, w := range h.slow {
			fmt.Fprintf(&b, "    messages %s slower %s-%s\n", h.slowBy, w.from, w.to)
		}
		for _, s := range h.steps {
			fmt.Fprintf(&b, "    clock steps %+v at %s\n", s.by, s.at)
		}
	}
	if sp := p.sentinel; sp != nil {
		fmt.Fprintf(&b, "  Sentinel group: Redis clocks %v, Sentinel clocks %v\n", sp.redis, sp.sentinels)
		for _, f := range sp.failovers {
			fmt.Fprintf(&b, "  failover at %s to Redis %d, lacking the last %s of writes", f.at, f.to+1, f.lag)
			if f.isolate > 0 {
				fmt.Fprintf(&b, "; the old master cut off for %s with hosts %v", f.isolate, f.side)
			}
			b.WriteByte('\n')
		}
	}
	for _, e := range p.store {
		fmt.Fprintf(&b, "  store: %s at %s", e.kind, e.at)
		if e.down > 0 {
			fmt.Fprintf(&b, ", down %s", e.down)
		}
		if e.kind == storeStep {
			fmt.Fprintf(&b, " by %+v", e.by)
		}
		if e.kind == restartOld {
			fmt.Fprintf(&b, ", snapshot %s old", e.age)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
