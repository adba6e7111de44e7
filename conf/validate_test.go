package conf_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
)

func TestDefaultsValidate(t *testing.T) {
	if err := conf.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestZeroConfigInvalid(t *testing.T) {
	err := conf.Config{}.Validate()
	if !errors.Is(err, conf.ErrConfig) {
		t.Fatalf("Validate of the zero Config = %v; want ErrConfig", err)
	}
}

func intp(i int) *int { return &i }

func mustRange(t testing.TB, s string) core.MachineRange {
	t.Helper()
	r, err := core.ParseMachineRange(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// invalidCases are invalid values of every key that has any, each changing
// DefaultConfig() so that exactly one key is wrong.
func invalidCases(t testing.TB) []struct {
	key  string
	set  func(*conf.Config)
	want string
} {
	return []struct {
		key  string
		set  func(*conf.Config)
		want string
	}{
		{"id.layout", func(c *conf.Config) { c.ID.Layout = 7 }, "Layout 7; want Sorted (0), Vesta (1) or Leaf (2)"},
		{"id.type", func(c *conf.Config) { c.ID.Layout = core.Leaf }, "max-peak; the leaf layout (id.layout) counts milliseconds only"},
		{"id.epoch", func(c *conf.Config) {
			c.ID.Layout, c.ID.Type, c.ID.Epoch = core.Leaf, core.MinGranularity, core.SortedEpoch
		},
			"the leaf layout counts from Leaf's own epoch 2010-11-04T01:42:54.657Z (1288834974657 ms) only"},
		{"id.version", func(c *conf.Config) { c.ID.Layout, c.ID.Type, c.ID.Version = core.Leaf, core.MinGranularity, 1 }, "the leaf layout's top bit is the sign bit"},
		{"id.type", func(c *conf.Config) { c.ID.Type = 2 }, "Type 2; want MaxPeak (0) or MinGranularity (1)"},
		{"id.epoch", func(c *conf.Config) { c.ID.Epoch = time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC) }, "epoch 1960-01-01T00:00:00Z outside"},
		{"id.epoch", func(c *conf.Config) { c.ID.Epoch = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC) }, "epoch 2200-01-01T00:00:00Z outside"},
		{"id.epoch", func(c *conf.Config) { c.ID.Epoch = time.Date(2025, 1, 1, 0, 0, 0, 500, time.UTC) }, "not a whole millisecond"},
		{"id.version", func(c *conf.Config) { c.ID.Version = 2 }, "Version 2; want 0 or 1"},
		{"id.max_borrow", func(c *conf.Config) { c.ID.MaxBorrow = -time.Second }, "MaxBorrow -1s is negative"},
		{"id.max_borrow", func(c *conf.Config) { c.ID.MaxBorrow = 25 * time.Hour }, "MaxBorrow 25h0m0s; want at most 24h"},
		{"machine.providers", func(c *conf.Config) { c.Machine.Providers = nil }, "empty; want one or more of static, iptable, redis, k8s"},
		{"machine.providers", func(c *conf.Config) { c.Machine.Providers = []string{"zookeeper"} }, `"zookeeper"; want static, iptable, redis, k8s or etcd`},
		{"machine.providers", func(c *conf.Config) { c.Machine.Providers = []string{"Static"} }, `"Static"; want`},
		{"machine.providers", func(c *conf.Config) { c.Machine.Providers = []string{"static", "k8s", "static"} }, `"static" listed twice`},
		{"machine.id", func(c *conf.Config) { c.Machine.ID = intp(-1) }, "-1; want 0-1023"},
		{"machine.id", func(c *conf.Config) { c.Machine.ID = intp(1024) }, "1024; want 0-1023"},
		{"machine.id", func(c *conf.Config) {
			c.Machine.EmbeddedRange = mustRange(t, "0-99")
			c.Machine.ID = intp(500)
		}, "500 lies in no range; want an ID in machine.embedded_range 0-99 or machine.server_range 924-1023"},
		{"machine.ip_table", func(c *conf.Config) { c.Machine.IPTable = map[string]int{"10.1.2": 924} }, `key "10.1.2"; want an IP address`},
		{"machine.ip_table", func(c *conf.Config) { c.Machine.IPTable = map[string]int{"10.1.2.3": 1024} }, `"10.1.2.3": 1024; want 0-1023`},
		{"machine.ip_table", func(c *conf.Config) { c.Machine.IPTable = map[string]int{"10.1.2.3": -5} }, `"10.1.2.3": -5; want 0-1023`},
		{"machine.ip_table", func(c *conf.Config) { c.Machine.IPTable = map[string]int{"::1": 924, "0::1": 925} }, `"0::1" and "::1" are the same address`},
		{"machine.ip_table", func(c *conf.Config) {
			c.Machine.IPTable = map[string]int{"10.1.2.3": 924, "::ffff:10.1.2.3": 925}
		}, "are the same address"},
		{"machine.ip_table", func(c *conf.Config) { c.Machine.Providers = []string{"iptable"} }, "empty; the iptable provider"},
		{"machine.ip_table", func(c *conf.Config) {
			c.Machine.ServerRange = mustRange(t, "1000-1023")
			c.Machine.IPTable = map[string]int{"10.1.2.3": 950}
		}, `"10.1.2.3": 950 lies in no range`},
		{"machine.k8s_offset", func(c *conf.Config) { c.Machine.K8sOffset = -1 }, "K8sOffset: -1; want 0-1023"},
		{"machine.k8s_offset", func(c *conf.Config) { c.Machine.K8sOffset = 1024 }, "K8sOffset: 1024; want 0-1023"},
		{"machine.embedded_range", func(c *conf.Config) { c.Machine.EmbeddedRange = core.MachineRange{} }, "empty; want first-last within 0-1023"},
		{"machine.embedded_range", func(c *conf.Config) { c.Machine.EmbeddedRange = mustRange(t, "900-950") },
			`"900-950" overlaps machine.server_range "924-1023"`},
		// With no method bits, the disjoint ranges alone keep a leaf
		// embedded issuer and a leaf server on distinct worker IDs.
		{"machine.embedded_range", func(c *conf.Config) {
			c.ID.Layout, c.ID.Type, c.Machine.EmbeddedRange = core.Leaf, core.MinGranularity, mustRange(t, "0-924")
		}, `"0-924" overlaps machine.server_range "924-1023"`},
		{"machine.server_range", func(c *conf.Config) { c.Machine.ServerRange = core.MachineRange{First: 1000, Count: 100} }, "want first-last within 0-1023"},
		{"machine.redis.addrs", func(c *conf.Config) { c.Machine.Redis.Addrs = []string{"localhost"} }, `"localhost"; want host:port with a port 1-65535`},
		{"machine.redis.addrs", func(c *conf.Config) { c.Machine.Redis.Addrs = []string{"localhost:0"} }, `"localhost:0"; want host:port`},
		{"machine.redis.addrs", func(c *conf.Config) { c.Machine.Redis.Addrs = []string{"localhost:65536"} }, "want host:port"},
		{"machine.redis.addrs", func(c *conf.Config) { c.Machine.Redis.Addrs = []string{"localhost:redis"} }, "want host:port"},
		{"machine.redis.addrs", func(c *conf.Config) {
			c.Machine.Providers = []string{"redis"}
			c.Machine.Redis.Addrs = nil
		}, "Redis.Addrs: empty, but the redis provider is listed"},
		{"machine.redis.key_prefix", func(c *conf.Config) {
			c.Machine.Providers = []string{"redis"}
			c.Machine.Redis.KeyPrefix = "a{b}"
		}, `Redis.KeyPrefix: "a{b}" holds { or }`},
		{"machine.redis.lease_ttl", func(c *conf.Config) { c.Machine.Redis.LeaseTTL = 99 * time.Millisecond }, "Redis.LeaseTTL: 99ms; want at least 100ms"},
		{"machine.redis.lease_ttl", func(c *conf.Config) {
			c.Machine.Providers = []string{"redis"}
			c.Machine.Redis.LeaseTTL, c.ID.MaxBorrow = 17*time.Second, 1500*time.Millisecond
		}, "17s + machine.redis.max_clock_skew 2s + id.max_borrow 1.5s = 20.5s; want at most 20s in all"},
		{"machine.redis.embedded_range", func(c *conf.Config) { c.Machine.Redis.EmbeddedRange = mustRange(t, "900-950") },
			`900-950; want a part of machine.embedded_range 0-923, or "" for all of it`},
		{"machine.redis.server_range", func(c *conf.Config) { c.Machine.Redis.ServerRange = mustRange(t, "0-1023") },
			`0-1023; want a part of machine.server_range 924-1023`},
		{"machine.id", func(c *conf.Config) { c.Machine.Providers, c.Machine.ID = []string{"redis", "static"}, intp(1023) },
			"1023 lies in the IDs leases hand out (machine.redis.server_range 924-1023, all of machine.server_range by default with the redis provider)"},
		{"machine.id", func(c *conf.Config) {
			c.Machine.ID, c.Machine.Redis.ServerRange = intp(1000), mustRange(t, "924-1003")
		}, "1000 lies in the IDs leases hand out (machine.redis.server_range 924-1003)"},
		{"machine.id", func(c *conf.Config) { c.Machine.Providers, c.Machine.ID = []string{"static", "redis"}, intp(3) },
			"3 lies in the IDs leases hand out (machine.redis.embedded_range 0-923, all of machine.embedded_range"},
		{`machine.ip_table["10.1.2.3"]`, func(c *conf.Config) {
			c.Machine.Providers, c.Machine.IPTable = []string{"redis", "iptable"}, map[string]int{"10.1.2.3": 930}
		}, "930 lies in the IDs leases hand out (machine.redis.server_range 924-1023"},
		{"machine.k8s_offset", func(c *conf.Config) { c.Machine.Providers = []string{"k8s", "redis"} },
			"924 lies in the IDs leases hand out (machine.redis.server_range 924-1023"},
		{"machine.redis.max_clock_skew", func(c *conf.Config) { c.Machine.Redis.MaxClockSkew = -time.Millisecond }, "Redis.MaxClockSkew: -1ms is negative"},
		{"machine.redis.max_clock_skew", func(c *conf.Config) {
			c.Machine.Providers = []string{"redis"}
			c.Machine.Redis.MaxClockSkew = 0
		}, "0 turns the clock check off, but the redis provider"},
		{"machine.redis.min_replicas", func(c *conf.Config) { c.Machine.Redis.MinReplicas = -1 }, "Redis.MinReplicas: -1 is negative; want 0 (no WAIT) or more"},
		{"machine.redis.addrs", func(c *conf.Config) {
			c.Machine.Providers = []string{"redis"}
			c.Machine.Redis.Addrs = []string{"a:6379", "b:6379"}
		}, "2 addresses without Redis.MasterName would be a Redis Cluster"},
		{"machine.providers", func(c *conf.Config) { c.Machine.Providers = []string{"redis", "etcd"} }, "lists both redis and etcd"},
		{"machine.etcd.endpoints", func(c *conf.Config) { c.Machine.Etcd.Endpoints = []string{"e1"} }, `"e1"; want host:port with a port 1-65535`},
		{"machine.etcd.endpoints", func(c *conf.Config) {
			c.Machine.Providers = []string{"etcd"}
			c.Machine.Etcd.Endpoints = nil
		}, "Etcd.Endpoints: empty, but the etcd provider is listed"},
		{"machine.etcd.lease_ttl", func(c *conf.Config) { c.Machine.Etcd.LeaseTTL = time.Second }, "Etcd.LeaseTTL: 1s; want at least 2s"},
		{"machine.history.holds", func(c *conf.Config) { c.Machine.History.Holds = 300 }, "History.Holds: 300; want 1-256"},
		{"machine.history.max_age", func(c *conf.Config) { c.Machine.History.MaxAge = time.Minute }, "History.MaxAge: 1m0s; want 1h0m0s to"},
		{"machine.etcd.lease_ttl", func(c *conf.Config) { c.Machine.Etcd.LeaseTTL = 2500 * time.Millisecond }, "want whole seconds"},
		{"machine.etcd.tls.key", func(c *conf.Config) { c.Machine.Etcd.TLS.CA, c.Machine.Etcd.TLS.Cert = "ca.pem", "c.pem" }, "want the key file of machine.etcd.tls.cert"},
		{"machine.etcd.tls.cert", func(c *conf.Config) { c.Machine.Etcd.TLS.Key = "k.pem" }, "want the cert file of machine.etcd.tls.key"},
		{"machine.etcd.tls.ca", func(c *conf.Config) { c.Machine.Etcd.TLS.Cert, c.Machine.Etcd.TLS.Key = "c.pem", "k.pem" }, "needs the CA of etcd's members"},
		{"machine.etcd.embedded_range", func(c *conf.Config) { c.Machine.Etcd.EmbeddedRange = mustRange(t, "900-950") },
			`900-950; want a part of machine.embedded_range 0-923`},
		{"machine.etcd.server_range", func(c *conf.Config) { c.Machine.Etcd.ServerRange = mustRange(t, "0-1023") },
			`0-1023; want a part of machine.server_range 924-1023`},
		{"machine.id", func(c *conf.Config) {
			c.Machine.Providers, c.Machine.ID, c.Machine.Etcd.ServerRange = []string{"etcd", "static"}, intp(1000), mustRange(t, "924-1003")
		}, "1000 lies in the IDs leases hand out (machine.etcd.server_range 924-1003)"},
		{"time_guard.window", func(c *conf.Config) { c.TimeGuard.GuardWindow = 999 * time.Millisecond }, "GuardWindow 999ms is shorter than one time unit (1s)"},
		{"time_guard.window", func(c *conf.Config) {
			c.ID.Type = core.MinGranularity
			c.TimeGuard.GuardWindow = time.Microsecond
		}, "GuardWindow 1µs is shorter than one time unit (1ms)"},
		{"time_guard.max_startup_wait", func(c *conf.Config) { c.TimeGuard.MaxStartupWait = -time.Second }, "MaxStartupWait -1s is negative"},
		{"central.listen", func(c *conf.Config) { c.Central.Listen = "7070" }, `"7070"; want host:port with a port 0-65535, or "" for off`},
		{"central.listen", func(c *conf.Config) { c.Central.Listen = "127.0.0.1:-1" }, "want host:port"},
		{"central.listen", func(c *conf.Config) { c.Central.Listen = "127.0.0.1:99999" }, "want host:port"},
		{"central.max_batch", func(c *conf.Config) { c.Central.MaxBatch = -1 }, "MaxBatch: -1; want 0 (meaning 10000) to 1000000"},
		{"central.max_batch", func(c *conf.Config) { c.Central.MaxBatch = 1_000_001 }, "MaxBatch: 1000001; want 0 (meaning 10000) to 1000000"},
		{"central.max_request_bytes", func(c *conf.Config) { c.Central.MaxRequestBytes = 255 }, "MaxRequestBytes: 255; want 0 (meaning 65536) or 256 to 67108864"},
		{"central.max_request_bytes", func(c *conf.Config) { c.Central.MaxRequestBytes = 64<<20 + 1 }, "want 0 (meaning 65536) or 256 to 67108864"},
		{"central.max_conns", func(c *conf.Config) { c.Central.MaxConns = 1_000_001 }, "MaxConns: 1000001; want 0 (meaning 10000) to 1000000"},
		{"central.max_waiting_ids", func(c *conf.Config) { c.Central.MaxWaitingIDs = 1<<30 + 1 }, "MaxWaitingIDs: 1073741825; want 0 (meaning 1048576) to 1073741824"},
		{"central.max_waiting_calls", func(c *conf.Config) { c.Central.MaxWaitingCalls = -1 }, "MaxWaitingCalls: -1; want 0 (meaning 4096) to 16777216"},
		{"rest.max_waiting_ids", func(c *conf.Config) { c.REST.MaxWaitingIDs = -1 }, "MaxWaitingIDs: -1; want 0 (meaning 1048576) to 1073741824"},
		{"rest.max_waiting_calls", func(c *conf.Config) { c.REST.MaxWaitingCalls = 1<<30 + 1 }, "MaxWaitingCalls: 1073741825; want 0 (meaning 4096) to 1073741824"},
		{"central.max_conns_per_peer", func(c *conf.Config) { c.Central.MaxConnsPerPeer = -1 }, "MaxConnsPerPeer: -1; want 0 (meaning 1000) to 1000000"},
		{"central.first_frame_timeout", func(c *conf.Config) { c.Central.FirstFrameTimeout = time.Millisecond }, "FirstFrameTimeout: 1ms; want 0 (meaning 5s) or 10ms to 24h"},
		{"central.peer_ipv6_prefix", func(c *conf.Config) { c.Central.PeerPrefixV6 = 129 }, "PeerPrefixV6: 129; want 0 (meaning 64) to 128"},
		{"central.max_unsent_bytes", func(c *conf.Config) { c.Central.MaxUnsentBytes = -1 }, "MaxUnsentBytes: -1; want 0 (meaning 67108864) to 1073741824"},
		{"rest.peer_ipv6_prefix", func(c *conf.Config) { c.REST.PeerPrefixV6 = -1 }, "PeerPrefixV6: -1; want 0 (meaning 64) to 128"},
		{"rest.max_unsent_bytes", func(c *conf.Config) { c.REST.MaxUnsentBytes = 1<<30 + 1 }, "MaxUnsentBytes: 1073741825; want 0 (meaning 67108864) to 1073741824"},
		{"metrics.max_conns", func(c *conf.Config) { c.Metrics.MaxConns = -1 }, "MaxConns -1; want 1-1000000"},
		{"metrics.max_conns_per_peer", func(c *conf.Config) { c.Metrics.MaxConnsPerPeer = 1_000_001 }, "MaxConnsPerPeer 1000001; want 1-1000000"},
		{"metrics.peer_ipv6_prefix", func(c *conf.Config) { c.Metrics.PeerPrefixV6 = 200 }, "PeerPrefixV6 200; want 0 (meaning 64) or 1-128"},
		{"metrics.max_unsent_bytes", func(c *conf.Config) { c.Metrics.MaxUnsentBytes = 1<<30 + 1 }, "MaxUnsentBytes 1073741825; want 0 (meaning 8388608), 1-1073741824 bytes or negative (no bound)"},
		{"rest.max_conns", func(c *conf.Config) { c.REST.MaxConns = -1 }, "MaxConns: -1; want 0 (meaning 10000) to 1000000"},
		{"rest.max_conns_per_peer", func(c *conf.Config) { c.REST.MaxConnsPerPeer = 1_000_001 }, "MaxConnsPerPeer: 1000001; want 0 (meaning 1000) to 1000000"},
		{"rest.metrics_auth", func(c *conf.Config) { c.REST.MetricsAuth = true }, "MetricsAuth: set without a Token"},
		{"rest.allowed_hosts", func(c *conf.Config) { c.REST.AllowedHosts = []string{"ids.example.com:443"} }, "AllowedHosts[0]: \"ids.example.com:443\": port 443"},
		{"rest.allowed_hosts", func(c *conf.Config) { c.REST.AllowedHosts = []string{"*"} }, "\"*\" without a Token"},
		{"central.tls.key", func(c *conf.Config) { c.Central.TLS.Cert = "cert.pem" }, "both or neither"},
		{"central.tls.cert", func(c *conf.Config) { c.Central.TLS.Key = "key.pem" }, "both or neither"},
		{"central.tls.client_ca", func(c *conf.Config) { c.Central.TLS.ClientCA = "ca.pem" }, "set without central.tls.cert"},
		{"rest.tls.client_ca", func(c *conf.Config) { c.REST.TLS.ClientCA = "ca.pem" }, "set without rest.tls.cert"},
		{"metrics.tls.client_ca", func(c *conf.Config) { c.Metrics.TLS.ClientCA = "ca.pem" }, "set without metrics.tls.cert"},
		{"rest.listen", func(c *conf.Config) { c.REST.Listen = "localhost:http" }, `"localhost:http"; want host:port`},
		{"rest.listen", func(c *conf.Config) { c.REST.Listen = c.Central.Listen }, `"127.0.0.1:7070" is also central.listen`},
		{"metrics.listen", func(c *conf.Config) { c.Metrics.Listen = "9090" }, `"9090"; want host:port`},
		{"central.idle_timeout", func(c *conf.Config) { c.Central.IdleTimeout = time.Millisecond }, "IdleTimeout: 1ms; want 0 (meaning 5m0s) or 10ms to 24h"},
		{"central.read_timeout", func(c *conf.Config) { c.Central.ReadTimeout = -time.Second }, "ReadTimeout: -1s; want 0 (meaning 10s) or more"},
		{"metrics.listen", func(c *conf.Config) { c.Metrics.Listen = c.REST.Listen }, `"127.0.0.1:7080" is also central.listen or rest.listen`},
		{"rest.token", func(c *conf.Config) { c.REST.Token = "abc def" }, "Token: byte 3 is a space, control or non-ASCII character"},
		{"rest.token", func(c *conf.Config) { c.REST.Token = "abc\r" }, "a bearer token cannot carry it"},
		{"rest.tls.key", func(c *conf.Config) { c.REST.TLS.Cert = "cert.pem" }, "both or neither"},
		{"rest.tls.cert", func(c *conf.Config) { c.REST.TLS.Key = "key.pem" }, "both or neither"},
		{"metrics.tls.key", func(c *conf.Config) { c.Metrics.TLS.Cert = "cert.pem" }, "both or neither"},
		{"metrics.tls.cert", func(c *conf.Config) { c.Metrics.TLS.Key = "key.pem" }, "both or neither"},
		{"client.servers", func(c *conf.Config) { c.Client.Servers = []string{"a:1", "b"} }, `"b"; want host:port with a port 1-65535`},
		{"client.servers", func(c *conf.Config) { c.Client.Servers = []string{"a:0"} }, `"a:0"; want`},
		{"client.servers", func(c *conf.Config) { c.Client.Servers = []string{"a:1", "a:1"} }, `"a:1" listed twice`},
		{"client.timeout", func(c *conf.Config) { c.Client.Timeout = -time.Second }, "Timeout: -1s; want 0 (meaning 200ms) or above"},
		{"client.retries", func(c *conf.Config) { c.Client.Retries = 11 }, "Retries: 11; want 0 (meaning 2) to 10, or negative (none)"},
		{"client.prefetch", func(c *conf.Config) { c.Client.Prefetch = -1 }, "Prefetch: -1; want 0 (off) to 1048576"},
		{"client.prefetch", func(c *conf.Config) { c.Client.Prefetch = 1<<20 + 1 }, "Prefetch: 1048577; want 0 (off) to 1048576"},
		{"log.level", func(c *conf.Config) { c.Log.Level = "verbose" }, `"verbose"; want debug, info, warn or error`},
		{"log.level", func(c *conf.Config) { c.Log.Level = "" }, `""; want`},
		{"log.format", func(c *conf.Config) { c.Log.Format = "xml" }, `"xml"; want text or json`},
		{"segment.store", func(c *conf.Config) { c.Segment.Store = "postgres" }, `"postgres"; want "" (off), mysql or redis`},
		{"segment.dsn", func(c *conf.Config) { c.Segment.Store = "mysql" }, `DSN is empty; want one such as user:password@tcp(host:3306)/dbname`},
		{"segment.dsn", func(c *conf.Config) {
			c.Segment.Store = "mysql"
			c.Segment.DSN = "user:hunter2@tcp(db:3306)dbname"
		}, "(value not shown) is not a go-sql-driver/mysql DSN"},
		{"segment.table", func(c *conf.Config) {
			c.Segment.Store, c.Segment.DSN, c.Segment.Table = "mysql", "vesta@tcp(db:3306)/leaf", "leaf_alloc; DROP TABLE x"
		}, "want 1-64 characters of A-Z a-z 0-9 _"},
		{"segment.redis.addrs", func(c *conf.Config) {
			c.Segment.Store, c.Segment.Redis.Addrs = "redis", []string{"redis"}
		}, `"redis"; want host:port with a port 1-65535`},
		{"segment.redis.addrs", func(c *conf.Config) {
			c.Segment.Store = "redis"
			c.Segment.Redis.Addrs = nil
		}, "redisstore: invalid config: Addrs is empty"},
		{"segment.redis.key_prefix", func(c *conf.Config) {
			c.Segment.Store, c.Segment.Redis.KeyPrefix = "redis", "a b"
		}, `KeyPrefix "a b"; want 1-64 characters`},
		{"segment.threshold", func(c *conf.Config) { c.Segment.Threshold = 1.5 }, "Threshold: 1.5; want 0 (meaning 0.1) to 1"},
		{"segment.threshold", func(c *conf.Config) { c.Segment.Threshold = -0.1 }, "Threshold: -0.1; want"},
		{"segment.target_duration", func(c *conf.Config) { c.Segment.TargetDuration = time.Millisecond }, "TargetDuration: 1ms; want 0 (meaning 15m) or 1s to 24h"},
		{"segment.target_duration", func(c *conf.Config) { c.Segment.TargetDuration = 25 * time.Hour }, "TargetDuration: 25h0m0s; want"},
		{"segment.max_step", func(c *conf.Config) { c.Segment.MaxStep = -1 }, "MaxStep: -1; want 0 (meaning 1000000) to 2147483647"},
		{"segment.max_step", func(c *conf.Config) { c.Segment.MaxStep = 1 << 31 }, "MaxStep: 2147483648; want"},
		{"segment.preload", func(c *conf.Config) { c.Segment.Preload = []string{"orders", "bad tag"} }, `Preload[1]: segment: invalid tag: "bad tag": character ' ' at 3`},
		{"segment.preload", func(c *conf.Config) { c.Segment.Preload = []string{"a", "a"} }, `"a" listed twice`},
		{"segment.refresh_tags", func(c *conf.Config) { c.Segment.RefreshTags = time.Millisecond }, "RefreshTags: 1ms; want 0 (meaning 1m), negative (never) or 1s to 24h"},
		{"segment.refresh_tags", func(c *conf.Config) { c.Segment.RefreshTags = 25 * time.Hour }, "RefreshTags: 25h0m0s; want"},
		{"mask.key", func(c *conf.Config) { c.Mask.Key = "slot 0 c2hvcnQ=" }, "line 1: slot 0: the secret is 5 bytes; want at least 16"},
		{"mask.key", func(c *conf.Config) { c.Mask.Key = "c2VjcmV0IGZvciB0aGUgZXhhbXBsZSBvbmx5IQ==" }, "line 1 does not begin with slot or current (its text not shown)"},
		{"mask.not_before", func(c *conf.Config) { c.Mask.NotBefore = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) }, "NotBefore: core: end of time"},
	}
}

