package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// Leasing under Redis Sentinel: why a majority's confirmation closes the
// split brain (docs/design/sentinel.md).
//
// An old master cut off with some holders keeps accepting their writes, and
// nothing tells them (it keeps its run_id and replid), while the Sentinels
// on the other side promote a replica that lacks their latest renewals:
// the key expires there and another host claims the ID. So a claim or a
// renewal counts only when, after its reply, a majority of the Sentinel
// group reports the master it went to at the same config epoch as the
// hold's claim. Each Sentinel's config epoch only grows, one epoch names
// one master, and two majorities of one group share a Sentinel: if a
// holder at epoch e got a confirmation at time c, and a host claims at a
// later epoch e' with a confirmation at c', the Sentinel in both answered
// e before e', so c < c'. Every renewal the old holder counted was sent
// before c', so it fences (sent + ttl - margin) before the new holder's
// quarantine, reckoned from c' at the latest, lets it issue. A confirmation
// at another epoch loses the hold: it claims again, quarantined.

// view is what a Sentinel says of the master: its address and the config
// epoch of that configuration.
type view struct {
	addr  string
	epoch int64
}

func (v view) String() string { return fmt.Sprintf("%s at config epoch %d", v.addr, v.epoch) }

// Clocks under Sentinel. The takeover quarantine bounds an old holder's
// time fields by the new holder's clock, so it needs the two clocks within
// a known distance. Each host is checked against the master it writes to,
// but the old and the new master are different hosts whose clocks nobody
// compares. So every Sentinel's answer also carries its clock (INFO
// server's server_time_usec), and a Sentinel counts towards a majority
// only while its clock is within max_clock_skew of this host's. The
// Sentinel that the old holder's last counted renewal and the new claim's
// majorities share is then within the old holder's bound of the one and
// the new holder's of the other: the masters' clocks never enter.

// sentinelGroup asks the configured Sentinels of one master name.
type sentinelGroup struct {
	name    string
	addrs   []string
	clients []*redis.SentinelClient
	clock   core.Clock
	skew    time.Duration // MaxClockSkew: a Sentinel's clock beyond it does not count

	mu  sync.Mutex
	ids map[int]string // SENTINEL MYID per client, once known
}

func newSentinelGroup(rc leasestore.RedisSettings, clock core.Clock, hook Hook) *sentinelGroup {
	g := &sentinelGroup{name: rc.MasterName, addrs: rc.Addrs, ids: map[int]string{}, clock: clock, skew: rc.MaxClockSkew}
	timeout := leasestore.CommandTimeout(rc.LeaseTTL)
	for _, a := range rc.Addrs {
		g.clients = append(g.clients, redis.NewSentinelClient(&redis.Options{
			Addr: a, TLSConfig: tlsConfig(rc), ClientName: "vesta-machineid",
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, DialerRetries: 1,
			MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 2,
		}))
		if hook != nil {
			g.clients[len(g.clients)-1].AddHook(hook(a, len(g.clients)-1))
		}
	}
	return g
}

// report is one Sentinel's answer.
type report struct {
	id    string // SENTINEL MYID: several addresses of one Sentinel count once
	v     view
	known int // the Sentinels it knows, itself included
	err   error
}

// ask asks every Sentinel at once what it says of the master.
func (g *sentinelGroup) ask(ctx context.Context) []report {
	out := make([]report, len(g.clients))
	var wg sync.WaitGroup
	for i, c := range g.clients {
		wg.Go(func() { out[i] = g.askOne(ctx, i, c) })
	}
	wg.Wait()
	return out
}

