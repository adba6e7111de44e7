package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// Phases of TestPartition, and of TestEtcdPartition's takeovers (their
// holder A, their taker B).
const (
	partJoined   = iota // every server reaches the store
	partCut             // the holder (s1) cut off from the store
	partHealed          // the holder healed, the taker (s3) holds its ID
	partRejoined        // the taker stopped; the holder may lease its ID again
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
	rds := redistest.StartWith(t, redisOn(hr, 6379))
	rc := redisClientVia(t, rds.Addr(), hr.Dial)

	const ttl = 2 * time.Second
	prefix := t.Name()
	rds.Established(prefix) // the servers start at once: a partition loses no data
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
	phase := func() int { return int(main.phase.Load()) }
	cutOff := func(p int) bool { return p != partJoined }
	st1 := loadHost(t, main, led, hosts[0], s1, phase, cutOff)
	loadHost(t, main, led, hosts[1], servers[1], phase, nil)
	time.Sleep(time.Second)

	leaseKey, _ := redislease.Keys(prefix, core.MachineID(s1.Machine))
	main.setPhase(partCut)
	cut(hosts[0], hr)
	cutAt := time.Now()
	expiry := awaitExpiry(t, rc, leaseKey, 30*time.Second)
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
	loadHost(t, late, led, hosts[2], s3, phase, nil)
	time.Sleep(time.Second)

	main.setPhase(partHealed)
	hosts[0].Heal()
	time.Sleep(2 * ttl) // s1 reaches Redis again, finds its ID taken
	late.stop()
	late.requireNoErrors(t)
	main.setPhase(partRejoined)
	stopAll(t, s3)
	rejoined := time.Now()
	waittest.Until(t, "s1 to issue after s3 released its ID", func() bool { return st1.ids[partRejoined].Load() > 0 })
	t.Logf("s1 issues again %v after s3 stopped", time.Since(rejoined).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	main.stop()
	main.requireNoErrors(t)
	t.Logf("s1's lease_lost (and unavailable) answers while cut off, healed and rejoining: %d, %d, %d",
		st1.fenced(partCut), st1.fenced(partHealed), st1.fenced(partRejoined))
	if st1.fenced(partCut) == 0 {
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

// redisOn places a Redis server (or Sentinel) on host h, on port.
func redisOn(h *netnstest.Host, port int) redistest.Options {
	return redistest.Options{Bind: h.Addr.String(), Port: port, Wrap: h.Wrap(), Dial: h.Dial}
}

// hostPhases bounds the phases loadHost counts.
const hostPhases = 4

// hostLoad is what loadHost got from one server, per phase.
type hostLoad struct {
	ids         [hostPhases]atomic.Int64
	leaseLost   [hostPhases]atomic.Int64 // tolerated lease_lost answers
	unavailable [hostPhases]atomic.Int64 // tolerated unavailable answers
	// gap is the longest time between two answers with IDs, counted in
	// the phase the second call started in: how long issuing stalled.
	gap [hostPhases]atomic.Int64
	// Unix nanoseconds of the last answer with IDs, of the first
	// tolerated error answer and of the first lease_lost one (0: none
	// yet).
	lastIDs, firstFenced, firstLost atomic.Int64
}

// fenced counts the tolerated error answers of phase p.
func (h *hostLoad) fenced(p int) int64 { return h.leaseLost[p].Load() + h.unavailable[p].Load() }

// answered records an answer with IDs at now (Unix nanoseconds) to a call
// of phase p. Two workers answer concurrently, so lastIDs only moves
// forward.
func (h *hostLoad) answered(p int, now int64) {
	for {
		prev := h.lastIDs.Load()
		if prev >= now {
			return
		}
		if h.lastIDs.CompareAndSwap(prev, now) {
			if prev != 0 {
				raise(&h.gap[p], now-prev)
			}
			return
		}
	}
}

// raise sets a to v if v is larger.
func raise(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// loadHost loads s, a server on host h, through ld from two raw
// connections dialled via h (to s's loopback, which no cut touches), each
// calling GenIDs(50) paced at 10,000 IDs/s into ordered streams of led
// named p<phase>/<s.name>/GenIDs(50)-<n>, phase() being the phase a call
// starts in. In a phase where tolerate holds (nil: none), a lease_lost or
// unavailable answer is counted and fails no call; any other error does.
//
// Each call starts at a random point of its pacing slot (5 ms): two
// servers on one machine ID then issue in the same millisecond by chance,
// as unpaced callers would, not never or always by the phase their pacers
// happened to start in.
func loadHost(t testing.TB, ld *load, led *ledger, h *netnstest.Host, s *proc, phase func() int, tolerate func(phase int) bool) *hostLoad {
	t.Helper()
	const batch, rate = 50, 10_000
	slot := time.Duration(batch * float64(time.Second) / rate)
	st := &hostLoad{}
	for w := range 2 {
		conn, err := tryDialRawWith(h.Dial, s.Central)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.close)
		var str [hostPhases]*stream
		for p := range str {
			str[p] = led.stream(fmt.Sprintf("p%d/%s/GenIDs(%d)-%d", p, s.name, batch, w+1), true, core.Central)
		}
		pace := newPacer(rate)
		ld.worker(s.name, func(context.Context, int) (int, error) {
			time.Sleep(rand.N(slot))
			p := phase()
			ids, err := conn.genIDs(batch)
			if err != nil {
				time.Sleep(5 * time.Millisecond)
				if tolerate != nil && tolerate(p) && (isCode(err, api.LeaseLost) || isCode(err, api.Unavailable)) {
					now := time.Now().UnixNano()
					if isCode(err, api.LeaseLost) {
						st.leaseLost[p].Add(1)
						st.firstLost.CompareAndSwap(0, now)
					} else {
						st.unavailable[p].Add(1)
					}
					st.firstFenced.CompareAndSwap(0, now)
					return 0, nil
				}
				return 0, err
			}
			str[p].add(ids...)
			st.ids[p].Add(int64(len(ids)))
			st.answered(p, time.Now().UnixNano())
			pace.took(len(ids))
			return len(ids), nil
		})
	}
	return st
}
