package machineid

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// A Redis Sentinel group in the lease simulation: two or three Redis
// processes (redisModel, each on its own clock) and three Sentinels (each
// with a clock of its own), below go-redis as the single Redis is. The
// lease's Sentinel side (sentinel.go: the majority's view, the
// confirmation of every claim and renewal at the hold's config epoch, the
// Sentinels' clocks) runs for real. What the plan does to the group:
//
//   - a failover promotes a replica that lacks the master's writes of the
//     last lag (replication is asynchronous): it gets a new replid, the
//     Sentinels a new config epoch;
//   - the old master, unless cut off, becomes a replica of the new one at
//     once (its writes refused, READONLY; its data the new master's);
//   - cut off (isolate), it goes on serving the hosts cut off with it, a
//     split brain, until the cut heals.

// sentinelPlan is a plan's Sentinel group.
type sentinelPlan struct {
	redis     []time.Duration // each Redis's clock offset; the first starts as master
	sentinels []time.Duration // each Sentinel's clock offset
	failovers []failoverPlan
}

// failoverPlan is one failover, promoting to.
type failoverPlan struct {
	at, lag, isolate time.Duration
	to               int
	side             []int // the hosts cut off with the old master while isolated
}

// sentinelWorld is a run's Sentinel group.
type sentinelWorld struct {
	w     *simWorld
	plan  *sentinelPlan
	insts []*redisModel
	ids   []string // SENTINEL MYID

	mu     sync.Mutex
	master int
	epoch  int64
	splits []split
}

// split is a failover's isolation: the old master and the hosts on its
// side, cut from everything else.
type split struct {
	window
	old  int
	side map[int]bool
}

func newSentinelWorld(w *simWorld, sp *sentinelPlan, newID func() string) *sentinelWorld {
	sw := &sentinelWorld{w: w, plan: sp, epoch: 1}
	for _, off := range sp.redis {
		clock := func() time.Time { return time.Now().Add(simBase + off) }
		sw.insts = append(sw.insts, newRedisModel(clock, newID))
	}
	master := sw.insts[0]
	for _, m := range sw.insts[1:] {
		m.replid, m.readonly = master.replid, true // replicas share their master's replid
	}
	for range sp.sentinels {
		sw.ids = append(sw.ids, newID())
	}
	for _, f := range sp.failovers {
		if f.isolate > 0 {
			sw.splits = append(sw.splits, split{window: window{f.at, f.at + f.isolate}, side: map[int]bool{}})
		}
	}
	return sw
}

func instAddr(i int) string     { return fmt.Sprintf("10.99.1.%d:6379", i+1) }
func sentinelAddr(j int) string { return fmt.Sprintf("10.99.2.%d:26379", j+1) }

// events are the group's plan as the director's events: each failover,
// the snapshot it promotes, and the end of its split.
func (sw *sentinelWorld) events(add func(at time.Duration, f func())) {
	si := 0
	for _, f := range sw.plan.failovers {
		var snap map[string]*redisValue
		add(max(f.at-f.lag, 0), func() {
			sw.mu.Lock()
			m := sw.master
			sw.mu.Unlock()
			snap = sw.insts[m].snapshot()
		})
		var sp *split
		if f.isolate > 0 {
			sp = &sw.splits[si]
			si++
		}
		add(f.at, func() {
			sw.mu.Lock()
			old := sw.master
			if old == f.to {
				sw.mu.Unlock()
				return
			}
			n := sw.insts[f.to]
			n.promote(snap, sw.w.redisID())
			sw.master, sw.epoch = f.to, sw.epoch+1
			if sp != nil {
				sp.old = old
				for _, h := range f.side {
					sp.side[h] = true
				}
			}
			sw.mu.Unlock()
			sw.w.tracef("store", "failover: Redis %d promoted (lacking the last %s of writes) at config epoch %d; Redis %d %s",
				f.to+1, f.lag, sw.epoch, old+1, map[bool]string{true: fmt.Sprintf("cut off with hosts %v for %s", f.side, f.isolate), false: "a replica"}[sp != nil])
			if sp == nil {
				sw.insts[old].demote(n)
			}
		})
		if sp != nil {
			add(f.at+f.isolate, func() {
				sw.mu.Lock()
				old, n := sp.old, sw.insts[sw.master]
				sw.mu.Unlock()
				sw.insts[old].demote(n)
				sw.w.tracef("store", "the cut heals: Redis %d becomes a replica", old+1)
			})
		}
	}
}

