package integration_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// The Redis faults of the machine-ID safety tests are run with these: a
// short lease, and a small clock-skew bound (every process reads the same
// clock). The takeover quarantine is machineid.MaxRedisReach whatever they
// are.
const (
	takeoverSkew    = 200 * time.Millisecond
	takeoverMachine = 1023 // the one ID of the range both servers share
)

// pause stops the process (SIGSTOP): it holds its connections and state
// but runs nothing, as a stalled host would; resume continues it.
func (p *proc) pause()  { p.signal(syscall.SIGSTOP) }
func (p *proc) resume() { p.signal(syscall.SIGCONT) }

// takeover is one way for Redis to forget a live holder's lease.
type takeover struct {
	ttl time.Duration
	// env is a server's environment: Redis (or Sentinel) and the
	// one-ID range.
	env map[string]string
	// master returns a client of the Redis the servers write to now.
	master func() *redis.Client
	// renewals: how many of A's renewals to await after prepare, before A
	// is stopped and lose runs.
	renewals int
	// prepare runs right after a renewal of A, with A running (nil: none).
	prepare func(t *testing.T)
	// lose makes Redis forget A's lease while A is stopped; when it
	// returns, machine 1023 is free in Redis.
	lose func(t *testing.T)
}

// runTakeover: server A leases machine 1023, the one ID of the range,
// and issues under load; Redis forgets A's lease (tk.lose) while A is
// stopped, so that server B, started then on the same range, wins the
// free ID (A would otherwise claim it again at its next renewal). A
// continues as soon as B has claimed, its lease deadline still ahead: it
// believes it holds 1023, the unknown live holder the quarantine is for.
// Both then issue under load; the ledger must hold no duplicate, every ID
// of B must lie above every ID of A, and A must fence.
func runTakeover(t *testing.T, tk takeover) {
	env := tk.env
	a := serve(t, "central-A", env)
	if a.Machine != takeoverMachine {
		t.Fatalf("A leased machine %d; want %d", a.Machine, takeoverMachine)
	}
	leaseKey, markKey := redislease.Keys(env["VESTA_MACHINE_REDIS_KEY_PREFIX"], takeoverMachine)

	led := newLedger(core.MaxPeak)
	ld := newLoad(20 * time.Second)
	var lost atomic.Int64 // A's lease_lost answers
	var lossBegan atomic.Bool
	loadOn := func(p *proc, tolerate bool) {
		for w := range 2 {
			conn := dialRaw(t, p.Central)
			s := led.stream(fmt.Sprintf("%s/GenIDs(100)-%d", p.name, w+1), true, core.Central)
			pace := newPacer(20_000)
			ld.worker(s.name, func(context.Context, int) (int, error) {
				ids, err := conn.genIDs(100)
				if err != nil {
					if isCode(err, api.LeaseLost) {
						lost.Add(1)
					}
					time.Sleep(5 * time.Millisecond)
					if tolerate && lossBegan.Load() && (isCode(err, api.LeaseLost) || isCode(err, api.Unavailable)) {
						return 0, nil
					}
					return 0, err
				}
				s.add(ids...)
				pace.took(len(ids))
				return len(ids), nil
			})
		}
	}
	loadOn(a, true)
	time.Sleep(time.Second)

	// In step with A's renewals, so that A's deadline is as far ahead as
	// it can be when B claims.
	if tk.prepare != nil {
		awaitRenewal(t, tk.master(), leaseKey)
		tk.prepare(t)
	}
	for range max(tk.renewals, 1) {
		awaitRenewal(t, tk.master(), leaseKey)
	}
	markBefore, _ := tk.master().Get(context.Background(), markKey).Int64()
	lossBegan.Store(true)
	a.pause()
	stopped := time.Now()
	tk.lose(t)
	if n, err := tk.master().Exists(context.Background(), leaseKey).Result(); err != nil || n != 0 {
		t.Fatalf("Redis still holds A's lease after the loss: %d, %v", n, err)
	}
	markAfter, _ := tk.master().Get(context.Background(), markKey).Int64()
	t.Logf("Redis forgot A's lease; A's mark was %s before, is %s now", msTime(markBefore), msTime(markAfter))

	b := launch(t, "central-B", env)
	claimed, err := b.waitRecord(startTimeout, func(r record) bool { return strings.HasPrefix(r.str("msg"), "machineid: leased") })
	a.resume()
	resumed := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("B claimed: %v; A was stopped for %v", claimed, resumed.Sub(stopped).Round(time.Millisecond))
	if err := b.waitServing(); err != nil {
		t.Fatal(err)
	}
	t.Logf("B serves %v after A continued", time.Since(resumed).Round(time.Millisecond))
	if b.Machine != takeoverMachine {
		t.Fatalf("B leased machine %d; want %d, which Redis forgot", b.Machine, takeoverMachine)
	}
	loadOn(b, false)
	time.Sleep(1500 * time.Millisecond)
	ld.stop()
	ld.requireNoErrors(t)
	t.Logf("A answered lease_lost %d times", lost.Load())

	led.check(t)
	_, hiA := led.keyRange("central-A/")
	loB, _ := led.keyRange("central-B/")
	ha, okA := hiA[takeoverMachine]
	lb, okB := loB[takeoverMachine]
	switch {
	case !okA || !okB:
		t.Errorf("IDs of machine %d: A issued some: %v, B issued some: %v; want both", takeoverMachine, okA, okB)
	case lb <= ha:
		t.Errorf("B's first ID (time %d, seq %d) is not above A's last (time %d, seq %d)", lb>>20, lb&(1<<20-1), ha>>20, ha&(1<<20-1))
	default:
		t.Logf("A issued up to %s, B from %s", fields{time: ha >> 20}.instant().Format(time.RFC3339), fields{time: lb >> 20}.instant().Format(time.RFC3339))
	}
	if !strings.Contains(a.output(), `"msg":"machineid: issuing fenced"`) {
		t.Errorf("A never fenced")
	}
	stopAll(t, b)
	// A lost its lease, so its final mark cannot be saved: its exit code
	// says so, which is not what this test is about.
	a.signal(syscall.SIGTERM)
	t.Logf("A exited with %d after SIGTERM", a.waitExit())
}

