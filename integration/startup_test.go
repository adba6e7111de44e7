package integration_test

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit/etcdtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/etcdlease"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// started is one start of `vesta serve`: the process, how long it took
// from the start to its first ID, that ID, and the connection it came on.
type started struct {
	*proc
	took  time.Duration
	first core.ID
	conn  *rawConn
}

// startFirst starts `vesta serve` with env and returns once it issued its
// first ID.
func startFirst(tb testing.TB, name string, env map[string]string) started {
	tb.Helper()
	vestaBinary(tb) // built before the clock starts
	start := time.Now()
	p := serve(tb, name, env)
	conn := dialRaw(tb, p.Central)
	for {
		id, err := conn.genID()
		if err == nil {
			return started{proc: p, took: time.Since(start), first: id, conn: conn}
		}
		if time.Since(start) > startTimeout {
			tb.Fatalf("%s: no ID %v after start: %v", name, time.Since(start), err)
		}
		time.Sleep(time.Millisecond)
	}
}

// last is the highest ID s has issued so far: the last of a fresh batch.
func (s started) last(tb testing.TB) core.ID {
	tb.Helper()
	ids, err := s.conn.genIDs(100)
	if err != nil {
		tb.Fatalf("%s: %v", s.name, err)
	}
	return ids[len(ids)-1]
}

// claimRecord is what a leasing server's log says of its claim.
type claimRecord struct {
	at time.Time // of the "leased" record
	// vouched: a mark this store instance wrote (Redis), a clean-release
	// record, or etcd vouched for everything issued with the ID before,
	// so no quarantine applies (the record's "quarantine" is false).
	vouched bool
	// floor is the instant the quarantine record says the server issues
	// from; zero when it did not wait (no record: nothing to wait for).
	floor time.Time
}

var quarantineLine = regexp.MustCompile(`^machineid: quarantine: machine \d+ issues from (\S+);`)

// claim reads s's claim from its log.
func (s started) claim(tb testing.TB) claimRecord {
	tb.Helper()
	var c claimRecord
	leased := false
	for _, r := range s.records() {
		msg := r.str("msg")
		if msg == "machineid: leased a machine ID" {
			at, err := time.Parse(time.RFC3339Nano, r.str("time"))
			if err != nil {
				tb.Fatalf("%s: the lease record's time: %v", s.name, err)
			}
			c.at, c.vouched, leased = at, r["quarantine"] == false, true
		}
		if m := quarantineLine.FindStringSubmatch(msg); m != nil {
			f, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil {
				tb.Fatalf("%s: the quarantine record's floor: %v", s.name, err)
			}
			c.floor = f
		}
	}
	if !leased {
		tb.Fatalf("%s: no lease record in its log:\n%s", s.name, s.tail(10))
	}
	return c
}

// atOnce fails the test unless s started without waiting out a
// quarantine; vouched is what the claim must have found.
func (s started) atOnce(tb testing.TB, vouched bool) {
	tb.Helper()
	c := s.claim(tb)
	if !c.floor.IsZero() {
		tb.Errorf("%s waited out a quarantine, to %s (first ID %v after start):\n%s", s.name,
			c.floor.Format(time.RFC3339Nano), s.took.Round(time.Millisecond), s.tail(10))
	}
	if c.vouched != vouched {
		tb.Errorf("%s: the claim found the ID's past vouched for: %t; want %t:\n%s", s.name, c.vouched, vouched, s.tail(10))
	}
}

// refusedAtStart fails the test unless p exits 2 (a configuration error)
// without serving, naming each of naming.
func refusedAtStart(tb testing.TB, p *proc, naming ...string) {
	tb.Helper()
	if code := p.waitExit(); code != 2 {
		tb.Errorf("%s: exit code %d; want 2, a configuration error:\n%s", p.name, code, p.tail(10))
	}
	out := p.output()
	for _, want := range naming {
		if !strings.Contains(out, want) {
			tb.Errorf("%s: refused without naming %q:\n%s", p.name, want, p.tail(10))
		}
	}
	if slices.ContainsFunc(p.records(), msgIs("serving")) {
		tb.Errorf("%s served before it exited", p.name)
	}
}

// etcdEnv is a server's environment (serverEnv's) leasing from the etcd
// members at endpoints; further VESTA_* pairs override.
func etcdEnv(tb testing.TB, endpoints []string, kv ...string) map[string]string {
	return serverEnv(tb, nil, "", 0, append([]string{
		"VESTA_MACHINE_PROVIDERS", machineid.ProviderEtcd,
		"VESTA_MACHINE_ETCD_ENDPOINTS", strings.Join(endpoints, ","),
	}, kv...)...)
}

