package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
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

// A fault kind: inject does the damage and returns what it hit, how long
// to keep it, and how to heal it. Two faults may overlap: free says
// whether this kind can start now beside the ones held (their resources
// are busy); inject claims what it takes (f.claim), and picks among
// servers no other fault holds.
type faultKind struct {
	name string
	// only, when set, is the one provider the kind applies to.
	only   string
	free   func(f *fleet) bool
	inject func(f *fleet, rng *rand.Rand) (target, detail string, hold time.Duration, heal func())
}

// Resources two held faults must not share: "net" (every partition heals
// by flushing a host's rules), "machine-store" (the lease store as a
// whole), the segment stores, the small disk, the client process, and
// each server by name.
const (
	resNet     = "net"
	resMachine = "machine-store"
	resMariaDB = "mariadb"
	resSegRed  = "segment-redis"
	resDisk    = "disk"
	resClient  = "client-process"
)

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// claim marks resources as taken by the fault being injected.
func (f *fleet) claim(res ...string) { f.claims = append(f.claims, res...) }

func (f *fleet) freeOf(res ...string) bool {
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
		if !f.busy[serverRes(s)] {
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

func (f *fleet) pickServer(rng *rand.Rand) *server { return f.pickFrom(rng, f.servers) }

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
	return f.pickFrom(rng, ss)
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

var faultKinds = []faultKind{
	{"kill", "", always, func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		s := f.pickServer(rng)
		s.kill()
		return "server " + s.name, "kill -9, restarted later", between(rng, 200*time.Millisecond, 3*time.Second), func() {
			if err := s.start(); err != nil {
				f.t.Fatal(err)
			}
		}
	}},
	{"pause", "", always, func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		s := f.pickLeased(rng)
		s.signal(syscall.SIGSTOP)
		return "server " + s.name, "SIGSTOP past the lease TTL", between(rng, leaseTTL+time.Second, 2*leaseTTL), func() { s.signal(syscall.SIGCONT) }
	}},
	{"partition", "", freeOf(resNet), func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		f.claim(resNet)
		s := f.pickLeased(rng)
		name, m := f.member(rng)
		h := f.hostOf[s]
		netnstest.Split([]*netnstest.Host{h}, []*netnstest.Host{m})
		return "server " + s.name, "two-way cut from " + name, between(rng, time.Second, 2*leaseTTL), func() { healHosts(h, m) }
	}},
	{"oneway", "", freeOf(resNet), func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
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
		return "server " + s.name, "one-way cut: drops packets " + dir + " " + name, between(rng, time.Second, 2*leaseTTL), func() { healHosts(h) }
	}},
	{"split", "", freeOf(resNet, resMachine), func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		f.claim(resNet, resMachine)
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
	{"store-kill", "", freeOf(resMachine), func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
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
			return what + m.Name(), "kill -9, restarted later", between(rng, time.Second, 2*leaseTTL), func() { m.Restart() }
		}
		m := f.master()
		switch rng.IntN(4) {
		case 0:
			r := f.replicas(m)[rng.IntN(2)]
			r.Kill()
			return "redis replica " + f.redisHosts[r].Name, "kill -9, restarted later", between(rng, time.Second, 2*leaseTTL), func() { r.Restart() }
		case 1:
			i := rng.IntN(len(f.sentHosts))
			p := f.grp.Sentinel(i)
			p.Kill()
			return "sentinel " + f.sentHosts[i].Name, "kill -9, restarted later", between(rng, time.Second, 2*leaseTTL), func() { p.Restart() }
		}
		m.Kill()
		return "redis master " + f.redisHosts[m].Name, "kill -9 (Sentinel fails over), restarted later", between(rng, 2*time.Second, 3*leaseTTL), func() { m.Restart() }
	}},
	{"flushall", "", leaseRedisOr, func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		if f.provider == "etcd" {
			f.claim(resSegRed)
			f.segRedis.FlushAll()
			return "segment redis", "FLUSHALL", 0, func() {}
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
		return "redis master " + f.redisHosts[m].Name, "FLUSHALL", 0, func() {}
	}},
	{"restart-empty", "", leaseRedisOr, func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		if f.provider == "etcd" {
			f.claim(resSegRed)
			f.segRedis.KillAndRestart(nil)
			return "segment redis", "kill -9, restarted with its data files deleted", 0, func() {}
		}
		f.claim(resMachine)
		m := f.master()
		m.KillAndRestart(nil)
		// It starts with the command line it was first given, a replica's
		// for one promoted since: come back as the master it was, as a
		// server whose config Sentinel rewrote would.
		if info, err := m.Do("INFO", "replication"); err == nil && strings.Contains(info, "role:slave") {
			if _, err := m.Do("REPLICAOF", "NO", "ONE"); err != nil {
				f.t.Fatalf("REPLICAOF NO ONE on %s: %v", f.redisHosts[m].Name, err)
			}
		}
		return "redis master " + f.redisHosts[m].Name, "kill -9, restarted at once with its data files deleted", 0, func() {}
	}},
	{"failover", "sentinel", freeOf(resNet, resMachine), func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
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
			detail += " (refused: " + err.Error() + ")"
		}
		return "redis master " + mh.Name, detail, between(rng, time.Second, 2*leaseTTL), func() { healHosts(append(rh, mh)...) }
	}},
	{"segment-kill", "", segFree, func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		hold := between(rng, 500*time.Millisecond, 3*time.Second)
		if !f.freeOf(resSegRed) || (f.freeOf(resMariaDB) && rng.IntN(2) == 0) {
			f.claim(resMariaDB)
			f.mdb.Kill()
			return "mariadb", "kill -9, restarted later", hold, func() { f.mdb.Restart() }
		}
		f.claim(resSegRed)
		f.segRedis.Kill()
		return "segment redis", "kill -9, restarted later", hold, func() { f.segRedis.Restart() }
	}},
	{"segment-partition", "", freeOf(resNet), func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
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
		return "server " + s.name, detail, between(rng, time.Second, 3*leaseTTL), func() { healHosts(h) }
	}},
	{"disk-full", "", func(f *fleet) bool { return f.freeOf(resDisk, serverRes(f.diskSrv)) }, func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
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
		return "server " + f.diskSrv.name, "time guard's tmpfs filled", between(rng, time.Second, 2*leaseTTL), func() { os.Remove(fill) }
	}},
	{"clock", "", always, func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
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
	{"client-kill", "", freeOf(resClient), func(f *fleet, rng *rand.Rand) (string, string, time.Duration, func()) {
		f.claim(resClient)
		c := f.clientProc
		c.kill()
		return "client process", "kill -9 (a Go client with fallback and an embedded issuer), restarted later", between(rng, 200*time.Millisecond, 3*time.Second), func() {
			if err := c.start(); err != nil {
				f.t.Fatal(err)
			}
		}
	}},
}

