package integration_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/netnstest"
	"github.com/vesta-go/vesta/internal/redistest"
	"github.com/vesta-go/vesta/machineid"
)

// Phases of TestPartition.
const (
	partJoined   = iota // every server reaches Redis
	partCut             // s1 cut off from Redis
	partHealed          // s1 healed, s3 holds its ID
	partRejoined        // s3 stopped; s1 may lease its ID again
)

// TestPartition cuts a server off from Redis for real: Redis and three
// servers each run on a test host of their own (a network namespace),
// the test dialling each server on its host's loopback, which no cut
// touches. s1 and s2 lease the two IDs of the range and issue under load;
// then s1 alone loses Redis, silently (iptables DROP between s1 and Redis:
// its requests vanish) or loudly (s1's link down: its sends fail at once),
// while s2 keeps reaching it.
//
// s1 must fence before its lease expires in Redis (every ID it answered
// was issued before the expiry read from Redis: the IDs are
// min-granularity ones, whose millisecond time field is never behind the
// issuing clock). Once the lease expired, s3 starts and takes s1's ID. s1
// is healed: it may not issue while s3 holds its ID; when s3 stops (a
// clean release), s1 leases its ID again and continues above everything
// s3 issued. The ledger holds every ID: no duplicate.
func TestPartition(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(s1, rds *netnstest.Host)
	}{
		{"silent", func(s1, rds *netnstest.Host) { s1.Drop(rds) }},
		{"loud", func(s1, _ *netnstest.Host) { s1.LinkDown() }},
	} {
		t.Run(tc.name, func(t *testing.T) { partition(t, tc.cut) })
	}
}