// startupEtcdEnv leases from ec under the key prefix "startup".
func startupEtcdEnv(tb testing.TB, ec *etcdtest.Cluster, kv ...string) map[string]string {
	return etcdEnv(tb, ec.Endpoints(), append([]string{"VESTA_MACHINE_ETCD_KEY_PREFIX", "startup"}, kv...)...)
}

// TestStartupCost: which starts of `vesta serve` wait out the takeover
// quarantine, at short lease settings. What each start waited for is read
// from the server's own log, not timed; each server leases from a one-ID
// range, so the test knows which of the claim's cases it meets.
func TestStartupCost(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		const ttl, prefix = 2 * time.Second, "startup"
		rds := redistest.Start(t)
		rc := redisClient(t, rds)
		on := func(machine int, kv ...string) map[string]string {
			m := strconv.Itoa(machine)
			return serverEnv(t, rds, prefix, ttl, append([]string{"VESTA_MACHINE_SERVER_RANGE", m + "-" + m,
				"VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW", takeoverSkew.String()}, kv...)...)
		}

		// A fresh Redis cannot tell whether it lost the lease of a holder
		// that still issues, whatever that holder's settings: the first
		// claim is quarantined, issuing only above the moment claims
		// first saw this Redis + MaxRedisReach, the bound every host's
		// lease_ttl + max_clock_skew + max_borrow is held to (its own 2s
		// lease would give 2.4s).
		a := startFirst(t, "fresh Redis", on(1023))
		c := a.claim(t)
		switch {
		case c.vouched || c.floor.IsZero():
			t.Fatalf("the first claim on a fresh Redis was not quarantined:\n%s", a.tail(10))
		case c.floor.Sub(c.at) < machineid.MaxRedisReach-time.Second:
			t.Errorf("quarantined from %s, %v after the claim; want about MaxRedisReach %v",
				c.floor.Format(time.RFC3339Nano), c.floor.Sub(c.at), machineid.MaxRedisReach)
		case decode(a.first).instant().Before(c.floor):
			t.Errorf("the first ID %v lies below the quarantine's floor %s", decode(a.first), c.floor.Format(time.RFC3339Nano))
		}
		t.Logf("fresh Redis: quarantined to %s, %v after the claim; first ID %v after start",
			c.floor.Format(time.RFC3339Nano), c.floor.Sub(c.at).Round(time.Millisecond), a.took.Round(time.Millisecond))
		aLast := a.last(t)

		// A crash, and a never-used ID on a Redis that claims have seen
		// for longer than a quarantine: a lease Redis lost before it was
		// first seen has expired by now. Nothing vouches for the ID, yet
		// it starts at once.
		a.kill()
		b := startFirst(t, "never-used ID", on(1022))
		b.atOnce(t, false)
		bLast := b.last(t)

		// The crash restart on A's ID once its lease expired: A's mark was
		// written by this very Redis instance, which lost nothing since
		// (no restart, failover or FLUSHALL): trusted, at once, above
		// every ID of A.
		leaseKey, _ := redislease.Keys(prefix, 1023)
		awaitExpiry(t, rc, leaseKey, 2*ttl)
		a2 := startFirst(t, "crash restart", on(1023))
		a2.atOnce(t, true)
		if a2.first <= aLast {
			t.Errorf("the restarted server's first ID %v is not above the killed one's last %v", decode(a2.first), decode(aLast))
		}

		// The clean restart of B: its release record gives the exact end.
		stopAll(t, b.proc)
		b2 := startFirst(t, "clean restart", on(1022))
		b2.atOnce(t, true)
		if b2.first <= bLast {
			t.Errorf("the restarted server's first ID %v is not above the stopped one's last %v", decode(b2.first), decode(bLast))
		}
		t.Logf("first ID after start: never-used ID %v, crash restart %v, clean restart %v", b.took.Round(time.Millisecond),
			a2.took.Round(time.Millisecond), b2.took.Round(time.Millisecond))

		// The fleet record, written by A, refuses a host of another shape,
		// before it issues; the lease it claimed is given back. Another
		// timing within MaxRedisReach is no reason to refuse: the
		// quarantine counts the bound, not the fleet's timing.
		refusedAtStart(t, launch(t, "another layout", on(1021, "VESTA_ID_LAYOUT", "vesta")),
			"id.layout vesta (the fleet's: sorted)", redislease.FleetKey(prefix))
		if key, _ := redislease.Keys(prefix, 1021); rc.Exists(context.Background(), key).Val() != 0 {
			t.Errorf("a refused host left its lease %s", key)
		}
		other := startFirst(t, "another timing", on(1021, "VESTA_MACHINE_REDIS_LEASE_TTL", "3s", "VESTA_ID_MAX_BORROW", "500ms"))
		stopAll(t, a2.proc, b2.proc, other.proc)
	})

	t.Run("etcd", func(t *testing.T) {
		ec := etcdtest.Start(t)
		on := func(machine int, kv ...string) map[string]string {
			m := strconv.Itoa(machine)
			return startupEtcdEnv(t, ec, append([]string{"VESTA_MACHINE_ETCD_LEASE_TTL", "2s", "VESTA_MACHINE_ETCD_SERVER_RANGE", m + "-" + m}, kv...)...)
		}
		// etcd loses no acknowledged write: no claim is quarantined, the
		// first on a fresh cluster neither.
		a := startFirst(t, "fresh etcd", on(1023))
		a.atOnce(t, true)
		a.kill()
		b := startFirst(t, "crash restart", on(1022))
		b.atOnce(t, true)
		bLast := b.last(t)
		stopAll(t, b.proc)
		b2 := startFirst(t, "clean restart", on(1022))
		b2.atOnce(t, true)
		if b2.first <= bLast {
			t.Errorf("the restarted server's first ID %v is not above the stopped one's last %v", decode(b2.first), decode(bLast))
		}
		refusedAtStart(t, launch(t, "another layout", on(1021, "VESTA_ID_LAYOUT", "vesta")),
			"id.layout vesta (the fleet's: sorted)", etcdlease.FleetKey("startup"))
		stopAll(t, b2.proc)
	})
}

