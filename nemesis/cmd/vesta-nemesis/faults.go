package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/nemesis/report"
)

// A fault kind: inject does the damage and returns what it hit, how long
// to keep it, and how to heal it.
type faultKind struct {
	name   string
	inject func(f *fleet, rng *rand.Rand) (target, detail string, hold time.Duration, heal func())
}

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

func (f *fleet) pickServer(rng *rand.Rand) *server { return f.servers[rng.IntN(len(f.servers))] }

// pickLeased picks a server that leases its machine ID: the faults
// aimed at the lease (pause, cuts from the store) hit one of them.
func (f *fleet) pickLeased(rng *rand.Rand) *server {
	var ss []*server
	for _, s := range f.servers {
		if s.env["VESTA_MACHINE_PROVIDERS"] != "static" {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		return f.pickServer(rng)
	}
	return ss[rng.IntN(len(ss))]
}

// member is a store member a server can be cut from: an etcd member, or
// the Redis master.
func (f *fleet) member(rng *rand.Rand) (string, *netnstest.Host) {
	if f.provider == "etcd" {
		i := rng.IntN(len(f.etcdHosts))
		return "etcd " + f.etcd.Member(i).Name(), f.etcdHosts[i]
	}
	m := f.master()
	return "redis master " + f.redisHosts[m].Name, f.redisHosts[m]
}

// master is the Redis server a majority of the Sentinels names.
func (f *fleet) master() *redistest.Server {
	addr, err := f.grp.MasterAddr()
	for s := range f.redisHosts {
		if err == nil && s.Addr() == addr {
			return s
		}
	}
	return f.grp.Master
}

func (f *fleet) others(except ...*netnstest.Host) []*netnstest.Host {
	var out []*netnstest.Host
next:
	for _, h := range f.allHosts() {
		for _, e := range except {
			if h == e {
				continue next
			}
		}
		out = append(out, h)
	}
	return out
}

func healHosts(hs ...*netnstest.Host) {
	for _, h := range hs {
		h.Heal()
	}
}

var faultKinds = []faultKind{
	{"kill", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		s := f.pickServer(rng)
		s.kill()
		return "server " + s.name, "kill -9, restarted later", between(rng, 200*time.Millisecond, 3*time.Second), func() {
			if err := s.start(); err != nil {
				f.t.Fatal(err)
			}
		}
	}},
	{"pause", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		s := f.pickLeased(rng)
		s.signal(syscall.SIGSTOP)
		return "server " + s.name, "SIGSTOP past the lease TTL", between(rng, leaseTTL+time.Second, 2*leaseTTL), func() { s.signal(syscall.SIGCONT) }
	}},
	{"partition", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		s := f.pickLeased(rng)
		name, m := f.member(rng)
		h := f.hostOf[s]
		netnstest.Split([]*netnstest.Host{h}, []*netnstest.Host{m})
		return "server " + s.name, "two-way cut from " + name, between(rng, time.Second, 2*leaseTTL), func() { healHosts(h, m) }
	}},
	{"oneway", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		s := f.pickLeased(rng)
		name, m := f.member(rng)
		h := f.hostOf[s]
		// The server hears nothing from the member; its packets still go.
		dir := "from"
		if rng.IntN(2) == 0 {
			iptables(f, h, "-A", "INPUT", "-i", "eth0", "-s", m.Addr.String(), "-j", "DROP")
		} else {
			dir = "to"
			iptables(f, h, "-A", "OUTPUT", "-o", "eth0", "-d", m.Addr.String(), "-j", "DROP")
		}
		return "server " + s.name, "one-way cut: drops packets " + dir + " " + name, between(rng, time.Second, 2*leaseTTL), func() { healHosts(h) }
	}},
	{"split", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		if f.provider == "etcd" {
			i := rng.IntN(3)
			h := f.etcdHosts[i]
			side := []*netnstest.Host{h}
			detail := "member alone (minority) against the rest"
			if rng.IntN(2) == 0 {
				s := f.pickLeased(rng)
				side = append(side, f.hostOf[s])
				detail = "member with server " + s.name + " (minority) against the rest"
			}
			netnstest.Split(side, f.others(side...))
			return "etcd " + f.etcd.Member(i).Name(), detail, between(rng, 2*time.Second, 3*leaseTTL), func() { healHosts(f.allHosts()...) }
		}
		m := f.master()
		s := f.pickLeased(rng)
		side := []*netnstest.Host{f.redisHosts[m], f.hostOf[s]}
		netnstest.Split(side, f.others(side...))
		return "redis master " + f.redisHosts[m].Name, "with server " + s.name + " cut from the Sentinels, replicas and other servers (split brain)",
			between(rng, 3*time.Second, 4*leaseTTL), func() { healHosts(f.allHosts()...) }
	}},
	{"store-kill", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		if f.provider == "etcd" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			i, err := f.etcd.Leader(ctx)
			if err != nil {
				i = rng.IntN(3)
			}
			m := f.etcd.Member(i)
			m.Kill()
			return "etcd leader " + m.Name(), "kill -9, restarted later", between(rng, time.Second, 2*leaseTTL), func() { m.Restart() }
		}
		m := f.master()
		m.Kill()
		return "redis master " + f.redisHosts[m].Name, "kill -9 (Sentinel fails over), restarted later", between(rng, 2*time.Second, 3*leaseTTL), func() { m.Restart() }
	}},
	{"flushall", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		if f.provider == "etcd" {
			f.segRedis.FlushAll()
			return "segment redis", "FLUSHALL", 0, func() {}
		}
		m := f.master()
		if _, err := m.Do("FLUSHALL"); err != nil {
			f.t.Fatalf("FLUSHALL: %v", err)
		}
		return "redis master " + f.redisHosts[m].Name, "FLUSHALL", 0, func() {}
	}},
	{"mariadb-kill", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		f.mdb.Kill()
		return "mariadb", "kill -9, restarted later", between(rng, 500*time.Millisecond, 3*time.Second), func() { f.mdb.Restart() }
	}},
	{"disk-full", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		fill := filepath.Join(f.tmpfs, "fill")
		fh, err := os.Create(fill)
		if err != nil {
			f.t.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		for {
			if _, err := fh.Write(buf); err != nil {
				break
			}
		}
		fh.Close()
		return "server " + f.diskSrv.name, "time guard's tmpfs filled", between(rng, time.Second, 2*leaseTTL), func() { os.Remove(fill) }
	}},
	{"clock", func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		s := f.pickServer(rng)
		off := between(rng, 300*time.Millisecond, 3*time.Second)
		if rng.IntN(2) == 0 {
			off = -off
		}
		if err := os.WriteFile(f.clock[s], []byte(off.String()+"\n"), 0o644); err != nil {
			f.t.Fatal(err)
		}
		return "server " + s.name, fmt.Sprintf("clock stepped %v", off), between(rng, time.Second, 2*leaseTTL), func() {
			os.WriteFile(f.clock[s], []byte("0s\n"), 0o644)
		}
	}},
}

