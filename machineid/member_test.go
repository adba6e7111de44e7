package machineid_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/etcdtest"
	"github.com/vesta-go/vesta/internal/testkit/logtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/etcdlease"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// threeIDs is the range of the fleet tests: three holders fill it.
var threeIDs = core.MachineRange{First: 1000, Count: 3}

// fleetStore is one lease store the member-record tests run on: a config
// of it and a way to write a raw value at a machine ID's member key.
type fleetStore struct {
	name string
	open func(t *testing.T) (cfg func(ttl time.Duration) machineid.Config, put func(t *testing.T, id core.MachineID, v string))
}

var fleetStores = []fleetStore{
	{machineid.StoreRedis, func(t *testing.T) (func(time.Duration) machineid.Config, func(*testing.T, core.MachineID, string)) {
		srv := redistest.Start(t)
		rdb := client(t, srv)
		return func(ttl time.Duration) machineid.Config { return redisConfig(t, srv, ttl) },
			func(t *testing.T, id core.MachineID, v string) {
				if err := rdb.Set(context.Background(), redislease.MemberKey("vesta", id), v, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
	}},
	{machineid.StoreEtcd, func(t *testing.T) (func(time.Duration) machineid.Config, func(*testing.T, core.MachineID, string)) {
		ec := etcdtest.Start(t)
		cli := ec.Client(t)
		return func(ttl time.Duration) machineid.Config { return etcdConfig(ec, max(ttl, 2*time.Second)) },
			func(t *testing.T, id core.MachineID, v string) {
				if _, err := cli.Put(context.Background(), etcdlease.MemberKey("vesta", id), v); err != nil {
					t.Fatal(err)
				}
			}
	}},
}

// eachStore runs test on every store of fleetStores.
func eachStore(t *testing.T, test func(t *testing.T, name string, cfg func(time.Duration) machineid.Config, put func(*testing.T, core.MachineID, string))) {
	for _, st := range fleetStores {
		t.Run(st.name, func(t *testing.T) {
			cfg, put := st.open(t)
			test(t, st.name, cfg, put)
		})
	}
}

// leaseAt acquires machine ID id alone with c.
func leaseAt(t *testing.T, c machineid.Config, id core.MachineID) *machineid.Lease {
	t.Helper()
	c.ServerRange = core.MachineRange{First: id, Count: 1}
	return mustAcquire(t, c, core.Central)
}

func fleetOf(t *testing.T, l *machineid.Lease) machineid.Members {
	t.Helper()
	m, err := l.Fleet(context.Background())
	if err != nil {
		t.Fatalf("Fleet of machine %d: %v", l.ID(), err)
	}
	return m
}

func machines(m machineid.Members) []core.MachineID {
	var out []core.MachineID
	for _, x := range m.List {
		out = append(out, x.Machine)
	}
	return out
}

// TestFleetListsEveryHolder: three leases in one store each list all
// three, sorted, themselves marked, with versions and what each
// advertised; a closed lease's record is gone from the listing at once.
func TestFleetListsEveryHolder(t *testing.T) {
	eachStore(t, func(t *testing.T, store string, cfg func(time.Duration) machineid.Config, _ func(*testing.T, core.MachineID, string)) {
		c := cfg(10 * time.Second)
		c.ServerRange = threeIDs
		var leases []*machineid.Lease
		for i := range 3 {
			l := mustAcquire(t, c, core.Central)
			ls := machineid.Listeners{RPC: fmt.Sprintf("10.0.0.%d:7070", i), HTTP: fmt.Sprintf("10.0.0.%d:7080", i), Host: fmt.Sprintf("node-%d", i)}
			if err := l.Advertise(context.Background(), ls); err != nil {
				t.Fatalf("Advertise: %v", err)
			}
			leases = append(leases, l)
		}
		advertised := map[core.MachineID]string{}
		for i, l := range leases {
			advertised[l.ID()] = fmt.Sprintf("10.0.0.%d:7070 node-%d", i, i)
		}
		for _, l := range leases {
			m := fleetOf(t, l)
			if m.Store != store || m.Prefix != "vesta" || len(m.Skipped) != 0 {
				t.Fatalf("Fleet: store %q prefix %q skipped %q; want %s, vesta, none", m.Store, m.Prefix, m.Skipped, store)
			}
			if got := fmt.Sprint(machines(m)); got != "[1000 1001 1002]" {
				t.Fatalf("machine %d lists %s; want [1000 1001 1002]", l.ID(), got)
			}
			for _, x := range m.List {
				if x.Self != (x.Machine == l.ID()) {
					t.Errorf("machine %d lists %d with Self %t", l.ID(), x.Machine, x.Self)
				}
				if x.Version == "" || x.State != "held" || x.Provider != store || x.Range != "server" || x.PID == 0 {
					t.Errorf("machine %d lists %+v; want a version, held, %s, the server range, a pid", l.ID(), x, store)
				}
				if got := x.RPC + " " + x.Host; got != advertised[x.Machine] || !strings.HasSuffix(x.HTTP, ":7080") {
					t.Errorf("machine %d lists %d at %q, %q; want %q", l.ID(), x.Machine, got, x.HTTP, advertised[x.Machine])
				}
				if x.Started.IsZero() || x.Renewed.IsZero() || !x.Expires.After(x.Renewed) {
					t.Errorf("machine %d lists %d started %s renewed %s expires %s", l.ID(), x.Machine, x.Started, x.Renewed, x.Expires)
				}
			}
		}
		gone := leases[0].ID()
		if err := leases[0].Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, l := range leases[1:] {
			for _, x := range fleetOf(t, l).List {
				if x.Machine == gone {
					t.Fatalf("machine %d still lists the closed lease's %d", l.ID(), gone)
				}
			}
		}
	})
}

// TestFleetRecordExpiresWithTheLease: a holder that stops renewing (its
// clock stands still, as a killed process's would) leaves the listing
// when its lease expires in the store, not before the store says so.
func TestFleetRecordExpiresWithTheLease(t *testing.T) {
	eachStore(t, func(t *testing.T, _ string, cfg func(time.Duration) machineid.Config, _ func(*testing.T, core.MachineID, string)) {
		dead := cfg(500 * time.Millisecond)
		dead.Redis.MaxClockSkew = time.Minute // the stopped clock falls behind Redis's
		machineid.SetMaxRedisReach(t, time.Hour)
		dead.Clock = core.NewManualClock(time.Now())
		stopped := leaseAt(t, dead, 1000)
		watcher := leaseAt(t, cfg(10*time.Second), 1001)
		if got := fmt.Sprint(machines(fleetOf(t, watcher))); got != "[1000 1001]" {
			t.Fatalf("lists %s; want [1000 1001]", got)
		}
		eventually(t, "the stopped holder's record to expire", func() bool {
			return fmt.Sprint(machines(fleetOf(t, watcher))) == "[1001]"
		})
		if m := fleetOf(t, stopped); fmt.Sprint(machines(m)) != "[1000 1001]" || !m.List[0].Self {
			t.Fatalf("the stopped holder lists %+v; want itself and the other", m.List)
		}
	})
}

// TestRedisMemberRecordTTL: the record never outlives the lease key.
func TestRedisMemberRecordTTL(t *testing.T) {
	srv, c := startRedis(t, 10*time.Second)
	rdb := client(t, srv)
	l := leaseAt(t, c, 1000)
	lease := leaseKeyOf(l.ID())
	member := redislease.MemberKey("vesta", l.ID())
	var mc, lc *redis.DurationCmd
	if _, err := rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error { // one instant
		mc, lc = p.PTTL(context.Background(), member), p.PTTL(context.Background(), lease)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mt, lt := mc.Val(), lc.Val()
	if mt <= 0 || mt > lt {
		t.Fatalf("member record TTL %s, lease TTL %s; want the record's positive and no longer", mt, lt)
	}
}

// TestEtcdMemberRecordOnTheLease: the record is attached to the holder's
// etcd lease, so it goes when the lease does.
func TestEtcdMemberRecordOnTheLease(t *testing.T) {
	ec := etcdtest.Start(t)
	cli := ec.Client(t)
	l := leaseAt(t, etcdConfig(ec, 10*time.Second), 1000)
	leaseKey, _, _ := etcdlease.Keys("vesta", l.ID())
	_, want := get(t, cli, leaseKey)
	v, got := get(t, cli, etcdlease.MemberKey("vesta", l.ID()))
	if v == "" || got != want || got == 0 {
		t.Fatalf("member record %q on etcd lease %x; want one on the lease key's %x", v, got, want)
	}
}

// TestFleetSkipsHostileRecords: records that are not JSON, too large, of
// another type or of another machine ID are skipped with a note; the
// listing stays this process's own and the notes stay few.
func TestFleetSkipsHostileRecords(t *testing.T) {
	eachStore(t, func(t *testing.T, _ string, cfg func(time.Duration) machineid.Config, put func(*testing.T, core.MachineID, string)) {
		l := leaseAt(t, cfg(10*time.Second), 1000)
		put(t, 1, "not json at all")
		put(t, 2, strings.Repeat("x", 1<<20))
		put(t, 3, `{"machine":4,"version":"v9"}`)
		put(t, 4, `{"machine":4,"version":"`+strings.Repeat("v", 900)+`","host":"evil\u0000\u001b[2Jhost","started_ms":-5}`)
		for id := range core.MachineID(40) {
			put(t, 500+id, "[")
		}
		m := fleetOf(t, l)
		if got := fmt.Sprint(machines(m)); got != "[4 1000]" {
			t.Fatalf("lists %s; want [4 1000]: the one sound record and itself", got)
		}
		odd := m.List[0]
		if len(odd.Version) > 64 || strings.ContainsAny(odd.Host, "\x00\x1b") || !odd.Started.IsZero() || odd.Self {
			t.Fatalf("the clipped record %+v", odd)
		}
		if len(m.Skipped) > 17 || !strings.HasPrefix(m.Skipped[len(m.Skipped)-1], "and ") {
			t.Fatalf("%d notes, the last %q; want at most 16 and a count", len(m.Skipped), m.Skipped[len(m.Skipped)-1])
		}
		notes := strings.Join(m.Skipped, "\n")
		for _, want := range []string{"not a member record", "above 1024", "names machine 4, not 3"} {
			if !strings.Contains(notes, want) {
				t.Errorf("notes lack %q:\n%s", want, notes)
			}
		}
	})
}

// TestFleetStoreDown: a store that cannot be read is an error, with this
// process still listed.
func TestFleetStoreDown(t *testing.T) {
	srv, c := startRedis(t, 10*time.Second)
	l := leaseAt(t, c, 1000)
	srv.Kill()
	m, err := l.Fleet(context.Background())
	if err == nil || len(m.List) != 1 || !m.List[0].Self || m.List[0].Machine != 1000 || m.Store != "redis" {
		t.Fatalf("Fleet with Redis down: %+v, %v; want an error and itself", m, err)
	}
}

// TestFleetWithoutAStore: a fixed ID lists itself, from no store.
func TestFleetWithoutAStore(t *testing.T) {
	c := machineid.DefaultConfig()
	c.Providers = []string{machineid.ProviderStatic}
	c.Static = new(core.MachineID(1000))
	l := mustAcquire(t, c, core.Central)
	if err := l.Advertise(context.Background(), machineid.Listeners{HTTP: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	m := fleetOf(t, l)
	if m.Store != machineid.StoreNone || len(m.List) != 1 {
		t.Fatalf("Fleet of a static ID: %+v", m)
	}
	if x := m.List[0]; !x.Self || x.Machine != 1000 || x.State != "none" || x.HTTP != "127.0.0.1:1" || x.Version == "" || !x.Renewed.IsZero() {
		t.Fatalf("itself: %+v", x)
	}
}

// TestFleetUnderSentinel: holders leasing through Sentinel write their
// records on the master a majority names and list each other from it.
func TestFleetUnderSentinel(t *testing.T) {
	g, c := startSentinels(t, 10*time.Second)
	c.ServerRange = core.MachineRange{First: 1000, Count: 2}
	a, b := mustAcquire(t, c, core.Central), mustAcquire(t, c, core.Central)
	if err := a.Advertise(context.Background(), machineid.Listeners{HTTP: "10.0.0.1:7080"}); err != nil {
		t.Fatal(err)
	}
	m := fleetOf(t, b)
	if got := fmt.Sprint(machines(m)); got != "[1000 1001]" || m.Store != machineid.StoreRedis {
		t.Fatalf("under Sentinel: %s from %q; want [1000 1001] from redis", got, m.Store)
	}
	for _, x := range m.List {
		if x.Machine == a.ID() && (x.HTTP != "10.0.0.1:7080" || x.Self) {
			t.Fatalf("the other holder listed as %+v", x)
		}
	}
	if v, err := g.Master.Do("GET", redislease.MemberKey("vesta", a.ID())); err != nil || !strings.Contains(v, "10.0.0.1:7080") {
		t.Fatalf("the record on the master: %q, %v", v, err)
	}
}

// TestFailedMemberWritesLeaveTheLeaseAlone: a Redis user that may write
// every lease key but the member record's (an ACL) renews as ever: the
// failed writes are logged, never counted as failed renewals nor fenced.
func TestFailedMemberWritesLeaveTheLeaseAlone(t *testing.T) {
	srv, c := startRedis(t, 600*time.Millisecond) // renewed every 200ms
	if _, err := srv.Do("ACL", "SETUSER", "nomember", "on", ">nomember-password", "+@all", "%R~*",
		"%RW~*:lease", "%RW~*:mark", "%RW~*:shape", "%RW~*:released", "%RW~*:instance", "%RW~*:store", "%RW~*:fleet"); err != nil {
		t.Fatal(err)
	}
	c.Redis.Username, c.Redis.Password = "nomember", "nomember-password"
	var log logtest.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	l := leaseAt(t, c, 1000)
	if err := l.Advertise(context.Background(), machineid.Listeners{HTTP: "127.0.0.1:1"}); err == nil {
		t.Fatal("Advertise: the ACL let the member record be written")
	}
	first := l.Status().Deadline
	eventually(t, "three renewals", func() bool { return l.Status().Deadline.Sub(first) >= 3*200*time.Millisecond })
	if s := l.Status(); s.State != machineid.StateHeld || s.RenewFailures != 0 || s.Fences != 0 {
		t.Fatalf("status %+v; want held, no failed renewal, no fence", s)
	}
	if n := strings.Count(log.String(), "writing the member record failed"); n != 1 {
		t.Fatalf("%d warnings of the failed writes; want one:\n%s", n, log.String())
	}
	if m := fleetOf(t, l); len(m.List) != 1 || !m.List[0].Self {
		t.Fatalf("Fleet %+v; want itself", m)
	}
}