func TestValidateInvalid(t *testing.T) {
	for _, tc := range invalidCases(t) {
		t.Run(tc.key+"/"+tc.want, func(t *testing.T) {
			c := conf.DefaultConfig()
			tc.set(&c)
			wantKeyErrors(t, c.Validate(), tc.key, tc.want)
		})
	}
}

// keysWithoutInvalidValues take any value of their type; the other keys
// must each have a case in invalidCases.
var keysWithoutInvalidValues = []string{
	"machine.redis.master_name",
	"machine.redis.password",      // any string, spaces included
	"machine.redis.password_file", // read by Load: see TestSecretFiles
	"machine.etcd.key_prefix",     // any string; "" is vesta, as in Go
	"machine.etcd.username",       // any string
	"machine.etcd.password",       // any string
	"machine.etcd.password_file",  // read by Load, as machine.redis.password_file
	"time_guard.dir",              // checked when opened
	"rest.token_file",             // read by Load: see TestSecretFiles
	"client.no_fallback",
	"segment.dsn_file",            // read by Load: see TestSegmentSecretFiles
	"segment.redis.password",      // any string
	"segment.redis.password_file", // read by Load: see TestSegmentSecretFiles
	"mask.key_file",               // read by Load: see TestMaskKey
}

func TestEveryKeyValidated(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range invalidCases(t) {
		covered[tc.key] = true
	}
	for _, k := range conf.Keys() {
		if !covered[k] && !slices.Contains(keysWithoutInvalidValues, k) {
			t.Errorf("key %s has no invalid case in invalidCases", k)
		}
	}
}

func TestValidateValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*conf.Config)
	}{
		{"vesta min-granularity", func(c *conf.Config) {
			c.ID.Layout, c.ID.Type, c.TimeGuard.GuardWindow = core.Vesta, core.MinGranularity, time.Millisecond
		}},
		{"epoch", func(c *conf.Config) { c.ID.Epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600)) }},
		{"version 1, no borrowing", func(c *conf.Config) { c.ID.Version, c.ID.MaxBorrow = 1, 0 }},
		{"every provider", func(c *conf.Config) {
			c.Machine.Providers = []string{"redis", "k8s", "iptable", "static"}
			c.Machine.IPTable = map[string]int{"10.1.2.3": 924, "fd00::1": 925, "10.1.2.4": 5}
			c.Machine.ID, c.Machine.K8sOffset = intp(1023), 926 // k8s ordinals 0-29: 926-955
			c.Machine.Redis.EmbeddedRange, c.Machine.Redis.ServerRange = mustRange(t, "6-923"), mustRange(t, "956-1022")
		}},
		{"redis then static, the lease range narrowed", func(c *conf.Config) {
			c.Machine.Providers, c.Machine.ID = []string{"redis", "static"}, intp(1023)
			c.Machine.Redis.ServerRange = mustRange(t, "924-1003")
		}},
		{"static inside the lease range of another mode", func(c *conf.Config) {
			c.Machine.ID, c.Machine.Redis.ServerRange = intp(5), mustRange(t, "924-1003")
		}},
		{"fixed IDs of providers not listed", func(c *conf.Config) {
			c.Machine.Providers, c.Machine.ID = []string{"redis"}, intp(1023)
			c.Machine.IPTable = map[string]int{"10.1.2.3": 924}
		}},
		{"machine IDs at the ends", func(c *conf.Config) { c.Machine.ID = intp(0); c.Machine.K8sOffset = 1023 }},
		{"moved ranges", func(c *conf.Config) {
			c.Machine.EmbeddedRange, c.Machine.ServerRange = mustRange(t, "100-1023"), mustRange(t, "0-99")
		}},
		{"servers off", func(c *conf.Config) { c.Central.Listen, c.REST.Listen = "", "" }},
		{"port 0 twice", func(c *conf.Config) { c.Central.Listen, c.REST.Listen = "127.0.0.1:0", "127.0.0.1:0" }},
		{"ipv6 listen", func(c *conf.Config) { c.Central.Listen, c.REST.Listen = "[::1]:7070", ":7080" }},
		{"tls", func(c *conf.Config) {
			c.Central.TLS = conf.CentralTLS{Cert: "c", Key: "k", ClientCA: "ca"}
			c.REST.TLS = conf.RESTTLS{Cert: "c", Key: "k", ClientCA: "ca"}
		}},
		{"client", func(c *conf.Config) {
			c.Client.Servers = []string{"a:1", "[::1]:7070"}
			c.Client.Retries, c.Client.Prefetch, c.Client.NoFallback = 10, 1_000_000, true
		}},
		{"log", func(c *conf.Config) { c.Log.Level, c.Log.Format = "DEBUG", "JSON" }},
		{"no redis addrs without redis", func(c *conf.Config) { c.Machine.Redis.Addrs = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := conf.DefaultConfig()
			tc.set(&c)
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestValidateReportsEveryKey(t *testing.T) {
	c := conf.DefaultConfig()
	c.ID.Layout = 9
	c.Central.MaxBatch = -1
	c.Log.Format = "xml"
	err := c.Validate()
	var keys []string
	for _, ke := range conf.KeyErrors(err) {
		keys = append(keys, ke.Key)
	}
	// conf's own checks come first, then each package's.
	if want := []string{"log.format", "id.layout", "central.max_batch"}; !slices.Equal(keys, want) {
		t.Fatalf("keys = %v; want %v", keys, want)
	}
	if got := strings.Count(err.Error(), "\n"); got != 2 {
		t.Errorf("%d lines; want 3: %q", got+1, err)
	}
	if want := "conf: central.max_batch: central: invalid config: MaxBatch: -1; want 0 (meaning 10000) to 1000000"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
}
