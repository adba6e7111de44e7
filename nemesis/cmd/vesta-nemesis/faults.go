package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/nemesis/report"
)

// A fault kind: inject does the damage and says what it hit, how long to
// keep it and how to heal it. Two faults may overlap: free says whether
// this kind can start now beside the ones held (their resources are busy);
// inject claims what it takes (f.claim), and picks among servers no other
// fault holds.
type faultKind struct {
	name string
	// only, when set, is the one provider the kind applies to.
	only string
	// handovers: the kind tends to make a machine ID change hands while
	// its holder lives; the schedule favours such kinds when a run is
	// short of handovers (--min-handovers).
	handovers bool
	// usable, when set, says whether the fleet can run the kind at all
	// (a tool it needs is missing, ...) and why not.
	usable func(f *fleet) (bool, string)
	free   func(f *fleet) bool
	inject func(f *fleet, rng *rand.Rand) injection
}

// injection is what inject did.
type injection struct {
	target, detail string
	hold           time.Duration
	heal           func()
	// kinds are the caller kinds it may touch; nil is every kind (but
	// the spare ones).
	kinds []string
	// servers are the servers it hit, and store whether it hit the whole
	// lease store: a handover from one of them (any, with store) is its.
	servers []*server
	store   bool
	// class names the case not survived by design it runs, if any.
	class string
}

// Cases not survived by design, by their names in
// docs/design/not-survived.md and docs/guarantees.md.
const (
	classOldGuard   = "guard-dir-restored (an older copy of a time-guard directory)"
	classLostCommit = "segment-mysql-rolled-back (MariaDB lost its last commits)"
)

// Resources two held faults must not share: "net" (every partition heals
// by flushing a host's rules), "machine-store" (the lease store as a
// whole), the segment stores, the small disk, the client process, the
// embedded issuers' clocks, the Redis pair, and each server by name.
const (
	resNet      = "net"
	resMachine  = "machine-store"
	resMariaDB  = "mariadb"
	resSegRed   = "segment-redis"
	resDisk     = "disk"
	resClient   = "client-process"
	resEmbedded = "embedded"
	resMix      = "mix"
)

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// claim marks resources as taken by the fault being injected.
func (f *fleet) claim(res ...string) {
	f.mu.Lock()
	f.claims = append(f.claims, res...)
	f.mu.Unlock()
}

func (f *fleet) freeOf(res ...string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range res {
		if f.busy[r] {
			return false
		}
	}
	return true
}

func serverRes(s *server) string { return "server " + s.name }

// pickFrom picks a server no held fault has taken, and claims it.
func (f *fleet) pickFrom(rng *rand.Rand, ss []*server) *server {
	var free []*server
	for _, s := range ss {
		if !f.isBusy(s) {
			free = append(free, s)
		}
	}
	if len(free) == 0 {
		free = ss
	}
	s := free[rng.IntN(len(free))]
	f.claim(serverRes(s))
	return s
}

// pickServer picks a server whose outage the run measures (a primary or
// D) or a standby that runs.
func (f *fleet) pickServer(rng *rand.Rand) *server {
	ss := f.serversOf(rolePrimary, roleFixed)
	for _, s := range f.serversOf(roleStandby) {
		if s.running() {
			ss = append(ss, s)
		}
	}
	return f.pickFrom(rng, ss)
}

