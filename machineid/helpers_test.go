package machineid_test

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// testSkew is the clock-skew bound of the tests: every clock is the host's.
const testSkew = 20 * time.Millisecond

// testReach is the shortest bound of the tests' Redis leases in place of
// MaxRedisReach (see SetMaxRedisReach): above the lease TTL + skew +
// max_borrow of the tests' short leases, and short enough that a quarantine
// on the real clock costs a few seconds, not 20.
const testReach = 4100 * time.Millisecond

// redisConfig leases from srv with the given TTL (0: the default), with
// the redis provider only, under a bound (see SetMaxRedisReach) that fits
// this TTL, the test skew and a 1s max_borrow, and at least testReach, for
// the rest of the test.
func redisConfig(t testing.TB, srv *redistest.Server, ttl time.Duration) machineid.Config {
	machineid.SetMaxRedisReach(t, max(testReach, cmp.Or(ttl, machineid.DefaultConfig().Redis.LeaseTTL)+testSkew+time.Second))
	c := machineid.DefaultConfig()
	c.Providers = []string{machineid.ProviderRedis}
	c.Redis.Addrs = []string{srv.Addr()}
	c.Redis.LeaseTTL = ttl
	c.Redis.MaxClockSkew = testSkew
	return c
}

// startRedis starts a real Redis and a config leasing from it with the
// given TTL (redisConfig).
func startRedis(t testing.TB, ttl time.Duration) (*redistest.Server, machineid.Config) {
	srv := redistest.Start(t)
	return srv, redisConfig(t, srv, ttl)
}

// startSentinels starts a master, its replica and three Sentinels, and a
// config leasing oneID from the master they name with the given TTL,
// under the tests' shorter bound (redisConfig).
func startSentinels(t testing.TB, ttl time.Duration) (*redistest.Replicated, machineid.Config) {
	g := redistest.StartReplicated(t)
	machineid.SetMaxRedisReach(t, max(testReach, ttl+testSkew+time.Second))
	c := machineid.DefaultConfig()
	c.Providers = []string{machineid.ProviderRedis}
	c.Redis.Addrs = g.SentinelAddrs()
	c.Redis.MasterName = g.MasterName
	c.Redis.LeaseTTL = ttl
	c.Redis.MaxClockSkew = testSkew
	c.ServerRange = oneID
	return g, c
}

// leaseKeyOf is the key of machine id's lease under the tests' key prefix.
func leaseKeyOf(id core.MachineID) string {
	lease, _ := redislease.Keys("vesta", id)
	return lease
}

// dropFleetRecord deletes the fleet record of the tests' key prefix, as an
// operator changing the fleet's settings would.
func dropFleetRecord(t testing.TB, srv *redistest.Server) {
	t.Helper()
	if err := client(t, srv).Del(context.Background(), redislease.FleetKey("vesta")).Err(); err != nil {
		t.Fatal(err)
	}
}

// storeSince reads when claims first saw srv (the store record's since_ms).
func storeSince(t testing.TB, srv *redistest.Server) time.Time {
	t.Helper()
	v, err := client(t, srv).HGet(context.Background(), redislease.StoreKey("vesta"), "since_ms").Result()
	ms, perr := strconv.ParseInt(v, 10, 64)
	if err != nil || perr != nil {
		t.Fatalf("the store record's since_ms: %q, %v", v, errors.Join(err, perr))
	}
	return time.UnixMilli(ms)
}

// releasedCleanly leases every ID of rng once on the host's clock (waiting
// out the quarantine of a short lease), starts a generator on it and closes
// both, so that the next claim of each finds a clean release record: tests
// on a fake clock then start without a quarantine. Then it deletes the
// fleet record, as an operator changing the fleet's settings would (the
// tests lease with other TTLs).
func releasedCleanly(t testing.TB, srv *redistest.Server, method core.Method, rng core.MachineRange) {
	t.Helper()
	c := redisConfig(t, srv, 2*time.Second) // under load, a shorter lease may expire while it waits
	c.ServerRange, c.EmbeddedRange = machineid.DefaultServerRange, machineid.DefaultEmbeddedRange
	if method == core.Central {
		c.ServerRange = rng
	} else {
		c.EmbeddedRange = rng
	}
	var leases []*machineid.Lease
	for range rng.Count {
		l, err := machineid.Acquire(context.Background(), c, method)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	for _, l := range leases {
		gen, err := l.NewGenerator(context.Background(), core.Config{}, "")
		if err != nil {
			t.Fatal(err)
		}
		release(t, gen, l)
	}
	dropFleetRecord(t, srv)
}

// client is a plain go-redis client of srv, closed at the end of the test.
func client(t testing.TB, srv *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// generator starts a generator on the lease's ID and time guard, after its
// quarantine, and attaches it; both are closed at the end of the test,
// generator first.
func generator(t testing.TB, l *machineid.Lease, cfg core.Config) *core.Generator {
	t.Helper()
	g, err := l.TimeGuard("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Machine, cfg.Guard = l.ID(), g
	if err := l.Prepare(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	gen, err := core.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	t.Cleanup(func() { gen.Close() }) // runs before the lease's Close
	if err := l.Attach(gen); err != nil {
		t.Fatal(err)
	}
	return gen
}

// eventually polls cond until it holds (waittest.Until: it waits for
// things that must happen, never to judge speed).
var eventually = waittest.Until

// release closes gen, then its lease l, failing the test on an error: the
// generator first, so that the release records its exact end.
func release(t testing.TB, gen *core.Generator, l *machineid.Lease) {
	t.Helper()
	if err := gen.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// nextIDs takes n IDs from gen for the central method, failing the test
// on an error.
func nextIDs(t testing.TB, gen *core.Generator, n int) []core.ID {
	t.Helper()
	ids, err := gen.NextIDs(context.Background(), core.Central, n)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
