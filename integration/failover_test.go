package integration_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// Phases of TestFailover.
const (
	phaseAllUp = iota
	phaseOneKilled
	phaseAllKilled
	phaseRestarted
	phases
)

// TestFailover kills one central server with SIGKILL under load, then the
// other two (the clients fall back to their embedded generators), then
// restarts all three on their old addresses (the clients return to them).
//
// The servers lease from a range of exactly three machine IDs, so the
// restarted ones re-lease the IDs the killed ones held, once the old
// leases have expired, and must continue above each ID's mark in Redis.
//
// What a call may do: with the fallback on, nothing may fail; each call
// has a 5s deadline only to bound a hang. Latencies are logged per phase.
func TestFailover(t *testing.T) {
	rds := redistest.Start(t)
	const prefix, ttl = "failover", 2 * time.Second
	rds.Established(prefix) // the servers start at once; the subject is the failover
	env := func() map[string]string {
		return serverEnv(t, rds, prefix, ttl, "VESTA_MACHINE_SERVER_RANGE", "924-926")
	}
	servers := []*proc{launch(t, "central-1", env()), launch(t, "central-2", env()), launch(t, "central-3", env())}
	addrs := waitAll(t, servers...)

	// Client 1 calls the servers for every ID, so its callers' streams are
	// ordered; client 2 prefetches.
	var clients []*client.Client
	for i := range 2 {
		// The fallback leases under the servers' prefix with their lease
		// TTL: one fleet, one configuration (the fleet record refuses
		// another). It is claimed at New and ready once its quarantine on
		// this fresh Redis is over, well before the first outage.
		cfg := clientConfig(t, addrs, time.Second, rds, prefix, ttl)
		if i == 1 {
			cfg.Prefetch = 2000
		}
		clients = append(clients, clienttest.Open(t, cfg))
	}
	led := newLedger(core.MaxPeak)
	ld := newLoad(5 * time.Second)
	var centralAgain [2]atomic.Bool // a client got a central ID in phaseRestarted
	// Paced: the fallback issues as fast as the test can take IDs, and
	// volume is not what this test is about.
	for i, c := range clients {
		ordered := i == 0
		for w := range 3 {
			name := fmt.Sprintf("client-%d/NextID-%d", i+1, w+1)
			var str [phases]*stream
			for p := range phases {
				str[p] = led.stream(fmt.Sprintf("p%d/%s", p, name), ordered, core.Central, core.Embedded)
			}
			pace := newPacer(20_000)
			ld.worker(name, func(ctx context.Context, p int) (int, error) {
				id, err := c.NextID(ctx)
				if err != nil {
					return 0, err
				}
				pace.took(1)
				str[p].add(id)
				if p == phaseRestarted && decode(id).method == uint64(core.Central) {
					centralAgain[i].Store(true)
				}
				return 1, nil
			})
		}
		name := fmt.Sprintf("client-%d/NextIDs(500)", i+1)
		var str [phases]*stream
		for p := range phases {
			str[p] = led.stream(fmt.Sprintf("p%d/%s", p, name), ordered, core.Central, core.Embedded)
		}
		pace := newPacer(100_000)
		ld.worker(name, func(ctx context.Context, p int) (int, error) {
			ids, err := c.NextIDs(ctx, 500)
			if err != nil {
				return 0, err
			}
			pace.took(len(ids))
			str[p].add(ids...)
			return len(ids), increasing(ids)
		})
	}

	time.Sleep(1500 * time.Millisecond)
	ld.setPhase(phaseOneKilled)
	servers[0].kill()
	t.Logf("killed %s (machine %d)", servers[0].name, servers[0].Machine)
	time.Sleep(1500 * time.Millisecond)

	ld.setPhase(phaseAllKilled)
	servers[1].kill()
	servers[2].kill()
	t.Logf("killed %s and %s: every server is down", servers[1].name, servers[2].name)
	// Until every lease has expired, so that the restarted servers take
	// the same three machine IDs again.
	time.Sleep(ttl + 500*time.Millisecond)
	rc := redisClient(t, rds)
	marks := map[int]time.Time{}
	for _, s := range servers {
		_, markKey := redislease.Keys(prefix, core.MachineID(s.Machine))
		ms, err := rc.Get(context.Background(), markKey).Int64()
		if err != nil {
			t.Fatalf("the mark of machine %d: %v", s.Machine, err)
		}
		marks[s.Machine] = time.UnixMilli(ms)
	}

	ld.setPhase(phaseRestarted)
	restarted := make([]*proc, len(servers))
	for i, s := range servers {
		restarted[i] = s.again(t, s.name+"-again")
	}
	for _, s := range restarted {
		if _, ok := marks[s.Machine]; !ok {
			t.Errorf("%s leased machine %d; want one of the three killed servers' %v", s.name, s.Machine, marks)
		}
	}
	// The clients return to the central method at a breaker's next trial.
	waittest.Until(t, "both clients back on the restarted servers", func() bool { return centralAgain[0].Load() && centralAgain[1].Load() })
	time.Sleep(1500 * time.Millisecond)
	ld.stop()
	ld.report(t, "all up", "one killed", "all killed", "restarted")
	ld.requireNoErrors(t)
	for i, c := range clients {
		if c.InFallback() {
			t.Errorf("client %d still in the fallback after the servers came back", i+1)
		}
		if err := c.Close(); err != nil {
			t.Errorf("client %d Close: %v", i+1, err)
		}
	}
	stopAll(t, restarted...)

	for p, name := range []string{"all up", "one killed", "all killed", "restarted"} {
		t.Logf("phase %d (%s): IDs by method %v", p, name, led.byMethod("p"+strconv.Itoa(p)+"/"))
	}
	if n := led.byMethod(fmt.Sprintf("p%d/", phaseAllKilled))[core.Embedded]; n == 0 {
		t.Error("no fallback ID while every server was down")
	}
	if n := led.byMethod(fmt.Sprintf("p%d/", phaseRestarted))[core.Central]; n == 0 {
		t.Error("no central ID after the restart")
	}
	led.check(t)

	// Each restarted machine ID continued above everything its killed
	// holder issued, and above its mark in Redis. Client 1's calls of
	// phaseRestarted began after the restart, those of the first two
	// phases ended before the servers died; its fallback IDs carry
	// embedded machine IDs, outside these ranges.
	_, before := led.keyRange("p0/client-1/")
	_, before1 := led.keyRange("p1/client-1/")
	after, _ := led.keyRange("p3/client-1/")
	for m, k := range before1 {
		before[m] = max(before[m], k)
	}
	for m, mark := range marks {
		lo, ok := after[uint64(m)]
		if !ok {
			continue
		}
		f := fields{typ: uint64(core.MaxPeak), time: lo >> 20, seq: lo & (1<<20 - 1)}
		if hi, ok := before[uint64(m)]; ok && lo <= hi {
			t.Errorf("machine %d: after the restart from (time %d, seq %d); before it up to (time %d, seq %d)",
				m, lo>>20, lo&(1<<20-1), hi>>20, hi&(1<<20-1))
		}
		if f.instant().Before(mark) {
			t.Errorf("machine %d: after the restart from %s, below its mark %s", m, f.instant(), mark)
		}
		t.Logf("machine %d: mark %s; first ID after the restart at %s", m, mark.UTC().Format(time.RFC3339Nano), f.instant().Format(time.RFC3339))
	}
}