// pickLeased picks a leasing server (primary or standby) that serves now:
// the faults aimed at the lease hit a holder. The choice is made in the
// schedule's order of servers, so that a seed picks alike as long as the
// same servers serve.
func (f *fleet) pickLeased(rng *rand.Rand) *server {
	var ss []*server
	for _, s := range f.serversOf(rolePrimary, roleStandby) {
		if s.servingFor() > 0 {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		ss = f.serversOf(rolePrimary)
	}
	return f.pickFrom(rng, ss)
}

// pickHeld picks, like pickLeased, a primary or standby whose lease is
// held now (not fenced, nor waiting out a quarantine), waiting up to
// within for one; then any that serves.
func (f *fleet) pickHeld(rng *rand.Rand, within time.Duration) *server {
	deadline := time.Now().Add(within)
	for {
		var ss []*server
		for _, s := range f.serversOf(rolePrimary, roleStandby) {
			if s.servingFor() == 0 || f.isBusy(s) {
				continue
			}
			ctx, cancel := context.WithTimeout(f.ctx, time.Second)
			st, err := f.status(ctx, s)
			cancel()
			if err == nil && st.State == "held" {
				ss = append(ss, s)
			}
		}
		if len(ss) > 0 || time.Now().After(deadline) || f.ctx.Err() != nil {
			if len(ss) == 0 {
				return f.pickLeased(rng)
			}
			return f.pickFrom(rng, ss)
		}
		sleepCtx(f.ctx, 500*time.Millisecond)
	}
}

// pickStored picks a server with a segment store.
func (f *fleet) pickStored(rng *rand.Rand) *server {
	var ss []*server
	for _, s := range f.servers {
		if f.store[s] != "" {
			ss = append(ss, s)
		}
	}
	return f.pickFrom(rng, ss)
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

// replicas are the Redis servers of the group other than m.
func (f *fleet) replicas(m *redistest.Server) []*redistest.Server {
	var out []*redistest.Server
	for _, s := range append([]*redistest.Server{f.grp.Master}, f.grp.Replicas...) {
		if s != m {
			out = append(out, s)
		}
	}
	return out
}

func (f *fleet) others(except ...*netnstest.Host) []*netnstest.Host {
	var out []*netnstest.Host
	for _, h := range f.allHosts() {
		if !slices.Contains(except, h) {
			out = append(out, h)
		}
	}
	return out
}

func healHosts(hs ...*netnstest.Host) {
	for _, h := range hs {
		h.Heal()
	}
}

func always(*fleet) bool { return true }

func freeOf(res ...string) func(f *fleet) bool {
	return func(f *fleet) bool { return f.freeOf(res...) }
}

// segFree: a segment store no held fault has taken.
func segFree(f *fleet) bool { return f.freeOf(resMariaDB) || f.freeOf(resSegRed) }

// leaseRedisOr is free for a fault on the Redis that holds the leases
// under Sentinel, or the segment Redis under etcd.
func leaseRedisOr(f *fleet) bool {
	if f.provider == "sentinel" {
		return f.freeOf(resMachine)
	}
	return f.freeOf(resSegRed)
}

// serverKinds are the caller kinds a fault on one server touches: its
// own callers ("rest-A", "rpc-A", "seq-mariadb-A") and the clients over
// several servers ("client", the seq client of its store).
func (f *fleet) serverKinds(s *server) []string {
	out := []string{"client", "rest-" + s.name, "rpc-" + s.name}
	if st := f.store[s]; st != "" {
		seq := seqKind(st)
		out = append(out, seq, seq+"-"+s.name)
	}
	return out
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

// onServer is an injection on one server.
func (f *fleet) onServer(s *server, detail string, hold time.Duration, heal func()) injection {
	return injection{target: "server " + s.name, detail: detail, hold: hold, heal: heal, kinds: f.serverKinds(s), servers: []*server{s}}
}

// cutFromStore cuts s's host off from every host of the lease store.
func (f *fleet) cutFromStore(s *server) func() {
	h := f.hostOf[s]
	store := f.storeHosts()
	netnstest.Split([]*netnstest.Host{h}, store)
	return func() { healHosts(append(store, h)...) }
}

// restartEmpty kills the lease master and restarts it at once with its
// data files deleted; it comes back as the master it was.
func (f *fleet) restartEmpty() *redistest.Server {
	m := f.master()
	m.KillAndRestart(nil)
	// It starts with the command line it was first given, a replica's for
	// one promoted since: come back as the master it was, as a server
	// whose config Sentinel rewrote would.
	if info, err := m.Do("INFO", "replication"); err == nil && strings.Contains(info, "role:slave") {
		if _, err := m.Do("REPLICAOF", "NO", "ONE"); err != nil {
			f.t.Fatalf("REPLICAOF NO ONE on %s: %v", f.redisHosts[m].Name, err)
		}
	}
	return m
}

// stepClock writes a clock offset to a file a clock hook reads.
func stepClock(f *fleet, file string, off time.Duration) {
	if err := os.WriteFile(file, []byte(off.String()+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// clockStep is a step of 0.3-3s, back or forward.
func clockStep(rng *rand.Rand) time.Duration {
	off := between(rng, 300*time.Millisecond, 3*time.Second)
	if rng.IntN(2) == 0 {
		off = -off
	}
	return off
}

var faultKinds = []faultKind{
	{name: "kill", free: always, inject: func(f *fleet, rng *rand.Rand) injection {
		s := f.pickServer(rng)
		s.setDown(true)
		s.kill()
		return f.onServer(s, "kill -9, restarted later", between(rng, 200*time.Millisecond, 3*time.Second), func() {
			defer s.setDown(false)
			if err := s.start(); err != nil {
				f.t.Fatal(err)
			}
		})
	}},
	{name: "pause", handovers: true, free: always, inject: func(f *fleet, rng *rand.Rand) injection {
		s := f.pickLeased(rng)
		s.signal(syscall.SIGSTOP)
		return f.onServer(s, "SIGSTOP past the lease TTL", between(rng, leaseTTL+time.Second, 2*leaseTTL), func() { s.signal(syscall.SIGCONT) })
	}},
	{name: "partition", handovers: true, free: freeOf(resNet), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resNet)
		s := f.pickLeased(rng)
		name, m := f.member(rng)
		h := f.hostOf[s]
		netnstest.Split([]*netnstest.Host{h}, []*netnstest.Host{m})
		return f.onServer(s, "two-way cut from "+name, between(rng, time.Second, 2*leaseTTL), func() { healHosts(h, m) })
	}},
	{name: "oneway", free: freeOf(resNet), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resNet)
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
		return f.onServer(s, "one-way cut: drops packets "+dir+" "+name, between(rng, time.Second, 2*leaseTTL), func() { healHosts(h) })
	}},
	{name: "store-cut", handovers: true, free: freeOf(resNet), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resNet)
		s := f.pickLeased(rng)
		heal := f.cutFromStore(s)
		what := map[string]string{"etcd": "every etcd member", "sentinel": "the Redis master, replicas and Sentinels"}[f.provider]
		return f.onServer(s, "cut from "+what+"; its callers still reach it", between(rng, leaseTTL+time.Second, 3*leaseTTL), heal)
	}},
	{name: "fence-edge", free: freeOf(resNet), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resNet)
		s := f.pickHeld(rng, 30*time.Second)
		st, err := f.justRenewed(s, leaseTTL, 3*leaseTTL)
		if err != nil {
			f.t.Fatal(err)
		}
		read := time.Now()
		// Ended 300 ms either side of the fence, as the server's own
		// deadline says; the key outlives it, so the holder comes back
		// by a renewal that finds it still its own.
		edge := between(rng, -300*time.Millisecond, 300*time.Millisecond)
		var heal func()
		how := "SIGSTOP"
		if rng.IntN(2) == 0 {
			s.signal(syscall.SIGSTOP)
			heal = func() { s.signal(syscall.SIGCONT) }
		} else {
			how = "cut from the lease store"
			heal = f.cutFromStore(s)
		}
		hold := max(st.DeadlineIn+edge-time.Since(read), 0)
		return f.onServer(s, fmt.Sprintf("%s just after a renewal, ended %v from its fence (deadline in %v)", how, edge.Round(time.Millisecond), st.DeadlineIn.Round(time.Millisecond)), hold, heal)
	}},
	{name: "slow", handovers: true, free: always, inject: func(f *fleet, rng *rand.Rand) injection {
		s := f.pickLeased(rng)
		d := between(rng, 200*time.Millisecond, 2*time.Second)
		for _, fw := range f.leaseFwd[s] {
			fw.SetDelay(d, d)
		}
		return f.onServer(s, fmt.Sprintf("every packet to and from the lease store held %v each way (renewals slowed, not dropped)", d.Round(time.Millisecond)),
			between(rng, 2*time.Second, 3*leaseTTL), func() {
				for _, fw := range f.leaseFwd[s] {
					fw.SetDelay(0, 0)
				}
			})
	}},
	{name: "split", handovers: true, free: freeOf(resNet, resMachine), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resNet, resMachine)
		if f.provider == "etcd" {
			i := rng.IntN(3)
			h := f.etcdHosts[i]
			side := []*netnstest.Host{h}
			in := injection{target: "etcd " + f.etcd.Member(i).Name(), detail: "member alone (minority) against the rest", hold: between(rng, 2*time.Second, 3*leaseTTL),
				heal: func() { healHosts(f.allHosts()...) }, store: true}
			if rng.IntN(2) == 0 {
				s := f.pickLeased(rng)
				side = append(side, f.hostOf[s])
				in.detail, in.servers, in.store = "member with server "+s.name+" (minority) against the rest", []*server{s}, false
			}
			netnstest.Split(side, f.others(side...))
			return in
		}
		m := f.master()
		s := f.pickLeased(rng)
		side := []*netnstest.Host{f.redisHosts[m], f.hostOf[s]}
		netnstest.Split(side, f.others(side...))
		return injection{target: "redis master " + f.redisHosts[m].Name, detail: "with server " + s.name + " cut from the Sentinels, replicas and other servers (split brain)",
			hold: between(rng, 3*time.Second, 4*leaseTTL), heal: func() { healHosts(f.allHosts()...) }, servers: []*server{s}, store: true}
	}},
	{name: "store-kill", free: freeOf(resMachine), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resMachine)
		if f.provider == "etcd" {
			// Mostly the leader (a new election), sometimes a follower.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			i, err := f.etcd.Leader(ctx)
			what := "etcd leader "
			if err != nil || rng.IntN(3) == 0 {
				i, what = (max(i, 0)+1+rng.IntN(2))%3, "etcd follower "
			}
			m := f.etcd.Member(i)
			m.Kill()
			return injection{target: what + m.Name(), detail: "kill -9, restarted later", hold: between(rng, time.Second, 2*leaseTTL), heal: func() { m.Restart() }, store: true}
		}
		m := f.master()
		switch rng.IntN(4) {
		case 0:
			r := f.replicas(m)[rng.IntN(2)]
			r.Kill()
			return injection{target: "redis replica " + f.redisHosts[r].Name, detail: "kill -9, restarted later", hold: between(rng, time.Second, 2*leaseTTL), heal: func() { r.Restart() }, store: true}
		case 1:
			i := rng.IntN(len(f.sentHosts))
			p := f.grp.Sentinel(i)
			p.Kill()
			return injection{target: "sentinel " + f.sentHosts[i].Name, detail: "kill -9, restarted later", hold: between(rng, time.Second, 2*leaseTTL), heal: func() { p.Restart() }, store: true}
		}
		m.Kill()
		return injection{target: "redis master " + f.redisHosts[m].Name, detail: "kill -9 (Sentinel fails over), restarted later", hold: between(rng, 2*time.Second, 3*leaseTTL), heal: func() { m.Restart() }, store: true}
	}},
	{name: "member-wipe", only: "etcd", free: freeOf(resMachine), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resMachine)
		i := rng.IntN(3)
		// Its disk lost: removed from the cluster, emptied, added again
		// under a new member ID and caught up by a snapshot, the others
		// keeping a quorum meanwhile. (Restarted empty under its old
		// identity, etcd refuses it: etcdtest.Cluster.Wipe says why.)
		f.etcd.Replace(i)
		return injection{target: "etcd " + f.etcd.Member(i).Name(), detail: "data wiped; removed, added again and rejoined (a snapshot)", store: true, heal: func() {}}
	}},
	{name: "quorum-loss", only: "etcd", free: freeOf(resMachine), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resMachine)
		keep := rng.IntN(3)
		var killed []string
		var heal []func()
		for i := range 3 {
			if i != keep {
				m := f.etcd.Member(i)
				m.Kill()
				killed = append(killed, m.Name())
				heal = append(heal, m.Restart)
			}
		}
		return injection{target: "etcd " + strings.Join(killed, ", "), detail: "two of three members killed (no quorum), restarted later", hold: between(rng, 2*time.Second, 2*leaseTTL),
			heal: func() {
				for _, h := range heal {
					h()
				}
			}, store: true}
	}},
	{name: "flushall", free: leaseRedisOr, inject: func(f *fleet, rng *rand.Rand) injection {
		if f.provider == "etcd" {
			f.claim(resSegRed)
			f.segRedis.FlushAll()
			return injection{target: "segment redis", detail: "FLUSHALL", heal: func() {}, kinds: f.storeKinds("redis")}
		}
		f.claim(resMachine)
		// Just after a failover the Sentinels may still name a server
		// that has turned replica: ask again until a master takes it.
		var m *redistest.Server
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			m = f.master()
			if _, err = m.Do("FLUSHALL"); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			f.t.Fatalf("FLUSHALL on %s: %v", f.redisHosts[m].Name, err)
		}
		return injection{target: "redis master " + f.redisHosts[m].Name, detail: "FLUSHALL", heal: func() {}, store: true}
	}},
	{name: "restart-empty", free: leaseRedisOr, inject: func(f *fleet, rng *rand.Rand) injection {
		if f.provider == "etcd" {
			f.claim(resSegRed)
			f.segRedis.KillAndRestart(nil)
			return injection{target: "segment redis", detail: "kill -9, restarted with its data files deleted", heal: func() {}, kinds: f.storeKinds("redis")}
		}
		f.claim(resMachine)
		m := f.restartEmpty()
		return injection{target: "redis master " + f.redisHosts[m].Name, detail: "kill -9, restarted at once with its data files deleted", heal: func() {}, store: true}
	}},
	{name: "failover", only: "sentinel", free: freeOf(resNet, resMachine), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resNet, resMachine)
		m := f.master()
		mh := f.redisHosts[m]
		var rh []*netnstest.Host
		for _, r := range f.replicas(m) {
			rh = append(rh, f.redisHosts[r])
		}
		// Replication stops silently: the master acknowledges leases and
		// marks its replicas never get. Then a Sentinel promotes one.
		netnstest.Split([]*netnstest.Host{mh}, rh)
		lag := between(rng, 500*time.Millisecond, 2*time.Second)
		time.Sleep(lag)
		detail := fmt.Sprintf("replication cut for %v, then SENTINEL FAILOVER", lag.Round(time.Millisecond))
		if _, err := f.grp.SentinelDo(rng.IntN(len(f.sentHosts)), "SENTINEL", "FAILOVER", f.grp.MasterName); err != nil {
			f.t.Fatalf("SENTINEL FAILOVER refused: %v", err)
		}
		return injection{target: "redis master " + mh.Name, detail: detail, hold: between(rng, time.Second, 2*leaseTTL), heal: func() { healHosts(append(rh, mh)...) }, store: true}
	}},
	{name: "mixed-timing", only: "sentinel", handovers: true, free: freeOf(resNet, resMachine, resMix), inject: injectMixed},
	{name: "store-clock", usable: needFaketime, free: leaseRedisOr, inject: func(f *fleet, rng *rand.Rand) injection {
		off := between(rng, 300*time.Millisecond, 2*time.Second)
		if rng.IntN(2) == 0 {
			off = -off
		}
		spec := fmt.Sprintf("%+.3f", off.Seconds())
		if f.provider == "etcd" {
			f.claim(resSegRed)
			file := f.redisClock[f.segRedis]
			writeFaketime(f, file, spec)
			return injection{target: "segment redis", detail: "Redis's clock stepped " + off.String() + " (libfaketime)", hold: between(rng, time.Second, 2*leaseTTL),
				heal: func() { writeFaketime(f, file, "+0") }, kinds: f.storeKinds("redis")}
		}
		f.claim(resMachine)
		m := f.master()
		file := f.redisClock[m]
		writeFaketime(f, file, spec)
		return injection{target: "redis master " + f.redisHosts[m].Name, detail: "Redis's clock stepped " + off.String() + " (libfaketime): lease keys expire by it",
			hold: between(rng, time.Second, 2*leaseTTL), heal: func() { writeFaketime(f, file, "+0") }, store: true}
	}},
	{name: "segment-kill", free: segFree, inject: func(f *fleet, rng *rand.Rand) injection {
		hold := between(rng, 500*time.Millisecond, 3*time.Second)
		if !f.freeOf(resSegRed) || (f.freeOf(resMariaDB) && rng.IntN(2) == 0) {
			f.claim(resMariaDB)
			f.mdb.Kill()
			return injection{target: "mariadb", detail: "kill -9, restarted later", hold: hold, heal: func() { f.mdb.Restart() }, kinds: f.storeKinds("mysql")}
		}
		f.claim(resSegRed)
		f.segRedis.Kill()
		return injection{target: "segment redis", detail: "kill -9, restarted later", hold: hold, heal: func() { f.segRedis.Restart() }, kinds: f.storeKinds("redis")}
	}},
	{name: "commit-loss", free: freeOf(resMariaDB), inject: injectCommitLoss},
	{name: "segment-partition", free: freeOf(resNet), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resNet)
		s := f.pickStored(rng)
		h := f.hostOf[s]
		// The server reaches its store through a port of its own
		// loopback: dropping there cuts it off silently, as a firewall
		// would, in one direction or both.
		port := strconv.Itoa(portOf(map[string]string{"mysql": mysqlProxy, "redis": redisProxy}[f.store[s]]))
		detail := "two-way cut from its " + f.store[s] + " store"
		switch rng.IntN(3) {
		case 0:
			iptables(f, h, "-A", "OUTPUT", "-o", "lo", "-p", "tcp", "--dport", port, "-j", "DROP")
			detail = "one-way cut: its requests to its " + f.store[s] + " store dropped"
		case 1:
			iptables(f, h, "-A", "OUTPUT", "-o", "lo", "-p", "tcp", "--sport", port, "-j", "DROP")
			detail = "one-way cut: its " + f.store[s] + " store's replies dropped"
		default:
			iptables(f, h, "-A", "OUTPUT", "-o", "lo", "-p", "tcp", "--dport", port, "-j", "DROP")
			iptables(f, h, "-A", "OUTPUT", "-o", "lo", "-p", "tcp", "--sport", port, "-j", "DROP")
		}
		return f.onServer(s, detail, between(rng, time.Second, 3*leaseTTL), func() { healHosts(h) })
	}},
	{name: "disk-full", free: func(f *fleet) bool { return f.freeOf(resDisk, serverRes(f.diskSrv)) }, inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resDisk, serverRes(f.diskSrv))
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
		return f.onServer(f.diskSrv, "time guard's tmpfs filled", between(rng, time.Second, 2*leaseTTL), func() { os.Remove(fill) })
	}},
	{name: "guard-restore", free: func(f *fleet) bool { return f.freeOf(serverRes(f.guardSrv)) }, inject: func(f *fleet, rng *rand.Rand) injection {
		s := f.guardSrv
		f.claim(serverRes(s))
		// Not survived by design (docs/design/generator.md#the-time-guard): the guard is what keeps
		// a restart above what was issued. Put back as the fleet started,
		// with the clock a little behind at the restart, it lets G issue
		// again what it issued in the last seconds.
		back := between(rng, time.Second, 3*time.Second)
		s.setDown(true)
		defer s.setDown(false)
		s.kill()
		if out, err := exec.Command("sh", "-c", `rm -rf "$1"/* && cp -a "$2"/. "$1"/`, "sh", s.guardDir, f.guardCopy).CombinedOutput(); err != nil {
			f.t.Fatalf("restoring %s: %v: %s", s.guardDir, err, out)
		}
		stepClock(f, f.clock[s], -back)
		if err := s.start(); err != nil {
			f.t.Fatal(err)
		}
		in := f.onServer(s, fmt.Sprintf("kill -9, its time guard directory replaced by the copy taken at the start, restarted at once with its clock %v back", back.Round(time.Millisecond)),
			between(rng, time.Second, 3*time.Second), func() { stepClock(f, f.clock[s], 0) })
		in.kinds = []string{"rest-" + s.name, "rpc-" + s.name}
		in.class = classOldGuard
		return in
	}},
	{name: "clock", usable: needClockHook, free: always, inject: func(f *fleet, rng *rand.Rand) injection {
		s := f.pickServer(rng)
		off := clockStep(rng)
		stepClock(f, f.clock[s], off)
		return f.onServer(s, fmt.Sprintf("clock stepped %v", off), between(rng, time.Second, 2*leaseTTL), func() { stepClock(f, f.clock[s], 0) })
	}},
	{name: "embedded-clock", free: freeOf(resEmbedded), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resEmbedded)
		i := rng.IntN(len(f.embClocks))
		c := f.embClocks[i]
		off := clockStep(rng)
		c.SetShift(off)
		return injection{target: fmt.Sprintf("embedded-%d", i), detail: fmt.Sprintf("the embedded issuer's clock stepped %v", off), hold: between(rng, time.Second, 2*leaseTTL),
			heal: func() { c.SetShift(0) }, kinds: []string{"embedded"}}
	}},
	{name: "client-kill", free: freeOf(resClient), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resClient)
		c := f.clientProc
		c.kill()
		return injection{target: "client process", detail: "kill -9 (a Go client with fallback and an embedded issuer), restarted later", hold: between(rng, 200*time.Millisecond, 3*time.Second),
			heal: func() {
				if err := c.start(); err != nil {
					f.t.Fatal(err)
				}
			}, kinds: []string{"client-process", "embedded-process"}}
	}},
	{name: "client-clock", free: freeOf(resClient), inject: func(f *fleet, rng *rand.Rand) injection {
		f.claim(resClient)
		off := clockStep(rng)
		stepClock(f, f.clientProc.clock, off)
		return injection{target: "client process", detail: fmt.Sprintf("its clock stepped %v (its embedded issuer and its client's fallback)", off), hold: between(rng, time.Second, 2*leaseTTL),
			heal: func() { stepClock(f, f.clientProc.clock, 0) }, kinds: []string{"client-process", "embedded-process"}}
	}},
}