func (g *sentinelGroup) askOne(ctx context.Context, i int, c *redis.SentinelClient) report {
	g.mu.Lock()
	id, ok := g.ids[i]
	g.mu.Unlock()
	if !ok {
		cmd := redis.NewStringCmd(ctx, "sentinel", "myid")
		if err := c.Process(ctx, cmd); err != nil {
			return report{err: err}
		}
		id = cmd.Val()
		g.mu.Lock()
		g.ids[i] = id
		g.mu.Unlock()
	}
	m, err := c.Master(ctx, g.name).Result()
	if err != nil {
		return report{id: id, err: err}
	}
	epoch, err1 := strconv.ParseInt(m["config-epoch"], 10, 64)
	others, err2 := strconv.Atoi(m["num-other-sentinels"])
	if m["ip"] == "" || m["port"] == "" || err1 != nil || err2 != nil {
		return report{id: id, err: fmt.Errorf("SENTINEL MASTER %s: unexpected reply %v", g.name, m)}
	}
	r := report{id: id, v: view{addr: net.JoinHostPort(m["ip"], m["port"]), epoch: epoch}, known: others + 1}
	if err := g.checkClock(ctx, c); err != nil {
		r.err = err // it does not count: see "Clocks under Sentinel"
	}
	return r
}

// checkClock compares this host's clock with the Sentinel's.
func (g *sentinelGroup) checkClock(ctx context.Context, c *redis.SentinelClient) error {
	cmd := redis.NewStringCmd(ctx, "info", "server")
	t0 := g.clock.Now()
	err := c.Process(ctx, cmd)
	t1 := g.clock.Now()
	if err != nil {
		return err
	}
	_, after, ok := strings.Cut(cmd.Val(), "server_time_usec:")
	line, _, _ := strings.Cut(after, "\n")
	us, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if !ok || perr != nil {
		return fmt.Errorf("INFO server: no server_time_usec (Redis Sentinel 6.2 or later has it)")
	}
	_, err = JudgeClock(t0, t1, time.UnixMicro(us), g.skew, "the Sentinel's clock")
	return err
}

// tally counts the distinct Sentinels per view and the majority of the
// group: more than half of the larger of the configured Sentinels and the
// group any of them knows, so that every host's majority shares a Sentinel
// with every other's, whichever addresses each host lists.
func (g *sentinelGroup) tally(rs []report) (map[view]int, int) {
	size := len(g.clients)
	seen := map[string]bool{}
	counts := map[view]int{}
	for _, r := range rs {
		if r.err != nil || seen[r.id] {
			continue
		}
		seen[r.id] = true
		size = max(size, r.known)
		counts[r.v]++
	}
	return counts, size/2 + 1
}

// describe lists what each Sentinel said, for an error.
func (g *sentinelGroup) describe(rs []report) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		if r.err != nil {
			parts[i] = fmt.Sprintf("%s: %v", g.addrs[i], r.err)
		} else {
			parts[i] = fmt.Sprintf("%s: %s", g.addrs[i], r.v)
		}
	}
	return strings.Join(parts, "; ")
}

// view returns the master a majority of the group names, and its epoch.
func (g *sentinelGroup) view(ctx context.Context) (view, error) {
	rs := g.ask(ctx)
	counts, need := g.tally(rs)
	for v, n := range counts {
		if n >= need {
			return v, nil
		}
	}
	return view{}, fmt.Errorf("%w: no majority (%d) of the Sentinels names one master for %q: %s", leasestore.ErrUnavailable, need, g.name, g.describe(rs))
}

// confirm returns nil when a majority of the group names want, the master
// and epoch of a hold; an error wrapping leasestore.ErrLeaseLost when a majority names
// another (a failover: the hold cannot be proven against holders at the
// new epoch); otherwise an error wrapping leasestore.ErrUnavailable.
func (g *sentinelGroup) confirm(ctx context.Context, want view) error {
	rs := g.ask(ctx)
	counts, need := g.tally(rs)
	if counts[want] >= need {
		return nil
	}
	others := slices.Collect(func(yield func(view) bool) {
		for v, n := range counts {
			if n >= need && v != want && !yield(v) {
				return
			}
		}
	})
	if len(others) > 0 {
		return fmt.Errorf("%w: the Sentinels failed over %q to %s; the lease was taken on %s", leasestore.ErrLeaseLost, g.name, others[0], want)
	}
	return fmt.Errorf("%w: no majority (%d) of the Sentinels confirms %q is %s: %s", leasestore.ErrUnavailable, need, g.name, want, g.describe(rs))
}

func (g *sentinelGroup) close() error {
	var errs []error
	for _, c := range g.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
