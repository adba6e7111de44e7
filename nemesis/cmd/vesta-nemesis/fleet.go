package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/vesta-go/vesta/internal/testkit/etcdtest"
	"github.com/vesta-go/vesta/internal/testkit/mariadbtest"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
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
	// The lease range; the fixed IDs lie above it.
	leaseRange  = "924-1009"
	staticID    = 1020
	sabotageID  = 1021
	leaseTTL    = 3 * time.Second
	maxSkew     = 200 * time.Millisecond
	restToken   = "nemesis-token-0123456789abcdef"
	segPrefix   = "nemesis.seg"
	leasePrefix = "nemesis"
)

// member is one store process that faults can hit: an etcd member or a
// Redis server of the Sentinel group.
type fleet struct {
	t        *tb
	provider string // "etcd", "sentinel" or "sabotage"
	bin      string
	// clockHook: the binary has the nemesis build tag's clock hook, which
	// reads VESTA_NEMESIS_CLOCK_FILE (found by its log text "nemesis
	// clock: offset now": conf names the variable in every build); without
	// it the clock fault is left out.
	clockHook bool
	net       *netnstest.Net
	load      *netnstest.Host

	servers []*server
	hostOf  map[*server]*netnstest.Host
	clock   map[*server]string // the clock hook file
	store   map[*server]string // "mysql" or "redis"
	diskSrv *server            // whose time guard is on the small tmpfs
	tmpfs   string

	etcd      *etcdtest.Cluster
	etcdHosts []*netnstest.Host

	grp        *redistest.Replicated
	redisHosts map[*redistest.Server]*netnstest.Host
	sentHosts  []*netnstest.Host

	clientProc *clientProc

	// busy: the resources of the faults held now; claims: those the
	// fault being injected takes (see faultKind).
	busy   map[string]bool
	claims []string

	mdb       *mariadbtest.Server
	segRedis  *redistest.Server
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

// proxy forwards connections made to addr inside h's namespace to target
// in the nemesis's own namespace, until the run ends.
func proxy(t *tb, h *netnstest.Host, addr, target string) {
	ln, err := h.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy on %s %s: %v", h.Name, addr, err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				u, err := net.DialTimeout("tcp", target, 2*time.Second)
				if err != nil {
					c.Close()
					return
				}
				mu.Lock()
				conns = append(conns, c, u)
				mu.Unlock()
				go func() { io.Copy(u, c); u.Close() }()
				io.Copy(c, u)
				c.Close()
			}()
		}
	}()
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
	f.segRedis = redistest.StartWith(t, redistest.Options{Args: []string{"--appendonly", "yes", "--appendfsync", "always"}})
	rs, err := redisstore.Open(redisstore.Config{Addrs: []string{f.segRedis.Addr()}, Prefix: segPrefix})
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
		grp := redistest.Group{Master: redisOn(m, 6379, aof...)}
		hosts := []*netnstest.Host{m}
		for i := range 2 {
			h := f.net.Host(fmt.Sprintf("m%d", i+2))
			hosts = append(hosts, h)
			grp.Replicas = append(grp.Replicas, redisOn(h, 6379, aof...))
		}
		for i := range 3 {
			h := f.net.Host(fmt.Sprintf("s%d", i+1))
			f.sentHosts = append(f.sentHosts, h)
			grp.Sentinels = append(grp.Sentinels, redisOn(h, 26379))
		}
		f.grp = redistest.StartReplicatedWith(f.t, grp)
		f.redisHosts = map[*redistest.Server]*netnstest.Host{f.grp.Master: hosts[0]}
		for i, r := range f.grp.Replicas {
			f.redisHosts[r] = hosts[i+1]
		}
	}
}

// providerEnv is what every server of the fleet shares about machine IDs.
func (f *fleet) providerEnv() map[string]string {
	switch f.provider {
	case "etcd":
		return map[string]string{
			"VESTA_MACHINE_ETCD_ENDPOINTS":    strings.Join(f.etcd.Endpoints(), ","),
			"VESTA_MACHINE_ETCD_LEASE_TTL":    leaseTTL.String(),
			"VESTA_MACHINE_ETCD_KEY_PREFIX":   leasePrefix,
			"VESTA_MACHINE_ETCD_SERVER_RANGE": leaseRange,
		}
	case "sentinel":
		return map[string]string{
			"VESTA_MACHINE_REDIS_ADDRS":          strings.Join(f.grp.SentinelAddrs(), ","),
			"VESTA_MACHINE_REDIS_MASTER_NAME":    f.grp.MasterName,
			"VESTA_MACHINE_REDIS_LEASE_TTL":      leaseTTL.String(),
			"VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW": maxSkew.String(),
			"VESTA_MACHINE_REDIS_KEY_PREFIX":     leasePrefix,
			"VESTA_MACHINE_REDIS_SERVER_RANGE":   leaseRange,
		}
	}
	return map[string]string{}
}