// TestRedisClusterAddrsRefused: several Redis addresses without a master
// name would be a Redis Cluster, which cannot keep a lease: `vesta serve`
// refuses at start, naming machine.redis.addrs, before it writes a key.
func TestRedisClusterAddrsRefused(t *testing.T) {
	r1, r2 := redistest.Start(t), redistest.Start(t)
	env := serverEnv(t, r1, "cluster", 2*time.Second, "VESTA_MACHINE_REDIS_ADDRS", r1.Addr()+","+r2.Addr())
	refusedAtStart(t, launch(t, "two addresses", env), "machine.redis.addrs", "2 addresses without Redis.MasterName")
	for _, r := range []*redistest.Server{r1, r2} {
		if n, err := r.Command("DBSIZE"); err != nil || n != "0" {
			t.Errorf("Redis %s holds %s keys (%v) after the refusal; want none", r.Addr(), n, err)
		}
	}
}

// startupStore is a machine-ID provider whose start-up cost
// BenchmarkStartupCost measures.
type startupStore struct {
	name string
	// rangeKey sets the lease range; "" for a fixed ID.
	rangeKey string
	// open starts a fresh store and returns a server's environment at the
	// default lease settings, the fallback configuration of a client
	// leasing there (nil: client.New is not measured) and how to stop
	// the store.
	open func(tb testing.TB) (env map[string]string, fallback *embed.Config, stop func())
}

// The benchmark's providers. Leases at the defaults: a 15s lease TTL and a
// 2s max_clock_skew on Redis, a 10s lease on etcd.
var startupStores = []startupStore{
	{name: "static", open: func(tb testing.TB) (map[string]string, *embed.Config, func()) {
		return serverEnv(tb, nil, "", 0, "VESTA_MACHINE_ID", "1000"), nil, func() {}
	}},
	{name: "redis", rangeKey: "VESTA_MACHINE_REDIS_SERVER_RANGE", open: func(tb testing.TB) (map[string]string, *embed.Config, func()) {
		d := machineid.DefaultConfig().Redis
		rds := redistest.Start(tb)
		env := serverEnv(tb, rds, "startup", d.LeaseTTL, "VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW", d.MaxClockSkew.String())
		fb := embedConfig(tb, rds, "startup", d.LeaseTTL)
		fb.Machine.Redis.MaxClockSkew = d.MaxClockSkew
		return env, &fb, rds.Stop
	}},
	{name: "redis-sentinel", rangeKey: "VESTA_MACHINE_REDIS_SERVER_RANGE", open: func(tb testing.TB) (map[string]string, *embed.Config, func()) {
		d := machineid.DefaultConfig().Redis
		g := redistest.StartReplicated(tb)
		env := serverEnv(tb, nil, "", 0,
			"VESTA_MACHINE_PROVIDERS", "redis",
			"VESTA_MACHINE_REDIS_ADDRS", strings.Join(g.SentinelAddrs(), ","),
			"VESTA_MACHINE_REDIS_MASTER_NAME", g.MasterName,
			"VESTA_MACHINE_REDIS_KEY_PREFIX", "startup",
			"VESTA_MACHINE_REDIS_LEASE_TTL", d.LeaseTTL.String(),
			"VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW", d.MaxClockSkew.String())
		return env, nil, func() {
			for _, r := range g.Replicas {
				r.Stop()
			}
			g.Master.Stop() // the Sentinels stop with the benchmark
		}
	}},
	{name: "etcd-3", rangeKey: "VESTA_MACHINE_ETCD_SERVER_RANGE", open: func(tb testing.TB) (map[string]string, *embed.Config, func()) {
		ec := etcdtest.StartCluster(tb, 3, etcdtest.Options{})
		fb := embed.DefaultConfig()
		fb.DataDir = tb.TempDir()
		fb.Machine.Providers = []string{machineid.ProviderEtcd}
		fb.Machine.Etcd.Endpoints = ec.Endpoints()
		fb.Machine.Etcd.KeyPrefix = "startup"
		return startupEtcdEnv(tb, ec), &fb, func() {
			for _, m := range ec.Members() {
				m.Stop()
			}
		}
	}},
}