// portOf is the port of a host:port constant.
func portOf(addr string) int {
	_, p, _ := strings.Cut(addr, ":")
	n, _ := strconv.Atoi(p)
	return n
}

func iptables(f *fleet, h *netnstest.Host, args ...string) {
	cmd := h.Command("iptables", append([]string{"-w", "5"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("iptables %v in %s: %v\n%s", args, h.NS, err, out)
	}
}

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

// runFaults injects faults until end, and at least one of every kind: a
// gap of up to interval, then the fault, held, then healed. About one
// fault in three starts while the one before it is still held, when the
// two share no resource. It returns what it injected.
func (f *fleet) runFaults(ctx context.Context, rng *rand.Rand, end time.Time, interval time.Duration) []report.Fault {
	var kinds []faultKind
	for _, k := range faultKinds {
		if f.provider == "sabotage" || (k.name == "clock" && !f.clockHook) || (k.only != "" && k.only != f.provider) {
			continue
		}
		kinds = append(kinds, k)
	}
	return f.schedule(ctx, rng, kinds, end, interval)
}

// schedule is runFaults over the given kinds. Every choice is made on a
// timeline of its own, from the seed alone: what is held when the next
// fault comes does not hang on how long an injection took (the timeline
// waits for it), so a seed replays its schedule.
func (f *fleet) schedule(ctx context.Context, rng *rand.Rand, kinds []faultKind, end time.Time, interval time.Duration) []report.Fault {
	if len(kinds) == 0 {
		return nil
	}
	f.busy = map[string]bool{}
	base := time.Now()
	var now time.Duration           // the timeline's
	pending := rng.Perm(len(kinds)) // kinds not yet injected, in order
	var out []report.Fault
	var active []*held // by healAt
	// advance moves the timeline to t, healing what falls due, each at
	// its time.
	// healOne heals h now and records when and whom it touched.
	healOne := func(h *held) {
		if h.heal != nil {
			if err := try(h.heal); err != nil {
				out[h.i].Detail += " (healing failed: " + err.Error() + ")"
			}
		}
		out[h.i].End = time.Now()
		out[h.i].Kinds = f.affected(out[h.i])
		for _, r := range h.claims {
			delete(f.busy, r)
		}
	}
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
	for {
		if len(pending) == 0 && base.Add(now).After(end) {
			if len(active) > 0 {
				advance(active[len(active)-1].healAt)
			}
			return out
		}
		overlap := rng.IntN(3) == 0 && len(active) > 0 && len(active) < maxHeld
		if overlap {
			left := active[len(active)-1].healAt - now
			if left < interval/20 {
				overlap = false
			} else {
				advance(now + between(rng, 0, min(left*3/4, interval/2)))
			}
		}
		if !overlap {
			if len(active) > 0 {
				advance(active[len(active)-1].healAt)
			}
			advance(now + between(rng, interval/2, interval))
		}
		if ctx.Err() != nil {
			return out
		}
		// The next pending kind free beside the held ones, else any free
		// kind.
		pick := -1
		for j, ki := range pending {
			if len(active) == 0 || kinds[ki].free(f) {
				pick = ki
				pending = append(pending[:j:j], pending[j+1:]...)
				break
			}
		}
		if pick < 0 {
			var free []int
			for ki, k := range kinds {
				if k.free(f) {
					free = append(free, ki)
				}
			}
			if len(free) == 0 {
				continue
			}
			pick = free[rng.IntN(len(free))]
		}
		k := kinds[pick]
		fl := report.Fault{Kind: k.name, Start: time.Now()}
		var heal func()
		var hold time.Duration
		f.claims = nil
		if err := try(func() { fl.Target, fl.Detail, hold, heal = k.inject(f, rng) }); err != nil {
			fl.Detail += " (injecting failed: " + err.Error() + ")"
		}
		// The timeline waits for the injection: every hold stays whole.
		if late := time.Since(base.Add(now)); late > 0 {
			base = base.Add(late)
		}
		with := ""
		if len(active) > 0 {
			with = fmt.Sprintf(" (beside fault %d)", active[0].i+1)
		}
		f.t.Logf("fault %d: %s %s: %s, for %v%s", len(out)+1, fl.Kind, fl.Target, fl.Detail, hold.Round(time.Millisecond), with)
		out = append(out, fl)
		h := &held{i: len(out) - 1, healAt: now + hold, heal: heal, claims: f.claims}
		for _, r := range h.claims {
			f.busy[r] = true
		}
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

// affected names the caller kinds a fault may touch; nil is all. A fault
// on one server touches that server's own callers ("rest-A", "rpc-A",
// "seq-mariadb-A") and the clients over several servers ("client", the
// seq client of its store); a segment store's fault, every kind of that
// store; the client process's, its callers; a machine-ID provider's
// fault (store-kill, split, failover, the lease master's FLUSHALL),
// every kind.
func (f *fleet) affected(fl report.Fault) []string {
	switch {
	case fl.Target == "mariadb":
		return f.storeKinds("mysql")
	case fl.Target == "segment redis":
		return f.storeKinds("redis")
	case fl.Target == "client process":
		return []string{"client-process", "embedded-process"}
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
