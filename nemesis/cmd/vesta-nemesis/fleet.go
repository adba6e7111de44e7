package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/etcdtest"
	"github.com/vesta-go/vesta/internal/testkit/mariadbtest"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/mysqlstore"
	"github.com/vesta-go/vesta/segment/redisstore"
)

// Ports every server listens on, each on its own host.
const (
	centralPort = 7000
	restPort    = 8080
	mysqlProxy  = "127.0.0.1:3306" // in each server's namespace, to the root namespace's MariaDB
	redisProxy  = "127.0.0.1:6390" // likewise to the segment Redis
	// The lease range starts at firstLeased and is as wide as the
	// primaries: a standby gets an ID only when a holder lost one. The
	// fixed IDs lie above it, and the Redis pair's range (mixID) too.
	firstLeased = 924
	mixID       = 1010
	guardID     = 1019
	staticID    = 1020
	sabotageID  = 1021
	leaseTTL    = 3 * time.Second
	maxSkew     = 200 * time.Millisecond
	restToken   = "nemesis-token-0123456789abcdef"
	segPrefix   = "nemesis.seg"
	leasePrefix = "nemesis"
	mixPrefix   = "nemesis-mix"
	// The Redis pair's timings, both within what validation accepts: the
	// long one holds, the short one takes over after a data loss.
	mixLongTTL     = 8 * time.Second
	mixLongWindow  = 10 * time.Second
	mixShortTTL    = time.Second
	mixShortSkew   = 100 * time.Millisecond
	mixShortBorrow = 0
	// longWindow is primary A's time_guard.window.
	longWindow = 10 * time.Second
)

// standbyTimings are the standbys' lease TTL (etcd's, in whole seconds
// and at least 2s, apart), max_clock_skew and max_borrow, in turn.
var standbyTimings = []struct {
	ttl, etcdTTL, skew, borrow time.Duration
}{
	{time.Second, 2 * time.Second, 100 * time.Millisecond, 500 * time.Millisecond},
	{8 * time.Second, 5 * time.Second, 500 * time.Millisecond, 2 * time.Second},
}

// The libraries preloaded into a Redis whose clock the store-clock fault
// steps: Debian's libfaketime, and before it libc's malloc-debug shim,
// because libfaketime cannot start inside a program built on jemalloc
// (Debian's redis-server) otherwise. Globs: the directory names the
// architecture.
const (
	libfaketimeGlob  = "/usr/lib/*/faketime/libfaketime.so.1"
	libcMallocDbGlob = "/usr/lib/*/libc_malloc_debug.so.0"
)

// preload finds the libraries to preload for libfaketime; ok is false
// when one is missing.
func preload() (libs string, ok bool) {
	var found []string
	for _, g := range []string{libcMallocDbGlob, libfaketimeGlob} {
		m, _ := filepath.Glob(g)
		if len(m) == 0 {
			return "", false
		}
		found = append(found, m[0])
	}
	return strings.Join(found, ":"), true
}

// fleet is one provider run's processes and what the faults need of them.
type fleet struct {
	t        *tb
	ctx      context.Context // the run's: ends the supervisors
	provider string          // "etcd", "sentinel" or "sabotage"
	bin      string
	// clockHook: the binary has the nemesis build tag's clock hook, which
	// reads VESTA_NEMESIS_CLOCK_FILE (found by its log text "nemesis
	// clock: offset now"; a build without the hook refuses the variable,
	// so it is set only with the hook); without it the clock faults on
	// servers are left out.
	clockHook bool
	// faketime: the libraries to preload for libfaketime, "" when it is
	// not installed (the store-clock fault is then left out).
	faketime  string
	primaries int
	standbys  int
	net       *netnstest.Net
	load      *netnstest.Host

	servers  []*server
	hostOf   map[*server]*netnstest.Host
	clock    map[*server]string // the clock hook file
	store    map[*server]string // "mysql" or "redis"
	leaseFwd map[*server][]*nettest.Forwarder
	diskSrv  *server // whose time guard is on the small tmpfs
	guardSrv *server // whose time guard the guard-restore fault rolls back
	mixLong  *server // the Redis pair: the long lease, then the short
	mixShort *server
	tmpfs    string
	// guardCopy is an older copy of guardSrv's time guard directory.
	guardCopy string

	etcd      *etcdtest.Cluster
	etcdHosts []*netnstest.Host

	grp        *redistest.Replicated
	redisHosts map[*redistest.Server]*netnstest.Host
	sentHosts  []*netnstest.Host
	// redisClock is the faketime file of each Redis whose clock can step.
	redisClock map[*redistest.Server]string

	clientProc *clientProc
	// embClocks are the clocks of the nemesis's own embedded issuers.
	embClocks []*core.OffsetClock

	// mu guards busy (the resources of the faults held now), claims (those
	// the fault being injected takes; see faultKind), lost and classes.
	mu     sync.Mutex
	busy   map[string]bool
	claims []string
	// lost are, per tag, the numbers a commit-loss may hand out again.
	lost map[string][][2]int64
	// classes counts the faults of each case not survived by design.
	classes map[string]int

	mdb       *mariadbtest.Server
	segRedis  *redistest.Server
	segRedis2 *redistest.Server // the sabotage's second store of one tag
	mysqlTags []string
	redisTags []string
}

