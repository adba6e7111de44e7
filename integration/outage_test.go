package integration_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// Phases of TestRedisOutage.
const (
	redisUp = iota
	redisDown
	redisBack
)

// outcomes counts a server's answers by error code ("ok" for IDs) and keeps
// when the first lease_lost came.
type outcomes struct {
	mu        sync.Mutex
	codes     map[string]int
	firstLost time.Time
}

func (o *outcomes) add(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	code := "ok"
	var re *restError
	var we *api.Error
	switch {
	case err == nil:
	case errors.As(err, &we):
		code = string(we.Code)
	case errors.As(err, &re):
		code = fmt.Sprintf("HTTP %d %s", re.status, re.code)
	default:
		code = "other: " + err.Error()
	}
	if o.codes == nil {
		o.codes = map[string]int{}
	}
	o.codes[code]++
	if isCode(err, api.LeaseLost) && o.firstLost.IsZero() {
		o.firstLost = time.Now()
	}
}

func (o *outcomes) count(code string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.codes[code]
}

// TestRedisOutage kills Redis while two leased servers (one also serving
// REST) issue IDs under load, keeps it down, then starts it again, empty,
// as a Redis without persistence comes back.
//
// While Redis is down the servers must fence themselves before their
// leases could have expired in Redis: the test reads each lease's expiry
// (PEXPIRETIME) up to the instant it kills Redis, and every ID answered
// before Redis came back must have been issued before that expiry. The IDs
// are min-granularity ones, whose time field is in milliseconds and never
// behind the issuing clock, so an ID's instant plus one millisecond bounds
// when it was issued. Over RPC the servers answer lease_lost, over REST
// 503 lease_lost, and /readyz turns 503. Once Redis is back they lease
// again, set the marks Redis forgot from their own state, and issue again,
// above everything they issued before.
func TestRedisOutage(t *testing.T) {
	rds := redistest.Start(t)
	rc := redisClient(t, rds)
	// With a 5s lease the servers renew every 1.67s and fence themselves
	// 2.5s after the last renewal that succeeded (a safety margin of half
	// the TTL), so Redis down for 4s fences them for 1.5s at least.
	const prefix, ttl, down = "outage", 5 * time.Second, 4 * time.Second
	rds.Established(prefix) // start at once: the outage here loses no data
	env := func(kv ...string) map[string]string {
		return serverEnv(t, rds, prefix, ttl, append([]string{"VESTA_ID_TYPE", "min-granularity"}, kv...)...)
	}
	servers := []*proc{launch(t, "central-1+rest", env("VESTA_REST_LISTEN", "127.0.0.1:0")), launch(t, "central-2", env())}
	waitAll(t, servers...)
	rest := newREST(t, servers[0].restEndpoint())

	// Each lease's expiry, as Redis has it, until Redis dies.
	var expiryMu sync.Mutex
	expiry := map[int]time.Time{}
	readExpiry := func(ctx context.Context) {
		for _, s := range servers {
			key, _ := redislease.Keys(prefix, core.MachineID(s.Machine))
			ms, err := rc.Do(ctx, "PEXPIRETIME", key).Int64()
			if err == nil && ms > 0 {
				expiryMu.Lock()
				expiry[s.Machine] = time.UnixMilli(ms)
				expiryMu.Unlock()
			}
		}
	}
	pollCtx, stopPoll := context.WithCancel(context.Background())
	var polling sync.WaitGroup
	polling.Go(func() {
		for pollCtx.Err() == nil {
			readExpiry(pollCtx)
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Cleanup(func() { stopPoll(); polling.Wait() })

	led := newLedger(core.MinGranularity)
	ld := newLoad(10 * time.Second)
	got := make([]outcomes, len(servers)+1) // the last is REST's
	for i, s := range servers {
		for w := range 2 {
			conn := dialRaw(t, s.Central)
			var str [3]*stream
			for p := range str {
				str[p] = led.stream(fmt.Sprintf("p%d/%s/GenIDs(100)-%d", p, s.name, w+1), true, core.Central)
			}
			ld.worker(s.name, func(_ context.Context, p int) (int, error) {
				ids, err := conn.genIDs(100)
				got[i].add(err)
				if err != nil {
					time.Sleep(5 * time.Millisecond)
					return 0, expected(p, err)
				}
				// The phase the answer arrived in: IDs that came while
				// Redis was down were issued before it came back.
				str[ld.phase.Load()].add(ids...)
				return len(ids), nil
			})
		}
	}
	var restStr [3]*stream
	for p := range restStr {
		restStr[p] = led.stream(fmt.Sprintf("p%d/rest/v1/ids?count=100", p), true, core.REST)
	}
	ld.worker("rest", func(ctx context.Context, p int) (int, error) {
		ids, err := rest.ids(ctx, 100)
		got[len(servers)].add(err)
		if err != nil {
			time.Sleep(5 * time.Millisecond)
			return 0, expected(p, err)
		}
		restStr[ld.phase.Load()].add(ids...)
		return len(ids), nil
	})
	var notReady atomic.Int64 // /readyz answers other than 200 while Redis is down
	var readyErr atomic.Value
	ld.worker("readyz", func(ctx context.Context, p int) (int, error) {
		time.Sleep(50 * time.Millisecond)
		err := rest.ready(ctx)
		switch {
		case p == redisDown && err != nil:
			notReady.Add(1)
			readyErr.Store(err.Error())
		case p == redisUp && err != nil:
			return 0, fmt.Errorf("/readyz before the outage: %w", err)
		}
		return 0, nil
	})

	time.Sleep(1500 * time.Millisecond)
	stopPoll()
	polling.Wait()
	readExpiry(context.Background())
	ld.setPhase(redisDown)
	rds.Kill()
	killed := time.Now()
	t.Logf("killed Redis; the leases expire at %v", expiry)
	time.Sleep(down)

	ld.setPhase(redisBack)
	rds.Restart()
	back := time.Now()
	// Each server issues again once it holds a lease again.
	for _, s := range servers {
		conn := dialRaw(t, s.Central)
		waittest.Until(t, s.name+" to issue after Redis came back", func() bool { _, err := conn.genID(); return err == nil })
		t.Logf("%s issues again %v after Redis came back", s.name, time.Since(back).Round(time.Millisecond))
	}
	time.Sleep(time.Second)
	ld.stop()
	ld.requireNoErrors(t)
	if err := rest.ready(context.Background()); err != nil {
		t.Errorf("/readyz after the recovery: %v", err)
	}

	// Fenced in time: everything answered before Redis came back was
	// issued before the lease would have expired.
	lastMs := map[uint64]time.Time{}
	for _, prefix := range []string{"p0/", "p1/"} {
		_, hi := led.keyRange(prefix)
		for m, k := range hi {
			end := fields{typ: 1, time: k >> 10}.instant().Add(time.Millisecond)
			if end.After(lastMs[m]) {
				lastMs[m] = end
			}
		}
	}
	for _, s := range servers {
		exp, ok := expiry[s.Machine]
		if !ok {
			t.Fatalf("no lease expiry read for machine %d", s.Machine)
		}
		last := lastMs[uint64(s.Machine)]
		if last.After(exp) {
			t.Errorf("%s (machine %d) issued an ID in the millisecond ending %s, after its lease expired at %s",
				s.name, s.Machine, last.Format(time.RFC3339Nano), exp.Format(time.RFC3339Nano))
		}
		t.Logf("%s (machine %d): last ID issued by %s, %v before its lease's expiry; Redis killed %v before the expiry",
			s.name, s.Machine, last.Format(time.RFC3339Nano), exp.Sub(last).Round(time.Millisecond), exp.Sub(killed).Round(time.Millisecond))
	}
	for i, s := range append(servers, &proc{name: "rest"}) {
		o := &got[i]
		o.mu.Lock()
		t.Logf("%s: answers %v; first lease_lost %v after Redis died", s.name, o.codes, o.firstLost.Sub(killed).Round(time.Millisecond))
		o.mu.Unlock()
	}
	for i := range servers {
		if got[i].count(string(api.LeaseLost)) == 0 {
			t.Errorf("%s never answered lease_lost while Redis was down", servers[i].name)
		}
	}
	if got[len(servers)].count("HTTP 503 lease_lost") == 0 {
		t.Error("REST never answered 503 lease_lost while Redis was down")
	}
	if notReady.Load() == 0 {
		t.Error("/readyz stayed 200 while Redis was down")
	} else {
		t.Logf("/readyz while Redis was down: %v", readyErr.Load())
	}
	for p, name := range []string{"Redis up", "Redis down", "Redis back"} {
		t.Logf("phase %d (%s): IDs by method %v", p, name, led.byMethod(fmt.Sprintf("p%d/", p)))
	}
	if n := led.byMethod(fmt.Sprintf("p%d/", redisBack)); n[core.Central] == 0 || n[core.REST] == 0 {
		t.Errorf("after Redis came back: IDs by method %v; want central and REST ones", n)
	}
	led.check(t)

	// The marks Redis forgot are back, at least as high as what was
	// issued; the leases too.
	_, hi := led.keyRange("")
	for _, s := range servers {
		lease, mark := redislease.Keys(prefix, core.MachineID(s.Machine))
		ms, err := rc.Get(context.Background(), mark).Int64()
		if err != nil {
			t.Errorf("%s: the mark %s after the recovery: %v", s.name, mark, err)
			continue
		}
		issued := fields{typ: 1, time: hi[uint64(s.Machine)] >> 10}.instant().Add(time.Millisecond)
		if time.UnixMilli(ms).Before(issued) {
			t.Errorf("%s: mark %s below the last ID issued, in the millisecond ending %s", s.name,
				time.UnixMilli(ms).UTC().Format(time.RFC3339Nano), issued.Format(time.RFC3339Nano))
		}
		if n, err := rc.Exists(context.Background(), lease).Result(); err != nil || n != 1 {
			t.Errorf("%s: lease %s after the recovery: %d, %v", s.name, lease, n, err)
		}
	}
	for _, s := range servers {
		out := s.output()
		for _, msg := range []string{`"msg":"machineid: issuing fenced"`, `"msg":"machineid: re-keyed"`} {
			if !strings.Contains(out, msg) {
				t.Errorf("%s did not log %s", s.name, msg)
			}
		}
	}
	stopAll(t, servers...)
}

// expected returns nil for the answers a fenced server may give, once
// Redis went down (phase p), and err otherwise.
func expected(p int, err error) error {
	if p != redisUp && (isCode(err, api.LeaseLost) || isCode(err, api.Unavailable)) {
		return nil
	}
	return err
}