func partition(t *testing.T, cut func(s1, rds *netnstest.Host)) {
	n := netnstest.New(t)
	hr := n.Host("redis")
	hosts := []*netnstest.Host{n.Host("s1"), n.Host("s2"), n.Host("s3")}
	rds := redistest.StartWith(t, redistest.Options{Bind: hr.Addr.String(), Port: 6379, Wrap: hr.Wrap(), Dial: hr.Dial})
	rc := redis.NewClient(&redis.Options{Addr: rds.Addr(), Dialer: hr.Dial, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { rc.Close() })

	const ttl = 2 * time.Second
	prefix := t.Name()
	env := serverEnv(t, rds, prefix, ttl, "VESTA_ID_TYPE", "min-granularity",
		"VESTA_MACHINE_SERVER_RANGE", "1022-1023", "VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW", takeoverSkew.String())
	servers := make([]*proc, 3)
	for i := range 2 {
		servers[i] = launchWrapped(t, fmt.Sprintf("s%d", i+1), env, hosts[i].Wrap())
	}
	waitAll(t, servers[:2]...)
	s1 := servers[0]

	led := newLedger(core.MinGranularity)
	main, late := newLoad(20*time.Second), newLoad(20*time.Second)
	var s1Lost, s1IDs [4]atomic.Int64 // lease_lost answers and IDs of s1 per phase
	loadOn := func(ld *load, i int, s *proc, phase func() int) {
		for w := range 2 {
			conn, err := tryDialRawWith(hosts[i].Dial, s.Central)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(conn.close)
			var str [4]*stream
			for p := range str {
				str[p] = led.stream(fmt.Sprintf("p%d/%s/GenIDs(50)-%d", p, s.name, w+1), true, core.Central)
			}
			pace := newPacer(10_000)
			ld.worker(s.name, func(context.Context, int) (int, error) {
				p := phase()
				ids, err := conn.genIDs(50)
				if err != nil {
					time.Sleep(5 * time.Millisecond)
					if s == s1 && p != partJoined && (isCode(err, wire.LeaseLost) || isCode(err, wire.Unavailable)) {
						s1Lost[p].Add(1)
						return 0, nil
					}
					return 0, err
				}
				str[p].add(ids...)
				if s == s1 {
					s1IDs[p].Add(int64(len(ids)))
				}
				pace.took(len(ids))
				return len(ids), nil
			})
		}
	}
	phase := func() int { return int(main.phase.Load()) }
	loadOn(main, 0, s1, phase)
	loadOn(main, 1, servers[1], phase)
	time.Sleep(time.Second)

	leaseKey, _ := machineid.Keys(prefix, core.MachineID(s1.Machine))
	ctx := context.Background()
	main.setPhase(partCut)
	cut(hosts[0], hr)
	cutAt := time.Now()
	// s1's lease as Redis has it, until it expires there.
	var expiry time.Time
	for deadline := time.Now().Add(30 * time.Second); ; {
		ms, err := rc.PExpireTime(ctx, leaseKey).Result()
		if err != nil {
			t.Fatalf("PEXPIRETIME %s: %v", leaseKey, err)
		}
		if ms < 0 {
			break // gone
		}
		expiry = time.Unix(0, int64(ms)) // go-redis scales PEXPIRETIME to a Duration since the Unix epoch
		if time.Now().After(deadline) {
			t.Fatalf("s1's lease still in Redis 30s after the cut")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("s1 (machine %d) cut off; its lease expired in Redis %v later, at %s", s1.Machine,
		expiry.Sub(cutAt).Round(time.Millisecond), expiry.UTC().Format(time.RFC3339Nano))

	s3 := launchWrapped(t, "s3", env, hosts[2].Wrap())
	if err := s3.waitServing(); err != nil {
		t.Fatal(err)
	}
	servers[2] = s3
	if s3.Machine != s1.Machine {
		t.Fatalf("s3 leased machine %d; want s1's %d, the only free one", s3.Machine, s1.Machine)
	}
	loadOn(late, 2, s3, phase)
	time.Sleep(time.Second)

	main.setPhase(partHealed)
	hosts[0].Heal()
	time.Sleep(2 * ttl) // s1 reaches Redis again, finds its ID taken
	late.stop()
	late.requireNoErrors(t)
	main.setPhase(partRejoined)
	stopAll(t, s3)
	rejoined := time.Now()
	for {
		if s1IDs[partRejoined].Load() > 0 {
			break
		}
		if time.Since(rejoined) > 30*time.Second {
			t.Fatalf("s1 does not issue 30s after s3 released its ID")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("s1 issues again %v after s3 stopped", time.Since(rejoined).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	main.stop()
	main.requireNoErrors(t)
	t.Logf("s1's lease_lost answers while cut off, healed and rejoining: %d, %d, %d",
		s1Lost[partCut].Load(), s1Lost[partHealed].Load(), s1Lost[partRejoined].Load())
	if s1Lost[partCut].Load() == 0 {
		t.Errorf("s1 never answered lease_lost while cut off")
	}
	if n := led.byMethod(fmt.Sprintf("p%d/s1/", partHealed))[core.Central]; n > 0 {
		t.Errorf("s1 issued %d IDs while s3 held its machine ID", n)
	}
	led.check(t)

	// Fenced in time: s1's last ID while cut off was issued before its
	// lease expired in Redis.
	m := uint64(s1.Machine)
	_, hiCut := led.keyRange(fmt.Sprintf("p%d/s1/", partCut))
	_, hiBefore := led.keyRange(fmt.Sprintf("p%d/s1/", partJoined))
	last := max(hiCut[m], hiBefore[m])
	lastEnd := fields{typ: 1, time: last >> 10}.instant().Add(time.Millisecond)
	if lastEnd.After(expiry) {
		t.Errorf("s1 issued an ID in the millisecond ending %s, after its lease expired in Redis at %s",
			lastEnd.Format(time.RFC3339Nano), expiry.UTC().Format(time.RFC3339Nano))
	} else {
		t.Logf("s1 fenced: its last ID issued by %s, %v before its lease expired in Redis", lastEnd.Format(time.RFC3339Nano), expiry.Sub(lastEnd).Round(time.Millisecond))
	}
	// The machine ID's three holders in turn, each above the one before.
	loS3, hiS3 := led.keyRange("p" + strconv.Itoa(partCut) + "/s3/")
	lo3b, hi3b := led.keyRange("p" + strconv.Itoa(partHealed) + "/s3/")
	loAfter, _ := led.keyRange(fmt.Sprintf("p%d/s1/", partRejoined))
	firstS3, ok := loS3[m]
	if v, ok2 := lo3b[m]; ok2 && (!ok || v < firstS3) {
		firstS3, ok = v, true
	}
	lastS3 := max(hiS3[m], hi3b[m])
	switch {
	case !ok:
		t.Errorf("s3 issued no ID")
	case firstS3 <= last:
		t.Errorf("s3's first ID (key %d) not above s1's last (key %d)", firstS3, last)
	case loAfter[m] <= lastS3:
		t.Errorf("s1's first ID after rejoining (key %d) not above s3's last (key %d)", loAfter[m], lastS3)
	}
	stopAll(t, s1, servers[1])
}