func (f *fleet) allHosts() []*netnstest.Host {
	var hs []*netnstest.Host
	hs = append(hs, f.etcdHosts...)
	for _, h := range f.redisHosts {
		hs = append(hs, h)
	}
	hs = append(hs, f.sentHosts...)
	for _, s := range f.servers {
		hs = append(hs, f.hostOf[s])
	}
	return append(hs, f.load)
}

// storeHosts are the hosts of the lease store: etcd members, or the Redis
// servers and Sentinels.
func (f *fleet) storeHosts() []*netnstest.Host {
	hs := append([]*netnstest.Host(nil), f.etcdHosts...)
	for _, h := range f.redisHosts {
		hs = append(hs, h)
	}
	return append(hs, f.sentHosts...)
}

// storeEndpoints are the lease store's addresses a server may connect to.
func (f *fleet) storeEndpoints() []string {
	switch f.provider {
	case "etcd":
		return f.etcd.Endpoints()
	case "sentinel":
		eps := []string{f.grp.Master.Addr()}
		for _, r := range f.grp.Replicas {
			eps = append(eps, r.Addr())
		}
		return append(eps, f.grp.SentinelAddrs()...)
	}
	return nil
}

// buildVesta builds the vesta binary with the nemesis tag.
func buildVesta(repo, out string) error {
	cmd := exec.Command("go", "build", "-tags", "nemesis", "-o", out, "./cmd/vesta")
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func redisOn(h *netnstest.Host, port int, args ...string) redistest.Options {
	return redistest.Options{Bind: h.Addr.String(), Port: port, Wrap: h.Wrap(), Dial: h.Dial, Args: args}
}

// withFaketime makes opt's redis-server run under libfaketime, its clock
// offset read from a file of its own (every second), which it returns.
func (f *fleet) withFaketime(opt redistest.Options) (redistest.Options, string) {
	if f.faketime == "" {
		return opt, ""
	}
	file := f.t.TempDir() + "/faketime"
	if err := os.WriteFile(file, []byte("+0\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
	opt.Wrap = append(opt.Wrap, "env", "LD_PRELOAD="+f.faketime, "FAKETIME_TIMESTAMP_FILE="+file,
		"FAKETIME_CACHE_DURATION=1", "FAKETIME_DONT_FAKE_MONOTONIC=1")
	return opt, file
}

// startStores starts the segment stores (MariaDB with Leaf's table, a
// Redis) in the nemesis's namespace and creates the tags.
func (f *fleet) startStores(ctx context.Context) {
	t := f.t
	f.mdb = mariadbtest.Start(t)
	admin, err := sql.Open("mysql", f.mdb.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE leaf"); err != nil {
		t.Fatalf("CREATE DATABASE: %v", err)
	}
	ms, err := mysqlstore.Open(mysqlstore.Config{DSN: f.mdb.DSN("leaf"), Table: "leaf_alloc"})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	if err := ms.CreateTable(ctx); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	opt, clk := f.withFaketime(redistest.Options{Args: []string{"--appendonly", "yes", "--appendfsync", "always"}})
	f.segRedis = redistest.StartWith(t, opt)
	if clk != "" {
		f.redisClock[f.segRedis] = clk
	}
	rs, err := redisstore.Open(redisstore.Config{Addrs: []string{f.segRedis.Addr()}, KeyPrefix: segPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for i, name := range []string{"order", "invoice", "ticket"} {
		mt, rt := "m."+name, "r."+name
		if err := ms.Create(ctx, segment.TagInfo{Tag: mt, MaxID: 1, Step: int64(200 + 100*i)}); err != nil {
			t.Fatalf("mysql tag %s: %v", mt, err)
		}
		if err := rs.Create(ctx, segment.TagInfo{Tag: rt, MaxID: 1, Step: int64(200 + 100*i)}); err != nil {
			t.Fatalf("redis tag %s: %v", rt, err)
		}
		f.mysqlTags, f.redisTags = append(f.mysqlTags, mt), append(f.redisTags, rt)
	}
}

// startSabotageStores starts two segment Redis servers holding the same
// tag from the same start: two sequencers on one tag's range.
func (f *fleet) startSabotageStores(ctx context.Context) {
	t := f.t
	for i := range 2 {
		r := redistest.StartWith(t, redistest.Options{})
		rs, err := redisstore.Open(redisstore.Config{Addrs: []string{r.Addr()}, KeyPrefix: segPrefix})
		if err != nil {
			t.Fatal(err)
		}
		err = rs.Create(ctx, segment.TagInfo{Tag: "r.order", MaxID: 1, Step: 100})
		rs.Close()
		if err != nil {
			t.Fatalf("sabotage tag: %v", err)
		}
		if i == 0 {
			f.segRedis = r
		} else {
			f.segRedis2 = r
		}
	}
	f.redisTags = []string{"r.order"}
}

// startProvider starts the machine-ID store on hosts of its own.
func (f *fleet) startProvider() {
	switch f.provider {
	case "etcd":
		var opt etcdtest.Options
		for i := range 3 {
			h := f.net.Host(fmt.Sprintf("e%d", i))
			f.etcdHosts = append(f.etcdHosts, h)
			opt.Members = append(opt.Members, etcdtest.MemberOptions{
				Bind: h.Addr.String(), ClientPort: 12379, PeerPort: 12380, Wrap: h.Wrap(), Dial: h.Dial})
		}
		f.etcd = etcdtest.StartCluster(f.t, 3, opt)
	case "sentinel":
		aof := []string{"--appendonly", "yes"}
		m := f.net.Host("m1")
		var clocks []string
		mo, clk := f.withFaketime(redisOn(m, 6379, aof...))
		grp := redistest.Group{Master: mo}
		hosts := []*netnstest.Host{m}
		clocks = append(clocks, clk)
		for i := range 2 {
			h := f.net.Host(fmt.Sprintf("m%d", i+2))
			hosts = append(hosts, h)
			ro, clk := f.withFaketime(redisOn(h, 6379, aof...))
			grp.Replicas = append(grp.Replicas, ro)
			clocks = append(clocks, clk)
		}
		for i := range 3 {
			h := f.net.Host(fmt.Sprintf("sen%d", i+1))
			f.sentHosts = append(f.sentHosts, h)
			grp.Sentinels = append(grp.Sentinels, redisOn(h, 26379))
		}
		f.grp = redistest.StartReplicatedWith(f.t, grp)
		f.redisHosts = map[*redistest.Server]*netnstest.Host{f.grp.Master: hosts[0]}
		servers := append([]*redistest.Server{f.grp.Master}, f.grp.Replicas...)
		for i, r := range servers {
			f.redisHosts[r] = hosts[i]
			if clocks[i] != "" {
				f.redisClock[r] = clocks[i]
			}
		}
	}
}

// leaseRange is the primaries' lease range.
func (f *fleet) leaseRange() string {
	return fmt.Sprintf("%d-%d", firstLeased, firstLeased+f.primaries-1)
}

// providerEnv is what a leasing server of the fleet says about machine
// IDs: the store, key prefix, range and timing.
func (f *fleet) providerEnv(prefix, rng string, ttl, skew time.Duration) map[string]string {
	switch f.provider {
	case "etcd":
		return map[string]string{
			"VESTA_MACHINE_PROVIDERS":         "etcd",
			"VESTA_MACHINE_ETCD_ENDPOINTS":    strings.Join(f.etcd.Endpoints(), ","),
			"VESTA_MACHINE_ETCD_LEASE_TTL":    ttl.String(),
			"VESTA_MACHINE_ETCD_KEY_PREFIX":   prefix,
			"VESTA_MACHINE_ETCD_SERVER_RANGE": rng,
		}
	case "sentinel":
		return map[string]string{
			"VESTA_MACHINE_PROVIDERS":            "redis",
			"VESTA_MACHINE_REDIS_ADDRS":          strings.Join(f.grp.SentinelAddrs(), ","),
			"VESTA_MACHINE_REDIS_MASTER_NAME":    f.grp.MasterName,
			"VESTA_MACHINE_REDIS_LEASE_TTL":      ttl.String(),
			"VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW": skew.String(),
			"VESTA_MACHINE_REDIS_KEY_PREFIX":     prefix,
			"VESTA_MACHINE_REDIS_SERVER_RANGE":   rng,
		}
	}
	return map[string]string{}
}

// addServer makes a server on a host of its own. env says how it gets its
// machine ID (providerEnv, or a fixed one) and anything else that differs
// from the fleet's defaults; store is its segment store ("" none),
// guardDir its time guard's directory ("" a new one).
func (f *fleet) addServer(name string, r role, env map[string]string, store, guardDir string) *server {
	t := f.t
	h := f.net.Host(strings.ToLower(name))
	if guardDir == "" {
		guardDir = t.TempDir()
	}
	clock := t.TempDir() + "/clock"
	if err := os.WriteFile(clock, []byte("0s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	all := map[string]string{
		"VESTA_CENTRAL_LISTEN":              fmt.Sprintf("%s:%d", h.Addr, centralPort),
		"VESTA_REST_LISTEN":                 fmt.Sprintf("%s:%d", h.Addr, restPort),
		"VESTA_METRICS_LISTEN":              "",
		"VESTA_REST_TOKEN":                  restToken,
		"VESTA_TIME_GUARD_DIR":              guardDir,
		"VESTA_TIME_GUARD_MAX_STARTUP_WAIT": "30s",
	}
	for k, v := range env {
		all[k] = v
	}
	switch store {
	case "mysql":
		proxy(t, h, mysqlProxy, f.mdb.Addr())
		all["VESTA_SEGMENT_STORE"] = "mysql"
		all["VESTA_SEGMENT_DSN"] = "root@tcp(" + mysqlProxy + ")/leaf"
	case "redis", "redis2":
		target := f.segRedis
		if store == "redis2" {
			target, store = f.segRedis2, "redis"
		}
		proxy(t, h, redisProxy, target.Addr())
		all["VESTA_SEGMENT_STORE"] = "redis"
		all["VESTA_SEGMENT_REDIS_ADDRS"] = redisProxy
		all["VESTA_SEGMENT_REDIS_KEY_PREFIX"] = segPrefix
	}
	if store != "" {
		all["VESTA_SEGMENT_REFRESH_TAGS"] = "1s"
		all["VESTA_SEGMENT_TARGET_DURATION"] = "1s"
	}
	if f.clockHook {
		all["VESTA_NEMESIS_CLOCK_FILE"] = clock
	}
	s := newServer(t, name, r, f.bin, all, h.Wrap())
	s.central, s.rest, s.guardDir = all["VESTA_CENTRAL_LISTEN"], all["VESTA_REST_LISTEN"], guardDir
	f.servers = append(f.servers, s)
	f.hostOf[s], f.clock[s], f.store[s] = h, clock, store
	if r.leases() {
		f.leaseFwd[s] = leaseForwarders(t, h, f.storeEndpoints())
	}
	return s
}

// smallTmpfs mounts a 4 MiB tmpfs for one server's time guard.
func (f *fleet) smallTmpfs() string {
	dir := f.t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		f.t.Fatalf("mount tmpfs on %s: %v: %s", dir, err, out)
	}
	f.t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			f.t.Logf("umount %s: %v: %s", dir, err, out)
		}
	})
	f.tmpfs = dir
	return dir
}

// fleetOptions shape a fleet.
type fleetOptions struct {
	primaries, standbys int
}

// startFleet builds the whole fleet of one provider run, waits until
// every server that must serve does, and supervises them until ctx ends.
func startFleet(ctx context.Context, t *tb, provider, bin string, opt fleetOptions) *fleet {
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	libs, _ := preload()
	f := &fleet{t: t, ctx: ctx, provider: provider, bin: bin, clockHook: bytes.Contains(b, []byte("nemesis clock: offset now")),
		faketime: libs, primaries: opt.primaries, standbys: opt.standbys,
		hostOf: map[*server]*netnstest.Host{}, clock: map[*server]string{}, store: map[*server]string{},
		leaseFwd: map[*server][]*nettest.Forwarder{}, redisClock: map[*redistest.Server]string{},
		busy: map[string]bool{}, lost: map[string][][2]int64{}, classes: map[string]int{}}
	f.net = netnstest.New(t)
	f.load = f.net.Host("load")
	var first, later []*server // later: refused at first (a full range)
	if provider == "sabotage" {
		// Unsafe on purpose: two servers share one fixed machine ID, and
		// each hands out one tag's numbers from a store of its own that
		// starts where the other does.
		f.startSabotageStores(ctx)
		fixed := map[string]string{"VESTA_MACHINE_PROVIDERS": "static", "VESTA_MACHINE_ID": strconv.Itoa(sabotageID)}
		first = append(first, f.addServer("X", roleSabotage, fixed, "redis", ""), f.addServer("Y", roleSabotage, fixed, "redis2", ""))
	} else {
		f.startStores(ctx)
		f.startProvider()
		main := f.providerEnv(leasePrefix, f.leaseRange(), leaseTTL, maxSkew)
		stores := []string{"mysql", "redis", "mysql"}
		for i := range f.primaries {
			env := maps.Clone(main)
			if i == 0 {
				// A reserves further ahead (a valid setting): past its
				// deadline, only its fence keeps it from issuing.
				env["VESTA_TIME_GUARD_WINDOW"] = longWindow.String()
			}
			first = append(first, f.addServer(string(rune('A'+i)), rolePrimary, env, stores[i%len(stores)], ""))
		}
		// A leased ID's time guard is its mark in the store; a fixed ID's
		// is the file the full-disk fault hits.
		f.diskSrv = f.addServer("D", roleFixed, map[string]string{"VESTA_MACHINE_PROVIDERS": "static", "VESTA_MACHINE_ID": strconv.Itoa(staticID)}, "redis", f.smallTmpfs())
		f.guardSrv = f.addServer("G", roleGuard, map[string]string{"VESTA_MACHINE_PROVIDERS": "static", "VESTA_MACHINE_ID": strconv.Itoa(guardID)}, "", "")
		first = append(first, f.diskSrv, f.guardSrv)
		for i := range f.standbys {
			// The standbys' timings differ from the primaries' and from
			// each other's, within what validation accepts: no host's
			// own timing may matter to another's quarantine.
			t := standbyTimings[i%len(standbyTimings)]
			ttl := t.ttl
			if provider == "etcd" {
				ttl = t.etcdTTL
			}
			env := f.providerEnv(leasePrefix, f.leaseRange(), ttl, t.skew)
			env["VESTA_ID_MAX_BORROW"] = t.borrow.String()
			later = append(later, f.addServer(fmt.Sprintf("S%d", i+1), roleStandby, env, "", ""))
		}
		if provider == "sentinel" {
			// The pair of timings, under a prefix of their own, on one
			// machine ID: the long lease holds it, the short one keeps
			// asking (mixed-timing).
			rng := fmt.Sprintf("%d-%d", mixID, mixID)
			long := f.providerEnv(mixPrefix, rng, mixLongTTL, maxSkew)
			long["VESTA_TIME_GUARD_WINDOW"] = mixLongWindow.String()
			short := f.providerEnv(mixPrefix, rng, mixShortTTL, mixShortSkew)
			short["VESTA_ID_MAX_BORROW"] = fmt.Sprint(mixShortBorrow)
			f.mixLong = f.addServer("X", roleMix, long, "", "")
			f.mixShort = f.addServer("Y", roleMix, short, "", "")
			first = append(first, f.mixLong)
			later = append(later, f.mixShort)
		}
	}
	for _, s := range first {
		if err := s.start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range first {
		if err := s.waitServing(90 * time.Second); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s serves: central %s, REST %s, machines %v", s.name, s.central, s.rest, keys(s.heldMachines()))
	}
	if f.guardSrv != nil {
		f.copyGuard()
	}
	for _, s := range later {
		if err := s.start(); err != nil {
			t.Fatal(err)
		}
	}
	if provider != "sabotage" {
		for _, s := range f.servers {
			go s.supervise(ctx, f.isBusy)
		}
	}
	return f
}

// copyGuard keeps a copy of G's time guard directory as it is now: an
// older copy by the time the guard-restore fault puts it back.
func (f *fleet) copyGuard() {
	dst := f.t.TempDir()
	out, err := exec.Command("cp", "-a", f.guardSrv.guardDir+"/.", dst).CombinedOutput()
	if err != nil {
		f.t.Fatalf("copying %s: %v: %s", f.guardSrv.guardDir, err, out)
	}
	f.guardCopy = dst
}

// isBusy says whether a fault holds s.
func (f *fleet) isBusy(s *server) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.busy[serverRes(s)]
}

// runLogs are every run of every server, their logs up to now.
func (f *fleet) runLogs() []*runLog {
	var out []*runLog
	for _, s := range f.servers {
		out = append(out, s.runLogs()...)
	}
	return out
}

// handoverCount is how many handovers the logs show so far.
func (f *fleet) handoverCount() int { return len(handovers(claims(f.runLogs()))) }

// serversOf are the servers of the roles given.
func (f *fleet) serversOf(roles ...role) []*server {
	var out []*server
	for _, s := range f.servers {
		for _, r := range roles {
			if s.role == r {
				out = append(out, s)
			}
		}
	}
	return out
}

// leaseStatus is what a server's GET /v1/status says of its lease.
type leaseStatus struct {
	State      string
	RenewalIn  time.Duration
	DeadlineIn time.Duration
}

// status asks s for its lease's state, through the load host.
func (f *fleet) status(ctx context.Context, s *server) (leaseStatus, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: f.load.Dial}, Timeout: time.Second}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+s.rest+"/v1/status", nil)
	if err != nil {
		return leaseStatus{}, err
	}
	req.Host = s.rest
	req.Header.Set("Authorization", "Bearer "+restToken)
	code, b, err := nettest.Do(hc, req)
	if err != nil {
		return leaseStatus{}, err
	}
	if code != 200 {
		return leaseStatus{}, fmt.Errorf("%s /v1/status: %d %s", s.name, code, b)
	}
	var body struct {
		Lease *struct {
			State        string   `json:"state"`
			RenewalInMs  *float64 `json:"renewal_in_ms"`
			DeadlineInMs *float64 `json:"deadline_in_ms"`
		} `json:"lease"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return leaseStatus{}, err
	}
	if body.Lease == nil || body.Lease.RenewalInMs == nil || body.Lease.DeadlineInMs == nil {
		return leaseStatus{}, fmt.Errorf("%s /v1/status: no lease in a store", s.name)
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	return leaseStatus{State: body.Lease.State, RenewalIn: ms(*body.Lease.RenewalInMs), DeadlineIn: ms(*body.Lease.DeadlineInMs)}, nil
}

// justRenewed waits until s has just renewed its lease (its next renewal
// is at least most of a period away) and returns its status then, for a
// fault timed from the renewal. ttl is s's lease TTL.
func (f *fleet) justRenewed(s *server, ttl time.Duration, within time.Duration) (leaseStatus, error) {
	ctx, cancel := context.WithTimeout(f.ctx, within)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		st, err := f.status(ctx, s)
		if err == nil && st.State == "held" && st.RenewalIn >= ttl/3-ttl/12 {
			return st, nil
		}
		if err == nil {
			err = fmt.Errorf("%s: lease %s, next renewal in %v", s.name, st.State, st.RenewalIn)
		}
		last = err
		sleepCtx(ctx, 20*time.Millisecond)
	}
	return leaseStatus{}, fmt.Errorf("%s: no fresh renewal within %v: %v", s.name, within, last)
}