// promote makes m a master with keys (what it had replicated) and a new
// replid.
func (m *redisModel) promote(keys map[string]*redisValue, replid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if keys != nil {
		m.keys = keys
	}
	m.replid, m.readonly = replid, false
}

// demote makes m a replica of master: its data and replid.
func (m *redisModel) demote(master *redisModel) {
	keys := master.snapshot()
	master.mu.Lock()
	replid := master.replid
	master.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys, m.replid, m.readonly = keys, replid, true
}

// isolated says whether a split is on at t, which Redis it cut off (the
// old master) and whether h stands on its side.
func (sw *sentinelWorld) isolated(h *simHost, t time.Duration) (on bool, old int, withOld bool) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for _, sp := range sw.splits {
		if sp.has(t) && len(sp.side) > 0 {
			return true, sp.old, sp.side[h.i]
		}
	}
	return false, 0, false
}

// instTarget is one Redis of the group.
type instTarget struct {
	sw *sentinelWorld
	i  int
}

func (t instTarget) down(time.Duration) bool { return false }
func (t instTarget) gen() int64              { return 0 }
func (t instTarget) cut(h *simHost, at time.Duration) bool {
	if h.cut(at) {
		return true
	}
	on, old, withOld := t.sw.isolated(h, at)
	return on && withOld != (t.i == old)
}

// sentinelTarget is one Sentinel.
type sentinelTarget struct{ sw *sentinelWorld }

func (t sentinelTarget) down(time.Duration) bool { return false }
func (t sentinelTarget) gen() int64              { return 0 }
func (t sentinelTarget) cut(h *simHost, at time.Duration) bool {
	if h.cut(at) {
		return true
	}
	_, _, withOld := t.sw.isolated(h, at)
	return withOld
}

// wire is the hook of a client of a process's Redis store: to Sentinel
// sentinel (its index in the configuration), or to the Redis at addr,
// each through the simulated network.
func (sw *sentinelWorld) wire(p *simProc, addr string, sentinel int) redis.Hook {
	if sentinel >= 0 {
		return sentinelLink{p: p, sw: sw, j: sentinel}
	}
	for i, m := range sw.insts {
		if instAddr(i) == addr {
			return redisLink{p, instTarget{sw, i}, m}
		}
	}
	panic("simulation: no Redis at " + addr)
}

// sentinelLink is a process's go-redis hook to one Sentinel.
type sentinelLink struct {
	p  *simProc
	sw *sentinelWorld
	j  int
}

func (l sentinelLink) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("simulation: no connection is dialled")
	}
}

func (l sentinelLink) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(context.Context, []redis.Cmder) error {
		return errors.New("simulation: no pipelines to a Sentinel")
	}
}

func (l sentinelLink) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		limit := leasestore.CommandTimeout(l.p.h.plan.ttl)
		// One stream of draws per Sentinel: the lease asks all three at once.
		v, err := l.p.roundTrip(ctx, sentinelTarget{l.sw}, kSentinel+l.j, limit, func() (any, error) { return l.sw.answer(l.j, cmd.Args()) })
		setReply(cmd, v, err)
		return cmd.Err()
	}
}

// answer is Sentinel j's reply.
func (sw *sentinelWorld) answer(j int, args []any) (any, error) {
	a := make([]string, len(args))
	for i, v := range args {
		a[i] = strings.ToLower(argString(v))
	}
	switch {
	case len(a) == 2 && a[0] == "sentinel" && a[1] == "myid":
		return sw.ids[j], nil
	case len(a) == 3 && a[0] == "sentinel" && a[1] == "master":
		sw.mu.Lock()
		defer sw.mu.Unlock()
		host, port, _ := net.SplitHostPort(instAddr(sw.master))
		return map[string]string{"name": argString(args[2]), "ip": host, "port": port, "flags": "master",
			"config-epoch": strconv.FormatInt(sw.epoch, 10), "num-other-sentinels": strconv.Itoa(len(sw.ids) - 1)}, nil
	case len(a) >= 1 && a[0] == "info":
		t := time.Now().Add(simBase + sw.plan.sentinels[j])
		return "# Server\r\nredis_version:7.0.0\r\nredis_mode:sentinel\r\nserver_time_usec:" + strconv.FormatInt(t.UnixMicro(), 10) + "\r\n", nil
	}
	return nil, replyError("ERR unknown command '" + strings.Join(a, " ") + "' for a Sentinel")
}