func needClockHook(f *fleet) (bool, string) {
	return f.clockHook, "this vesta build has no VESTA_NEMESIS_CLOCK_FILE hook"
}

func needFaketime(f *fleet) (bool, string) {
	return f.faketime != "", "libfaketime is not installed (scripts/deps.sh installs Debian's faketime)"
}

// writeFaketime sets a Redis's clock offset ("+1.5", "-0.3"), which it
// reads within a second.
func writeFaketime(f *fleet, file, spec string) {
	if err := os.WriteFile(file, []byte(spec+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// injectMixed runs the case where two hosts of one Redis fleet differ in
// timing, across a loss of the store's data: X (a long lease and guard
// window) holds the pair's one machine ID, Y (a short lease) keeps asking
// for it. X, cut off from the store just after a renewal, issues until its
// own deadline, while the master restarts empty; Y then claims the ID and
// waits a quarantine: on X's reach or on its own timing decides whether
// IDs repeat (a fleet record of their timings, which earlier versions
// kept, goes with the data).
func injectMixed(f *fleet, rng *rand.Rand) injection {
	f.claim(resNet, resMachine, resMix)
	x, y := f.mixLong, f.mixShort
	f.claim(serverRes(x), serverRes(y))
	if _, err := f.justRenewed(x, mixLongTTL, 10*time.Second); err != nil {
		// Not holding (Y has had the ID since the last time, or X waits
		// out a quarantine after an earlier loss): start the pair afresh
		// first.
		f.resetMix()
		if _, err := f.justRenewed(x, mixLongTTL, 45*time.Second); err != nil {
			f.t.Fatalf("mixed-timing: %v", err)
		}
	}
	st, err := f.justRenewed(x, mixLongTTL, 2*mixLongTTL)
	if err != nil {
		f.t.Fatalf("mixed-timing: %v", err)
	}
	read := time.Now()
	cut := f.cutFromStore(x)
	m := f.restartEmpty()
	hold := max(st.DeadlineIn-time.Since(read), 0) + between(rng, time.Second, 2*time.Second)
	return injection{target: "server " + x.name, detail: fmt.Sprintf("X (lease_ttl %v, time_guard.window %v) cut from the store just after a renewal (deadline in %v); redis master %s restarted empty; Y (lease_ttl %v, max_clock_skew %v, max_borrow %v) asks for the ID",
		mixLongTTL, mixLongWindow, st.DeadlineIn.Round(time.Millisecond), f.redisHosts[m].Name, mixShortTTL, mixShortSkew, time.Duration(mixShortBorrow)),
		hold: hold, heal: cut, servers: []*server{x}, store: true}
}

// resetMix starts the Redis pair afresh: both stopped (Y's clean stop
// gives the ID back exactly), X started and serving, then Y, which a full
// range refuses until X loses the ID.
func (f *fleet) resetMix() {
	x, y := f.mixLong, f.mixShort
	x.setDown(true)
	y.setDown(true)
	defer x.setDown(false)
	defer y.setDown(false)
	y.stop()
	x.stop()
	if err := x.start(); err != nil {
		f.t.Fatal(err)
	}
	if err := x.waitServing(45 * time.Second); err != nil {
		f.t.Fatalf("mixed-timing: %v", err)
	}
	if err := y.start(); err != nil {
		f.t.Fatal(err)
	}
}

// injectCommitLoss makes MariaDB lose its last commits, as a crash loses
// them with innodb_flush_log_at_trx_commit other than 1: set to 0 for a
// moment, the table locked to read what was committed, then kill -9.
// Leaf's segment mode hands the lost ranges out again (its design rests
// on the database keeping what it acknowledged): not survived by design
// (docs/design/segment-sequences.md), and what is lost is measured, to tell its repeats
// from any other.
func injectCommitLoss(f *fleet, rng *rand.Rand) injection {
	f.claim(resMariaDB)
	ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
	defer cancel()
	conn, done := f.mariadb(ctx)
	defer done()
	if _, err := conn.ExecContext(ctx, "SET GLOBAL innodb_flush_log_at_trx_commit = 0"); err != nil {
		f.t.Fatalf("commit-loss: %v", err)
	}
	lag := between(rng, 500*time.Millisecond, 1500*time.Millisecond)
	sleepCtx(ctx, lag)
	if _, err := conn.ExecContext(ctx, "LOCK TABLES leaf_alloc WRITE"); err != nil {
		f.t.Fatalf("commit-loss: %v", err)
	}
	before, err := maxIDs(ctx, conn)
	if err != nil {
		f.t.Fatalf("commit-loss: %v", err)
	}
	f.mdb.Kill()
	in := injection{target: "mariadb", hold: between(rng, 500*time.Millisecond, 2*time.Second), kinds: f.storeKinds("mysql"), class: classLostCommit}
	in.detail = fmt.Sprintf("innodb_flush_log_at_trx_commit=0 for %v, then kill -9 under a table lock; restarted later", lag.Round(time.Millisecond))
	in.heal = func() {
		f.mdb.Restart()
		ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
		defer cancel()
		conn, done := f.mariadb(ctx)
		defer done()
		after, err := maxIDs(ctx, conn)
		if err != nil {
			f.t.Fatalf("commit-loss: %v", err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		var lost []string
		for tag, b := range before {
			if a, ok := after[tag]; ok && a < b {
				f.lost[tag] = append(f.lost[tag], [2]int64{a, b})
				lost = append(lost, fmt.Sprintf("%s %d-%d", tag, a, b-1))
			}
		}
		slices.Sort(lost)
		f.t.Logf("commit-loss: numbers the lost commits had reserved: %v", cmp.Or(strings.Join(lost, ", "), "none"))
	}
	return in
}

// mariadb is a connection to the segment MariaDB's leaf database, and
// what closes it.
func (f *fleet) mariadb(ctx context.Context) (*sql.Conn, func()) {
	db, err := sql.Open("mysql", f.mdb.DSN("leaf"))
	if err != nil {
		f.t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		f.t.Fatalf("commit-loss: %v", err)
	}
	return conn, func() { conn.Close(); db.Close() }
}

// maxIDs reads every tag's max_id.
func maxIDs(ctx context.Context, conn *sql.Conn) (map[string]int64, error) {
	rows, err := conn.QueryContext(ctx, "SELECT biz_tag, max_id FROM leaf_alloc")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var tag string
		var v int64
		if err := rows.Scan(&tag, &v); err != nil {
			return nil, err
		}
		out[tag] = v
	}
	return out, rows.Err()
}

// portOf is the port of a host:port constant.
func portOf(addr string) int {
	_, p, _ := strings.Cut(addr, ":")
	n, _ := strconv.Atoi(p)
	return n
}

func iptables(f *fleet, h *netnstest.Host, args ...string) { iptablesT(f.t, h, args...) }

// held is a fault injected and not yet healed.
type held struct {
	i      int           // in the output
	healAt time.Duration // on the schedule's timeline
	heal   func()
	claims []string
}

// maxHeld bounds the faults held at once: with two, a server-aimed
// fault always finds a server no other fault holds.
const maxHeld = 2

// faultRecord is a fault injected, with what the handover count needs.
type faultRecord struct {
	report.Fault
	servers []string
	store   bool
	class   string
}

// scheduleOptions bound a schedule: it runs until end and every kind
// ran, and then on until minHandovers handovers happened (favouring the
// kinds that make them), but not past hardEnd.
type scheduleOptions struct {
	end, hardEnd time.Time
	interval     time.Duration
	minHandovers int
	// handovers counts them so far (the fleet's logs).
	handovers func() int
}

// runFaults injects faults until end, and at least one of every kind the
// fleet can run: a gap of up to interval, then the fault, held, then
// healed. About one fault in three starts while the one before it is
// still held, when the two share no resource. It returns what it
// injected and the kinds it left out, with why.
func (f *fleet) runFaults(ctx context.Context, rng *rand.Rand, o scheduleOptions, only []string) (out, failed []faultRecord, left []string) {
	var kinds []faultKind
	for _, k := range faultKinds {
		if f.provider == "sabotage" || (k.only != "" && k.only != f.provider) || (len(only) > 0 && !slices.Contains(only, k.name)) {
			continue
		}
		if k.usable != nil {
			if ok, why := k.usable(f); !ok {
				left = append(left, k.name+" left out: "+why)
				continue
			}
		}
		kinds = append(kinds, k)
	}
	out, failed = f.schedule(ctx, rng, kinds, o)
	return out, failed, left
}

// schedule is runFaults over the given kinds. Every choice is made on a
// timeline of its own, from the seed alone: what is held when the next
// fault comes does not hang on how long an injection took (the timeline
// waits for it), so a seed replays its schedule (until the run is short
// of handovers: then what the fleet did decides).
func (f *fleet) schedule(ctx context.Context, rng *rand.Rand, kinds []faultKind, o scheduleOptions) (out, failed []faultRecord) {
	if len(kinds) == 0 {
		return nil, nil
	}
	f.mu.Lock()
	f.busy = map[string]bool{}
	f.mu.Unlock()
	base := time.Now()
	var now time.Duration           // the timeline's
	pending := rng.Perm(len(kinds)) // kinds not yet injected, in order
	var active []*held              // by healAt
	// healOne heals h now and records when.
	healOne := func(h *held) {
		if h.heal != nil {
			if err := try(h.heal); err != nil {
				out[h.i].Detail += " (healing failed: " + err.Error() + ")"
			}
		}
		out[h.i].End = time.Now()
		f.mu.Lock()
		for _, r := range h.claims {
			delete(f.busy, r)
		}
		f.mu.Unlock()
	}
	// advance moves the timeline to t, healing what falls due, each at
	// its time.
	advance := func(t time.Duration) {
		for len(active) > 0 && active[0].healAt <= t && ctx.Err() == nil {
			sleepCtx(ctx, time.Until(base.Add(active[0].healAt)))
			healOne(active[0])
			active = active[1:]
		}
		now = t
		sleepCtx(ctx, time.Until(base.Add(now)))
	}
	defer func() {
		// Heal what is held, at once if the run is ending.
		for _, h := range active {
			healOne(h)
		}
	}()
	short := func() bool { return o.minHandovers > 0 && o.handovers != nil && o.handovers() < o.minHandovers }
	for {
		at := base.Add(now)
		if (len(pending) == 0 && at.After(o.end) && !short()) || (!o.hardEnd.IsZero() && at.After(o.hardEnd)) {
			if len(active) > 0 {
				advance(active[len(active)-1].healAt)
			}
			return out, failed
		}
		overlap := rng.IntN(3) == 0 && len(active) > 0 && len(active) < maxHeld
		if overlap {
			left := active[len(active)-1].healAt - now
			if left < o.interval/20 {
				overlap = false
			} else {
				advance(now + between(rng, 0, min(left*3/4, o.interval/2)))
			}
		}
		if !overlap {
			if len(active) > 0 {
				advance(active[len(active)-1].healAt)
			}
			advance(now + between(rng, o.interval/2, o.interval))
		}
		if ctx.Err() != nil {
			return out, failed
		}
		// The next pending kind free beside the held ones, else any free
		// kind (one that makes handovers, past the end of a run short of
		// them).
		pick := -1
		for j, ki := range pending {
			if len(active) == 0 || kinds[ki].free(f) {
				pick = ki
				pending = append(pending[:j:j], pending[j+1:]...)
				break
			}
		}
		if pick < 0 {
			favour := base.Add(now).After(o.end) && short()
			var free []int
			for ki, k := range kinds {
				if k.free(f) && (!favour || k.handovers) {
					free = append(free, ki)
				}
			}
			if len(free) == 0 {
				continue
			}
			pick = free[rng.IntN(len(free))]
		}
		k := kinds[pick]
		fl := faultRecord{Fault: report.Fault{Kind: k.name, Start: time.Now()}}
		f.mu.Lock()
		f.claims = nil
		f.mu.Unlock()
		var in injection
		err := try(func() { in = k.inject(f, rng) })
		f.mu.Lock()
		claims := f.claims
		f.mu.Unlock()
		// The timeline waits for the injection: every hold stays whole.
		if late := time.Since(base.Add(now)); late > 0 {
			base = base.Add(late)
		}
		fl.Target, fl.Detail, fl.Kinds, fl.store, fl.class = in.target, in.detail, in.kinds, in.store, in.class
		for _, s := range in.servers {
			fl.servers = append(fl.servers, s.name)
		}
		if err != nil {
			// Not counted as injected: the damage may not have been done.
			// What it may have left is healed at the end of the run.
			fl.Failed, fl.End = err.Error(), time.Now()
			f.t.Logf("fault %s: injecting failed: %v", k.name, err)
			failed = append(failed, fl)
			continue
		}
		if in.class != "" {
			f.mu.Lock()
			f.classes[in.class]++
			f.mu.Unlock()
		}
		with := ""
		if len(active) > 0 {
			with = fmt.Sprintf(" (beside fault %d)", active[0].i+1)
		}
		f.t.Logf("fault %d: %s %s: %s, for %v%s", len(out)+1, fl.Kind, fl.Target, fl.Detail, in.hold.Round(time.Millisecond), with)
		out = append(out, fl)
		h := &held{i: len(out) - 1, healAt: now + in.hold, heal: in.heal, claims: claims}
		f.mu.Lock()
		for _, r := range h.claims {
			f.busy[r] = true
		}
		f.mu.Unlock()
		active = append(active, h)
		slices.SortFunc(active, func(a, b *held) int { return cmp.Compare(a.healAt, b.healAt) })
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
