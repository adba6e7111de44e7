package machineid_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/etcdtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/etcdlease"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// historyStore is one lease store the hold-history tests run on: a config
// of it, a way to take a machine ID's lease away (as a store losing it or
// an operator deleting it would), and a way to plant a raw entry in a
// machine ID's history.
type historyStore struct {
	name string
	addr func(c machineid.Config) string
	open func(t *testing.T) (cfg func(ttl time.Duration) machineid.Config, steal func(t *testing.T, id core.MachineID), plant func(t *testing.T, id core.MachineID, name, v string))
}

var historyStores = []historyStore{
	{machineid.StoreRedis, func(c machineid.Config) string { return c.Redis.Addrs[0] }, func(t *testing.T) (func(time.Duration) machineid.Config, func(*testing.T, core.MachineID), func(*testing.T, core.MachineID, string, string)) {
		srv := redistest.Start(t)
		rdb := client(t, srv)
		ctx := context.Background()
		return func(ttl time.Duration) machineid.Config { return redisConfig(t, srv, ttl) },
			func(t *testing.T, id core.MachineID) {
				if err := rdb.Del(ctx, leaseKeyOf(id)).Err(); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T, id core.MachineID, name, v string) {
				if err := rdb.HSet(ctx, redislease.HoldsKey("vesta", id), name, v).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rdb.ZAdd(ctx, redislease.HoldsOrderKey("vesta", id), redisZ(name)).Err(); err != nil {
					t.Fatal(err)
				}
			}
	}},
	{machineid.StoreEtcd, func(c machineid.Config) string { return c.Etcd.Endpoints[0] }, func(t *testing.T) (func(time.Duration) machineid.Config, func(*testing.T, core.MachineID), func(*testing.T, core.MachineID, string, string)) {
		ec := etcdtest.Start(t)
		cli := ec.Client(t)
		ctx := context.Background()
		return func(ttl time.Duration) machineid.Config { return etcdConfig(ec, max(ttl, 2*time.Second)) },
			func(t *testing.T, id core.MachineID) {
				lease, _, _ := etcdlease.Keys("vesta", id)
				if _, err := cli.Delete(ctx, lease); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T, id core.MachineID, name, v string) {
				if _, err := cli.Put(ctx, etcdlease.HoldsPrefix("vesta", id)+name, v); err != nil {
					t.Fatal(err)
				}
			}
	}},
}

// draw issues n IDs of gen, retrying while it is fenced, and returns
// their instants.
func draw(t *testing.T, gen *core.Generator, n int) []time.Time {
	t.Helper()
	var ids []core.ID
	eventually(t, "IDs from the generator", func() bool {
		var err error
		ids, err = gen.NextIDs(context.Background(), core.Central, n)
		return err == nil
	})
	out := make([]time.Time, len(ids))
	for i, id := range ids {
		out[i] = gen.Codec().Explain(id).Instant
	}
	return out
}

func historyOf(t *testing.T, l *machineid.Lease, id core.MachineID) machineid.History {
	t.Helper()
	h, err := l.History(context.Background(), id)
	if err != nil {
		t.Fatalf("History of machine %d: %v", id, err)
	}
	return h
}