// awaitRenewal waits until the lease's expiry in Redis moves forward: a
// renewal has just happened.
func awaitRenewal(t *testing.T, rc *redis.Client, key string) {
	t.Helper()
	ctx := context.Background()
	first, err := rc.PExpireTime(ctx, key).Result()
	if err != nil {
		t.Fatalf("PEXPIRETIME %s: %v", key, err)
	}
	waittest.Until(t, "a renewal of the lease "+key, func() bool {
		d, err := rc.PExpireTime(ctx, key).Result()
		if err != nil {
			t.Fatalf("PEXPIRETIME %s: %v", key, err)
		}
		return d > first
	})
}

// awaitExpiry waits until key is gone from rc's Redis and returns its
// expiry as last read there (zero if it was gone at the first read),
// failing the test if it is still there after bound.
func awaitExpiry(t testing.TB, rc *redis.Client, key string, bound time.Duration) time.Time {
	t.Helper()
	var expiry time.Time
	for deadline := time.Now().Add(bound); ; {
		ms, err := rc.PExpireTime(context.Background(), key).Result()
		if err != nil {
			t.Fatalf("PEXPIRETIME %s: %v", key, err)
		}
		if ms < 0 {
			return expiry // gone
		}
		expiry = time.Unix(0, int64(ms)) // go-redis scales PEXPIRETIME to a Duration since the Unix epoch
		if time.Now().After(deadline) {
			t.Fatalf("%s still in Redis %v later, expiring at %s", key, bound, expiry.UTC().Format(time.RFC3339Nano))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func msTime(ms int64) string {
	if ms == 0 {
		return "none"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// takeoverEnv is a server's environment for the takeover scenarios.
func takeoverEnv(t *testing.T, rds *redistest.Server, ttl time.Duration, kv ...string) map[string]string {
	m := fmt.Sprint(takeoverMachine)
	return serverEnv(t, rds, t.Name(), ttl, append([]string{
		"VESTA_MACHINE_SERVER_RANGE", m + "-" + m,
		"VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW", takeoverSkew.String(),
	}, kv...)...)
}

// sentinelEnv is takeoverEnv for servers that find the master through
// g's Sentinels, leasing under the test's name.
func sentinelEnv(t *testing.T, g *redistest.Replicated, ttl time.Duration, kv ...string) map[string]string {
	return takeoverEnv(t, nil, ttl, append([]string{
		"VESTA_MACHINE_PROVIDERS", "redis",
		"VESTA_MACHINE_REDIS_ADDRS", strings.Join(g.SentinelAddrs(), ","),
		"VESTA_MACHINE_REDIS_MASTER_NAME", g.MasterName,
		"VESTA_MACHINE_REDIS_KEY_PREFIX", t.Name(),
		"VESTA_MACHINE_REDIS_LEASE_TTL", ttl.String(),
	}, kv...)...)
}

// TestFlushAllTakeover: FLUSHALL under load, then a second server takes
// the ID (10,186 identical IDs before the lease quarantine).
func TestFlushAllTakeover(t *testing.T) {
	redisLossTakeover(t, (*redistest.Server).FlushAll)
}

// TestRedisKilledEmptyTakeover: Redis killed (-9) under load and
// restarted empty, then a second server takes the ID.
func TestRedisKilledEmptyTakeover(t *testing.T) {
	redisLossTakeover(t, func(rds *redistest.Server) { rds.KillAndRestart(nil) })
}

// redisLossTakeover runs the takeover on one Redis that lose makes lose
// its data under load.
func redisLossTakeover(t *testing.T, lose func(*redistest.Server)) {
	rds := redistest.Start(t)
	rds.Established(t.Name()) // A starts at once; B, after the loss, does not
	rc := redisClient(t, rds)
	const ttl = 4 * time.Second
	runTakeover(t, takeover{
		ttl: ttl, env: takeoverEnv(t, rds, ttl),
		master: func() *redis.Client { return rc },
		lose:   func(*testing.T) { lose(rds) },
	})
}

// TestSentinelFailoverTakeover: a Sentinel failover promotes a replica
// that lacks A's latest renewals and marks (replication paused right after
// one renewal, the master killed two renewals later): A's lease in the
// replica expires while A's own deadline, from renewals the replica never
// got, is still ahead; a second server then takes the ID.
func TestSentinelFailoverTakeover(t *testing.T) {
	g := redistest.StartReplicated(t)
	g.Master.Established(t.Name()) // A starts at once; B, after the failover, does not
	const ttl = 6 * time.Second
	// Clients of each Redis by address; the test talks to the master of the
	// moment, as the servers do through Sentinel.
	clients := map[string]*redis.Client{}
	master := func() *redis.Client {
		addr := g.Master.Addr()
		if !g.Master.Running() {
			addr = g.Replica.Addr()
		}
		if clients[addr] == nil {
			clients[addr] = redisClientVia(t, addr, nil)
		}
		return clients[addr]
	}
	env := sentinelEnv(t, g, ttl)
	leaseKey, _ := redislease.Keys(t.Name(), takeoverMachine)
	runTakeover(t, takeover{
		ttl: ttl, env: env, master: master,
		prepare:  func(t *testing.T) { g.PauseReplication() },
		renewals: 2,
		lose: func(t *testing.T) {
			t.Logf("failover took %v", g.Failover())
			// The replica's copy of the lease lives until the last
			// renewal it got plus the TTL.
			for deadline := time.Now().Add(2 * ttl); ; {
				n, err := master().Exists(context.Background(), leaseKey).Result()
				if err == nil && n == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the promoted replica still holds A's lease after %v: %d, %v", 2*ttl, n, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		},
	})
}