// addServer makes a server on a host of its own; machine 0 leases from
// the provider, else it is the fixed ID. store is its segment store
// ("" none).
func (f *fleet) addServer(name string, machine int, store string, guardDir string) *server {
	t := f.t
	h := f.net.Host(strings.ToLower(name))
	env := f.providerEnv()
	if machine == 0 {
		env["VESTA_MACHINE_PROVIDERS"] = map[string]string{"etcd": "etcd", "sentinel": "redis"}[f.provider]
	} else {
		env["VESTA_MACHINE_PROVIDERS"] = "static"
		env["VESTA_MACHINE_ID"] = strconv.Itoa(machine)
	}
	if guardDir == "" {
		guardDir = t.TempDir()
	}
	clock := t.TempDir() + "/clock"
	if err := os.WriteFile(clock, []byte("0s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"VESTA_CENTRAL_LISTEN":              fmt.Sprintf("%s:%d", h.Addr, centralPort),
		"VESTA_REST_LISTEN":                 fmt.Sprintf("%s:%d", h.Addr, restPort),
		"VESTA_METRICS_LISTEN":              "",
		"VESTA_REST_TOKEN":                  restToken,
		"VESTA_TIME_GUARD_DIR":              guardDir,
		"VESTA_TIME_GUARD_MAX_STARTUP_WAIT": "30s",
	} {
		env[k] = v
	}
	switch store {
	case "mysql":
		proxy(t, h, mysqlProxy, f.mdb.Addr())
		env["VESTA_SEGMENT_STORE"] = "mysql"
		env["VESTA_SEGMENT_DSN"] = "root@tcp(" + mysqlProxy + ")/leaf"
	case "redis":
		proxy(t, h, redisProxy, f.segRedis.Addr())
		env["VESTA_SEGMENT_STORE"] = "redis"
		env["VESTA_SEGMENT_REDIS_ADDRS"] = redisProxy
		env["VESTA_SEGMENT_REDIS_KEY_PREFIX"] = segPrefix
	}
	if store != "" {
		env["VESTA_SEGMENT_REFRESH_TAGS"] = "1s"
		env["VESTA_SEGMENT_TARGET_DURATION"] = "1s"
	}
	if f.clockHook {
		env["VESTA_NEMESIS_CLOCK_FILE"] = clock
	}
	s := newServer(t, name, f.bin, env, h.Wrap())
	f.servers = append(f.servers, s)
	f.hostOf[s], f.clock[s], f.store[s] = h, clock, store
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

// startFleet builds the whole fleet of one provider run and waits until
// every server serves.
func startFleet(ctx context.Context, t *tb, provider, bin string) *fleet {
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{t: t, provider: provider, bin: bin, clockHook: bytes.Contains(b, []byte("nemesis clock: offset now")), hostOf: map[*server]*netnstest.Host{},
		clock: map[*server]string{}, store: map[*server]string{}}
	f.net = netnstest.New(t)
	f.load = f.net.Host("load")
	if provider == "sabotage" {
		// Unsafe on purpose: two servers share one fixed machine ID.
		f.addServer("X", sabotageID, "", "")
		f.addServer("Y", sabotageID, "", "")
	} else {
		f.startStores(ctx)
		f.startProvider()
		f.addServer("A", 0, "mysql", "")
		f.addServer("B", 0, "redis", "")
		f.addServer("C", 0, "mysql", "")
		// A leased ID's time guard is its mark in the store; a fixed ID's
		// is the file the full-disk fault hits.
		f.diskSrv = f.addServer("D", staticID, "redis", f.smallTmpfs())
	}
	for _, s := range f.servers {
		if err := s.start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range f.servers {
		if err := s.waitServing(60 * time.Second); err != nil {
			t.Fatal(err)
		}
		c, r := s.addrs()
		t.Logf("%s serves: central %s, REST %s, machines %v", s.name, c, r, keys(s.heldMachines()))
	}
	return f
}