// TestHoldHistoryAcrossReleaseKillAndFence: one machine ID held four
// times in a row, by a holder that releases cleanly, one killed (its clock
// stands still, so it never renews and its lease expires), one whose lease
// is taken away (it fences and claims the ID again), and that new hold.
// The history lists the four holds with their ends, and each hold's IDs
// name that hold and no other.
func TestHoldHistoryAcrossReleaseKillAndFence(t *testing.T) {
	for _, st := range historyStores {
		t.Run(st.name, func(t *testing.T) {
			cfg, steal, _ := st.open(t)
			const id = core.MachineID(1000)
			ttl := 1500 * time.Millisecond

			released := leaseAt(t, cfg(ttl), id)
			genA := generator(t, released, core.Config{MaxStartupWait: 10 * time.Second})
			idsA := draw(t, genA, 50)
			release(t, genA, released)

			// Killed: its connections to the store are cut for good, so it
			// renews nothing, claims nothing and writes no end.
			px := startProxy(t, st.addr(cfg(ttl)))
			dead := cfg(ttl)
			dead.Redis.Addrs, dead.Etcd.Endpoints = []string{px.addr}, []string{px.addr}
			killed := leaseAt(t, dead, id)
			idsB := draw(t, generator(t, killed, core.Config{MaxStartupWait: 10 * time.Second}), 50)
			px.cut()
			var fenced *machineid.Lease
			c := cfg(ttl)
			c.ServerRange = core.MachineRange{First: id, Count: 1}
			eventually(t, "the killed holder's lease to expire", func() bool {
				l, err := machineid.Acquire(context.Background(), c, core.Central)
				if err != nil {
					if errors.Is(err, machineid.ErrConfig) {
						t.Fatal(err)
					}
					return false
				}
				fenced = l
				t.Cleanup(func() { l.Close(context.Background()) })
				return true
			})
			genC := generator(t, fenced, core.Config{MaxStartupWait: 20 * time.Second})
			idsC := draw(t, genC, 50)
			steal(t, id)
			eventually(t, "the fence", func() bool { return fenced.Status().Fences > 0 })
			eventually(t, "the ID claimed again", func() bool {
				return genC.Ready() == nil && fenced.Status().State == machineid.StateHeld
			})
			idsD := draw(t, genC, 50)
			h := waitHolds(t, fenced, id, 4)

			want := []struct{ end, known string }{
				{machineid.EndReleased, machineid.KnownWritten},
				{machineid.EndExpired, machineid.KnownLaterHold},
				{machineid.EndFenced, machineid.KnownWritten},
				{machineid.EndHeld, ""},
			}
			for i, e := range h.Holds {
				if e.End != want[i].end || e.EndKnown != want[i].known || e.Machine != id || e.PID == 0 || e.Host == "" || e.Version == "" || !e.HasShape && i != 1 {
					t.Errorf("hold %d: %+v; want ended %q (%s), naming its process", i, e, want[i].end, want[i].known)
				}
			}
			if !h.Holds[3].Self || h.Holds[0].Self {
				t.Errorf("Self: %v %v %v %v; want the last hold alone", h.Holds[0].Self, h.Holds[1].Self, h.Holds[2].Self, h.Holds[3].Self)
			}
			if !strings.Contains(h.Holds[2].Note, "lease") {
				t.Errorf("the fenced hold's note %q does not say why", h.Holds[2].Note)
			}
			now := time.Now()
			for i, ids := range [][]time.Time{idsA, idsB, idsC, idsD} {
				for _, at := range []time.Time{ids[0], ids[len(ids)-1]} {
					m := h.At(at, now)
					if len(m.Holds) != 1 || m.Conflict || m.Holds[0].Hold != h.Holds[i].Hold {
						t.Fatalf("an ID of hold %d at %s: %+v; want hold %d (%s) alone\nholds: %s", i, at.Format(time.RFC3339Nano), m, i, h.Holds[i].Hold, holdsText(h))
					}
				}
			}
			if m := h.At(h.Holds[0].From.Add(-time.Hour), now); len(m.Holds) != 0 || m.Reason == "" {
				t.Errorf("an hour before the history: %+v; want no hold and a reason", m)
			}
		})
	}
}

// TestHoldHistoryConflict: an entry planted in the store whose span
// overlaps a real hold's makes an ID of that hold a conflict, naming both.
func TestHoldHistoryConflict(t *testing.T) {
	for _, st := range historyStores {
		t.Run(st.name, func(t *testing.T) {
			cfg, _, plant := st.open(t)
			const id = core.MachineID(1000)
			l := leaseAt(t, cfg(10*time.Second), id)
			ids := draw(t, generator(t, l, core.Config{}), 10)
			h := historyOf(t, l, id)
			if m := h.At(ids[0], time.Now()); len(m.Holds) != 1 || m.Conflict {
				t.Fatalf("before the plant: %+v", m)
			}
			other := map[string]any{"v": 1, "machine": int(id), "hold": "00000000000000000001", "lease": "planted", "run": "planted",
				"provider": st.name, "range": "server", "host": "elsewhere", "pid": 7, "version": "v0",
				"ttl_ms": 10000, "started_ms": ids[0].Add(-time.Minute).UnixMilli(), "from_ms": ids[0].Add(-time.Minute).UnixMilli(),
				"renewed_ms": ids[0].Add(time.Minute).UnixMilli(), "mark_ms": ids[0].Add(time.Minute).UnixMilli(), "end": "released",
				"ended_ms": ids[0].Add(time.Minute).UnixMilli()}
			b, _ := json.Marshal(other)
			plant(t, id, "00000000000000000001", string(b))
			h = historyOf(t, l, id)
			m := h.At(ids[0], time.Now())
			if !m.Conflict || len(m.Holds) != 2 || !strings.Contains(m.Reason, "2 holds") {
				t.Fatalf("after the plant: %+v; want a conflict of two holds\nholds: %s", m, holdsText(h))
			}
		})
	}
}

func holdsText(h machineid.History) string {
	var b strings.Builder
	for i, e := range h.Holds {
		fmt.Fprintf(&b, "\n %d %s from %s mark %s renewed %s ended %s %s (%s)", i, e.Hold, e.From.Format(time.RFC3339Nano),
			e.Mark.Format(time.RFC3339Nano), e.Renewed.Format(time.RFC3339Nano), e.Ended.Format(time.RFC3339Nano), e.End, e.EndKnown)
	}
	return b.String()
}

// redisZ scores a planted name as written now.
func redisZ(name string) redis.Z {
	return redis.Z{Score: float64(time.Now().UnixMilli()), Member: name}
}

// proxy forwards TCP connections to a store until cut.
type proxy struct {
	addr  string
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, to string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), ln: ln}
	t.Cleanup(p.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimPrefix(to, "http://"), "https://"))
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