func iptables(f *fleet, h *netnstest.Host, args ...string) {
	cmd := h.Command("iptables", append([]string{"-w", "5"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("iptables %v in %s: %v\n%s", args, h.NS, err, out)
	}
}

// runFaults injects faults until end, and at least one of every kind,
// one at a time: a gap of up to interval, then the fault, held, then
// healed. It returns what it injected.
func (f *fleet) runFaults(ctx context.Context, rng *rand.Rand, end time.Time, interval time.Duration) []report.Fault {
	var kinds []faultKind
	for _, k := range faultKinds {
		if f.provider == "sabotage" || (k.name == "clock" && !f.clockHook) {
			continue
		}
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		return nil
	}
	order := rng.Perm(len(kinds))
	var out []report.Fault
	for n := 0; ; n++ {
		if n >= len(kinds) && time.Now().After(end) {
			return out
		}
		gap := between(rng, interval/2, interval)
		select {
		case <-ctx.Done():
			return out
		case <-time.After(gap):
		}
		var k faultKind
		if n < len(kinds) {
			k = kinds[order[n]]
		} else {
			k = kinds[rng.IntN(len(kinds))]
		}
		fl := report.Fault{Kind: k.name, Start: time.Now()}
		var heal func()
		var hold time.Duration
		if err := try(func() { fl.Target, fl.Detail, hold, heal = k.inject(f, rng) }); err != nil {
			fl.Detail += " (injecting failed: " + err.Error() + ")"
		}
		f.t.Logf("fault %d: %s %s: %s, for %v", n+1, fl.Kind, fl.Target, fl.Detail, hold.Round(time.Millisecond))
		if heal != nil {
			select {
			case <-ctx.Done():
			case <-time.After(hold):
			}
			if err := try(heal); err != nil {
				fl.Detail += " (healing failed: " + err.Error() + ")"
			}
		}
		fl.End = time.Now()
		fl.Kinds = f.affected(fl)
		out = append(out, fl)
		if ctx.Err() != nil {
			return out
		}
	}
}

// affected names the caller kinds a fault may touch; nil is all. A fault
// on one server touches that server's own callers ("rest-A", "rpc-A",
// "seq-mariadb-A") and the clients over several servers ("client", the
// seq client of its store); a segment store's fault, every kind of that
// store; a machine-ID provider's fault (store-kill, split, the lease
// master's FLUSHALL), every kind.
func (f *fleet) affected(fl report.Fault) []string {
	switch {
	case fl.Kind == "mariadb-kill":
		return f.storeKinds("mysql")
	case fl.Kind == "flushall" && fl.Target == "segment redis":
		return f.storeKinds("redis")
	case strings.HasPrefix(fl.Target, "server "):
		for _, s := range f.servers {
			if "server "+s.name == fl.Target {
				seq := seqKind(f.store[s])
				return []string{"client", "rest-" + s.name, "rpc-" + s.name, seq, seq + "-" + s.name}
			}
		}
	}
	return nil
}

// seqKind is the kind of the sequence callers of a segment store.
func seqKind(store string) string {
	if store == "mysql" {
		return "seq-mariadb"
	}
	return "seq-redis"
}

// storeKinds are the kinds of a segment store's callers: its seq client
// and its servers' REST callers.
func (f *fleet) storeKinds(store string) []string {
	out := []string{seqKind(store)}
	for _, s := range f.servers {
		if f.store[s] == store {
			out = append(out, seqKind(store)+"-"+s.name)
		}
	}
	return out
}