// startupCost runs the start-up scenarios of st once and adds each one's
// seconds to sum, by metric:
//
//   - s-fresh-claim: the first start on a fresh store;
//   - s-crash-restart: a start after kill -9 of that server (the default
//     server range has a free ID; the killed one's stays leased until its
//     TTL);
//   - s-clean-restart: a start after SIGTERM of that one, once it exited;
//   - s-fresh-id: (lease stores) a start on an ID never used before, the
//     store in use for longer than a quarantine by then;
//   - s-client-new, s-fallback-ready: (with a fallback) how long
//     client.New with the fallback leasing from a fresh store takes to
//     return, and until FallbackState().Ready; and the same on the store
//     in use (-established).
func startupCost(b *testing.B, st startupStore, sum map[string]float64) {
	env, fallback, stop := st.open(b)
	step := func(metric, name string, env map[string]string) started {
		s := startFirst(b, st.name+"/"+name, env)
		sum[metric] += s.took.Seconds()
		how := ""
		if st.rangeKey != "" {
			if c := s.claim(b); !c.floor.IsZero() {
				how = ", quarantined to " + c.floor.Format(time.RFC3339Nano)
			}
		}
		b.Logf("%s: machine %d, first ID %v after start%s", s.name, s.Machine, s.took.Round(time.Millisecond), how)
		return s
	}
	p1 := step("s-fresh-claim", "fresh claim", env)
	p1.kill()
	p2 := step("s-crash-restart", "crash restart", env)
	stopAll(b, p2.proc)
	p3 := step("s-clean-restart", "clean restart", env)
	running := []*proc{p3.proc}
	if st.rangeKey != "" {
		used := []int{p1.Machine, p2.Machine, p3.Machine}
		free := firstServer
		for slices.Contains(used, free) {
			free++
		}
		m := strconv.Itoa(free)
		running = append(running, step("s-fresh-id", "fresh ID", withEnv(env, st.rangeKey, m+"-"+m)).proc)
	}
	if fallback != nil {
		newCost := func(store, suffix string, fb embed.Config) {
			returned, ready := clientNewCost(b, p3.Central, fb)
			sum["s-client-new"+suffix] += returned.Seconds()
			sum["s-fallback-ready"+suffix] += ready.Seconds()
			b.Logf("%s/client.New, the fallback leasing from %s: returned after %v, the fallback ready after %v", st.name,
				store, returned.Round(time.Microsecond), ready.Round(time.Millisecond))
		}
		newCost("the store in use", "-established", *fallback)
		_, freshFallback, stopFresh := st.open(b)
		newCost("a fresh store", "", *freshFallback)
		stopFresh()
	}
	stopAll(b, running...)
	stop()
}

// withEnv is a copy of env with key set to value.
func withEnv(env map[string]string, key, value string) map[string]string {
	out := maps.Clone(env)
	out[key] = value
	return out
}

// clientNewCost is how long client.New with fb as its fallback takes to
// return, and how long from its call until the fallback is ready.
func clientNewCost(tb testing.TB, server string, fb embed.Config) (returned, ready time.Duration) {
	tb.Helper()
	cfg := client.DefaultConfig(server)
	cfg.FallbackConfig = fb // the fallback is on by default
	start := time.Now()
	c, err := client.New(context.Background(), cfg)
	returned = time.Since(start)
	if err != nil {
		tb.Fatal("client.New:", err)
	}
	defer c.Close()
	for {
		st := c.FallbackState()
		if st.Ready {
			return returned, time.Since(start)
		}
		if time.Since(start) > startTimeout {
			tb.Fatalf("the fallback is not ready %v after client.New: %v", time.Since(start), st.NotReady)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkStartupCost reports, per provider at the default lease
// settings, the seconds from starting `vesta serve` to its first ID in
// each scenario of startupCost (BENCHMARKS.md):
//
//	go test -run '^$' -bench StartupCost -benchtime 1x ./integration/
func BenchmarkStartupCost(b *testing.B) {
	for _, st := range startupStores {
		b.Run(st.name, func(b *testing.B) {
			sum := map[string]float64{}
			for b.Loop() {
				startupCost(b, st, sum)
			}
			for metric, s := range sum {
				b.ReportMetric(s/float64(b.N), metric)
			}
		})
	}
}