// cut closes the listener and every connection: the store is gone for
// whoever used the proxy.
func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestHoldHistoryUnderSentinel: under Sentinel the history lives beside
// the lease on the master the majority names and moves with it: a hold
// released, one lost to a failover (fenced, its end written on the new
// master by the same process once it holds the ID again) and the hold
// after it, each hold's IDs naming it alone.
func TestHoldHistoryUnderSentinel(t *testing.T) {
	g, c := startSentinels(t, 2*time.Second)
	released := mustAcquire(t, c, core.Central)
	id := released.ID()
	genA := generator(t, released, core.Config{MaxStartupWait: 10 * time.Second})
	idsA := draw(t, genA, 50)
	release(t, genA, released)
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{MaxStartupWait: 20 * time.Second})
	idsB := draw(t, gen, 50)
	fences := l.Status().Fences
	g.Failover()
	eventually(t, "the hold lost", func() bool { return l.Status().Fences > fences })
	eventually(t, "issuing on the new master", func() bool {
		return gen.Ready() == nil && l.Status().State == machineid.StateHeld
	})
	idsC := draw(t, gen, 50)
	h := waitHolds(t, l, id, 3)
	for i, want := range []string{machineid.EndReleased, machineid.EndFenced, machineid.EndHeld} {
		if h.Holds[i].End != want {
			t.Errorf("hold %d ended %q; want %q: %s", i, h.Holds[i].End, want, holdsText(h))
		}
	}
	now := time.Now()
	for i, ids := range [][]time.Time{idsA, idsB, idsC} {
		for _, at := range []time.Time{ids[0], ids[len(ids)-1]} {
			if m := h.At(at, now); len(m.Holds) != 1 || m.Holds[0].Hold != h.Holds[i].Hold {
				t.Fatalf("an ID of hold %d at %s: %+v; want hold %d alone: %s", i, at.Format(time.RFC3339Nano), m, i, holdsText(h))
			}
		}
	}
}

// TestHistoryAt: what the history says of instants around two recorded
// holds (one released, one killed: no end written) and of a machine ID
// with no history.
func TestHistoryAt(t *testing.T) {
	base := time.UnixMilli(1_790_000_000_000).UTC()
	ms := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }
	entry := func(hold string, from, renewed, mark time.Duration, end string, ended time.Duration) string {
		b, _ := json.Marshal(map[string]any{"v": 1, "machine": 7, "hold": hold, "host": "h-" + hold, "pid": 1, "ttl_ms": 10000,
			"started_ms": ms(from), "from_ms": ms(from), "renewed_ms": ms(renewed), "mark_ms": ms(mark), "end": end, "ended_ms": ms(ended)})
		return string(b)
	}
	now := base.Add(time.Hour)
	h := machineid.HistoryOf(7, []string{
		entry("A", 0, 10*time.Second, 12*time.Second, "released", 11*time.Second),
		entry("B", 12*time.Second, 20*time.Second, 21*time.Second, "", 0),
	}, now)
	for _, tc := range []struct {
		name     string
		at       time.Duration
		hold     string
		inferred bool
		reason   string
	}{
		{"inside the released hold", 5 * time.Second, "A", false, ""},
		{"at its mark: the next hold's", 12 * time.Second, "B", false, ""},
		{"inside the killed hold's recorded span", 20 * time.Second, "B", false, ""},
		{"after its last renewal, within its TTL", 25 * time.Second, "B", true, ""},
		{"past its TTL", time.Minute, "", false, "covers"},
		{"before the history", -time.Minute, "", false, "reaches back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := h.At(base.Add(tc.at), now)
			got := ""
			if len(m.Holds) == 1 {
				got = m.Holds[0].Hold
			}
			if got != tc.hold || m.Inferred != tc.inferred || m.Conflict || !strings.Contains(m.Reason, tc.reason) {
				t.Fatalf("%+v; want hold %q inferred %v, a reason with %q", m, tc.hold, tc.inferred, tc.reason)
			}
		})
	}
	if h.Holds[1].End != machineid.EndExpired || h.Holds[1].EndKnown != machineid.KnownTTL {
		t.Errorf("the killed hold: %q (%s); want expired, by its TTL", h.Holds[1].End, h.Holds[1].EndKnown)
	}
	if m := machineid.HistoryOf(7, nil, now).At(base, now); len(m.Holds) != 0 || !strings.Contains(m.Reason, "no hold of machine 7 is recorded") {
		t.Errorf("no history: %+v", m)
	}
}

// waitHolds reads l's history of id until it lists n holds, for at most
// 10 s.
func waitHolds(t *testing.T, l *machineid.Lease, id core.MachineID, n int) machineid.History {
	t.Helper()
	var h machineid.History
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if h = historyOf(t, l, id); len(h.Holds) == n {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d holds; want %d: %s", len(h.Holds), n, holdsText(h))
		}
	}
}
