package conf_test

import (
	"errors"
	"io/fs"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/machineid"
)

func TestLoadNothing(t *testing.T) {
	l := mustLoad(t, conf.Options{})
	if !l.Defaults() || len(l.Sources()) != 0 {
		t.Errorf("Defaults() = %v, Sources() = %v; want true, none", l.Defaults(), l.Sources())
	}
	if !reflect.DeepEqual(l.Config, conf.DefaultConfig()) {
		t.Errorf("Config = %v; want the defaults", l.Config)
	}
}

// The example file holds every key at its default: it cannot drift from
// DefaultConfig or miss a key.
func TestExampleFile(t *testing.T) {
	const path = "../vesta.example.yaml"
	l := mustLoad(t, conf.Options{File: path})
	if !reflect.DeepEqual(l.Config, conf.DefaultConfig()) {
		t.Errorf("example file:\n%v\nwant DefaultConfig():\n%v", l.Config, conf.DefaultConfig())
	}
	if l.Defaults() || !slices.Equal(l.Sources(), []string{"file " + path}) {
		t.Errorf("Defaults() = %v, Sources() = %v; want false, the file", l.Defaults(), l.Sources())
	}
	ko := koanf.New(".")
	if err := ko.Load(file.Provider(path), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	if got, want := ko.Keys(), slices.Sorted(slices.Values(conf.Keys())); !slices.Equal(got, want) {
		t.Errorf("example keys:\n%v\nwant every key:\n%v", got, want)
	}
}

func TestPrecedence(t *testing.T) {
	path := writeFile(t, "vesta.yaml", `
id:
  layout: vesta
  type: min-granularity
machine:
  id: 5
  redis: {addrs: ["a:1", "b:2"]}
time_guard: {window: 10ms}
log: {level: debug}
`)
	env := []string{
		"HOME=home", "VESTAX=1", // not ours: ignored
		"VESTA_ID_TYPE=max-peak",
		"VESTA_MACHINE_ID=6",
		"VESTA_MACHINE_REDIS_ADDRS=c:3",
		"VESTA_TIME_GUARD_WINDOW=2s",
	}
	fs := pflag.NewFlagSet("vesta", pflag.ContinueOnError)
	conf.AddFlags(fs)
	fs.IntP("count", "n", 1, "not a config flag")
	if err := fs.Parse([]string{"--machine", "7", "-n", "3", "--rest-listen", ""}); err != nil {
		t.Fatal(err)
	}
	l := mustLoad(t, conf.Options{File: path, Env: env, Flags: fs})
	c := l.Config
	if c.ID.Layout != core.Vesta {
		t.Errorf("id.layout = %v; want vesta from the file (an unset flag must not override)", c.ID.Layout)
	}
	if c.ID.Type != core.MaxPeak {
		t.Errorf("id.type = %v; want max-peak from the environment", c.ID.Type)
	}
	if c.Machine.ID == nil || *c.Machine.ID != 7 {
		t.Errorf("machine.id = %v; want 7 from the flag", c.Machine.ID)
	}
	if !slices.Equal(c.Machine.Redis.Addrs, []string{"c:3"}) {
		t.Errorf("machine.redis.addrs = %v; want the environment's list, not merged", c.Machine.Redis.Addrs)
	}
	if c.TimeGuard.GuardWindow != 2*time.Second || c.Log.Level != "debug" || c.REST.Listen != "" {
		t.Errorf("window %v, level %q, rest.listen %q; want 2s, debug, \"\"", c.TimeGuard.GuardWindow, c.Log.Level, c.REST.Listen)
	}
	if c.Central.Listen != "127.0.0.1:7070" {
		t.Errorf("central.listen = %q; want the default", c.Central.Listen)
	}
	want := []string{
		"file " + path,
		"env VESTA_ID_TYPE", "env VESTA_MACHINE_ID", "env VESTA_MACHINE_REDIS_ADDRS", "env VESTA_TIME_GUARD_WINDOW",
		"flag --machine", "flag --rest-listen",
	}
	if !slices.Equal(l.Sources(), want) {
		t.Errorf("Sources() =\n%v\nwant\n%v", l.Sources(), want)
	}
}

func TestUnknownYAMLKey(t *testing.T) {
	for _, tc := range []struct{ yaml, key, want string }{
		{"idd: {layout: vesta}", "idd", "unknown key; did you mean id?"},
		{"id: {layuot: vesta}", "id.layuot", "did you mean id.layout?"},
		{"machine: {redis: {adrs: [a:1]}}", "machine.redis.adrs", "did you mean machine.redis.addrs?"},
		{"central: {tls: {ca: x}}", "central.tls.ca", "unknown key"},
		{"rest: {tls: {ca: x}}", "rest.tls.ca", "unknown key"},
		{"something_else: 1", "something_else", "unknown key"},
		{"id: {Layout: vesta}", "id.Layout", "did you mean id.layout?"}, // keys are exact
	} {
		t.Run(tc.key, func(t *testing.T) {
			_, err := loadYAML(t, tc.yaml)
			wantKeyErrors(t, err, tc.key, tc.want, "(file ")
			if !errors.Is(err, conf.ErrUnknownKey) {
				t.Errorf("errors.Is(%v, ErrUnknownKey) = false", err)
			}
		})
	}
}

// An unknown key and a bad value in one section are both reported, and a
// bad name keeps its package's sentinel.
func TestUnknownKeyBesideBadValue(t *testing.T) {
	_, err := loadYAML(t, "id: {layuot: vesta, layout: foo}\n")
	kes := conf.KeyErrors(err)
	if len(kes) != 2 || kes[0].Key != "id.layuot" || kes[1].Key != "id.layout" {
		t.Fatalf("errors %v; want id.layuot (unknown) then id.layout", err)
	}
	if !errors.Is(err, conf.ErrUnknownKey) || !errors.Is(err, core.ErrUnknownName) {
		t.Errorf("errors.Is(%v, ErrUnknownKey / core.ErrUnknownName) = false", err)
	}
}

// Integers are decimal: a leading zero is not octal, 0x is not hex.
func TestIntegersAreDecimal(t *testing.T) {
	l := mustLoad(t, conf.Options{Env: []string{"VESTA_MACHINE_ID=010"}})
	if *l.Config.Machine.ID != 10 {
		t.Errorf("VESTA_MACHINE_ID=010 is %d; want 10", *l.Config.Machine.ID)
	}
	_, err := conf.Load(conf.Options{Env: []string{"VESTA_MACHINE_ID=0x10"}})
	wantKeyErrors(t, err, "machine.id", `"0x10"; want an integer`)
}

func TestUnknownEnv(t *testing.T) {
	_, err := conf.Load(conf.Options{Env: []string{"VESTA_REST_TOKN=s3cret-value", "VESTA_=x"}})
	if !errors.Is(err, conf.ErrUnknownKey) {
		t.Fatalf("err = %v; want ErrUnknownKey", err)
	}
	kes := conf.KeyErrors(err)
	if len(kes) != 2 || kes[0].Key != "VESTA_REST_TOKN" || kes[1].Key != "VESTA_" {
		t.Fatalf("errors %v; want VESTA_REST_TOKN and VESTA_", err)
	}
	if !strings.Contains(err.Error(), "did you mean VESTA_REST_TOKEN?") {
		t.Errorf("error %q lacks the suggestion", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q shows the value", err)
	}
}

func TestEnvMapping(t *testing.T) {
	for _, k := range conf.Keys() {
		if want := "VESTA_" + strings.ToUpper(strings.ReplaceAll(k, ".", "_")); conf.EnvName(k) != want {
			t.Errorf("EnvName(%s) = %s; want %s", k, conf.EnvName(k), want)
		}
	}
	l := mustLoad(t, conf.Options{Env: []string{
		"VESTA_ID_LAYOUT=vesta",
		"VESTA_ID_TYPE=1",
		"VESTA_ID_EPOCH=2020-01-01T00:00:00Z",
		"VESTA_ID_VERSION=1",
		"VESTA_ID_MAX_BORROW=0",
		"VESTA_MACHINE_PROVIDERS=redis, iptable,static",
		"VESTA_MACHINE_ID=924",
		"VESTA_MACHINE_IP_TABLE=10.1.2.3=924, 10.1.2.4=925,",
		"VESTA_MACHINE_K8S_OFFSET=0",
		"VESTA_MACHINE_EMBEDDED_RANGE=0-99",
		"VESTA_MACHINE_SERVER_RANGE=900-1023",
		"VESTA_MACHINE_REDIS_ADDRS=r1:6379,r2:6379",
		"VESTA_MACHINE_REDIS_MASTER_NAME=mymaster",
		"VESTA_MACHINE_REDIS_PASSWORD=pw",
		"VESTA_MACHINE_REDIS_KEY_PREFIX=ids",
		"VESTA_MACHINE_REDIS_LEASE_TTL=13s",
		"VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW=500ms",
		"VESTA_MACHINE_REDIS_EMBEDDED_RANGE=10-99",
		"VESTA_MACHINE_REDIS_SERVER_RANGE=926-1023",
		"VESTA_MACHINE_ETCD_ENDPOINTS=e1:2379, https://e2:2379",
		"VESTA_MACHINE_ETCD_USERNAME=vesta",
		"VESTA_MACHINE_ETCD_PASSWORD=epw",
		"VESTA_MACHINE_ETCD_TLS_CA=eca.pem",
		"VESTA_MACHINE_ETCD_TLS_CERT=ec.pem",
		"VESTA_MACHINE_ETCD_TLS_KEY=ek.pem",
		"VESTA_MACHINE_ETCD_KEY_PREFIX=eids",
		"VESTA_MACHINE_ETCD_LEASE_TTL=7s",
		"VESTA_MACHINE_ETCD_EMBEDDED_RANGE=20-99",
		"VESTA_MACHINE_ETCD_SERVER_RANGE=930-1023",
		"VESTA_TIME_GUARD_DIR=",
		"VESTA_TIME_GUARD_WINDOW=5ms",
		"VESTA_TIME_GUARD_MAX_STARTUP_WAIT=1m",
		"VESTA_CENTRAL_LISTEN=127.0.0.1:0",
		"VESTA_CENTRAL_MAX_BATCH=500",
		"VESTA_CENTRAL_MAX_REQUEST_BYTES=1024",
		"VESTA_CENTRAL_MAX_CONNS=7",
		"VESTA_CENTRAL_MAX_CONNS_PER_PEER=3",
		"VESTA_CENTRAL_PEER_IPV6_PREFIX=56",
		"VESTA_CENTRAL_MAX_UNSENT_BYTES=1000000",
		"VESTA_CENTRAL_FIRST_FRAME_TIMEOUT=1s",
		"VESTA_CENTRAL_MAX_WAITING_IDS=5000",
		"VESTA_CENTRAL_MAX_WAITING_CALLS=9",
		"VESTA_CENTRAL_IDLE_TIMEOUT=1m",
		"VESTA_CENTRAL_READ_TIMEOUT=2s",
		"VESTA_CENTRAL_TLS_CERT=c.pem",
		"VESTA_CENTRAL_TLS_KEY=k.pem",
		"VESTA_CENTRAL_TLS_CLIENT_CA=ca.pem",
		"VESTA_REST_LISTEN=:8080",
		"VESTA_REST_TOKEN=tok-tok-tok-tok-tok",
		"VESTA_REST_METRICS_AUTH=true",
		"VESTA_REST_MAX_CONNS=9",
		"VESTA_REST_MAX_CONNS_PER_PEER=4",
		"VESTA_REST_PEER_IPV6_PREFIX=48",
		"VESTA_REST_MAX_UNSENT_BYTES=2000000",
		"VESTA_REST_MAX_WAITING_IDS=6000",
		"VESTA_REST_MAX_WAITING_CALLS=11",
		"VESTA_REST_ALLOWED_HOSTS=ids.example.com, *.corp.example",
		"VESTA_REST_TLS_CERT=c.pem",
		"VESTA_REST_TLS_KEY=k.pem",
		"VESTA_REST_TLS_CLIENT_CA=rca.pem",
		"VESTA_CLIENT_SERVERS=a:1,b:2",
		"VESTA_CLIENT_TIMEOUT=1s",
		"VESTA_CLIENT_RETRIES=0",
		"VESTA_CLIENT_PREFETCH=100",
		"VESTA_CLIENT_NO_FALLBACK=true",
		"VESTA_SEGMENT_STORE=redis",
		"VESTA_SEGMENT_DSN=u:p@tcp(db:3306)/leaf",
		"VESTA_SEGMENT_TABLE=ids_alloc",
		"VESTA_SEGMENT_REDIS_ADDRS=s1:6379,s2:6379",
		"VESTA_SEGMENT_REDIS_PASSWORD=spw",
		"VESTA_SEGMENT_REDIS_KEY_PREFIX=seq",
		"VESTA_SEGMENT_THRESHOLD=0.25",
		"VESTA_SEGMENT_TARGET_DURATION=10m",
		"VESTA_SEGMENT_MAX_STEP=5000",
		"VESTA_SEGMENT_PRELOAD=orders, invoices",
		"VESTA_SEGMENT_REFRESH_TAGS=0",
		"VESTA_METRICS_LISTEN=127.0.0.1:9090",
		"VESTA_METRICS_MAX_CONNS=5",
		"VESTA_METRICS_MAX_CONNS_PER_PEER=2",
		"VESTA_METRICS_PEER_IPV6_PREFIX=128",
		"VESTA_METRICS_MAX_UNSENT_BYTES=3000000",
		"VESTA_LOG_LEVEL=warn",
		"VESTA_LOG_FORMAT=json",
	}})
	want := conf.Config{
		ID: conf.IDConfig{Layout: core.Vesta, Type: core.MinGranularity,
			Epoch: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), Version: 1},
		Machine: conf.MachineConfig{
			Providers: []string{"redis", "iptable", "static"}, ID: intp(924),
			IPTable:       map[string]int{"10.1.2.3": 924, "10.1.2.4": 925},
			EmbeddedRange: mustRange(t, "0-99"), ServerRange: mustRange(t, "900-1023"),
			Redis: conf.RedisConfig{Addrs: []string{"r1:6379", "r2:6379"}, MasterName: "mymaster", Password: "pw",
				KeyPrefix: "ids", LeaseTTL: 13 * time.Second, MaxClockSkew: 500 * time.Millisecond,
				EmbeddedRange: mustRange(t, "10-99"), ServerRange: mustRange(t, "926-1023")},
			Etcd: conf.EtcdConfig{Endpoints: []string{"e1:2379", "https://e2:2379"}, Username: "vesta", Password: "epw",
				TLS: conf.EtcdTLS{CA: "eca.pem", Cert: "ec.pem", Key: "ek.pem"}, KeyPrefix: "eids", LeaseTTL: 7 * time.Second,
				EmbeddedRange: mustRange(t, "20-99"), ServerRange: mustRange(t, "930-1023")},
			History: conf.HistoryConfig{Holds: 32, MaxAge: 720 * time.Hour},
		},
		TimeGuard: conf.TimeGuardConfig{GuardWindow: 5 * time.Millisecond, MaxStartupWait: time.Minute},
		Central: conf.CentralConfig{Listen: "127.0.0.1:0", MaxBatch: 500, MaxRequestBytes: 1024, MaxConns: 7,
			MaxConnsPerPeer: 3, PeerPrefixV6: 56, MaxUnsentBytes: 1_000_000, FirstFrameTimeout: time.Second,
			MaxWaitingIDs: 5000, MaxWaitingCalls: 9, IdleTimeout: time.Minute, ReadTimeout: 2 * time.Second,
			TLS: conf.CentralTLS{Cert: "c.pem", Key: "k.pem", ClientCA: "ca.pem"}},
		REST: conf.RESTConfig{Listen: ":8080", Token: "tok-tok-tok-tok-tok", MetricsAuth: true, MaxConns: 9, MaxConnsPerPeer: 4,
			PeerPrefixV6: 48, MaxUnsentBytes: 2_000_000, MaxWaitingIDs: 6000, MaxWaitingCalls: 11,
			AllowedHosts: []string{"ids.example.com", "*.corp.example"},
			TLS:          conf.RESTTLS{Cert: "c.pem", Key: "k.pem", ClientCA: "rca.pem"}},
		Client: conf.ClientConfig{Servers: []string{"a:1", "b:2"}, Timeout: time.Second, Prefetch: 100, NoFallback: true},
		Segment: conf.SegmentConfig{Store: "redis", DSN: "u:p@tcp(db:3306)/leaf", Table: "ids_alloc",
			Redis:     conf.SegmentRedisConfig{Addrs: []string{"s1:6379", "s2:6379"}, Password: "spw", KeyPrefix: "seq"},
			Threshold: 0.25, TargetDuration: 10 * time.Minute, MaxStep: 5000, Preload: []string{"orders", "invoices"}},
		Metrics: conf.MetricsConfig{Listen: "127.0.0.1:9090", MaxConns: 5, MaxConnsPerPeer: 2, PeerPrefixV6: 128, MaxUnsentBytes: 3_000_000},
		Log:     conf.LogConfig{Level: "warn", Format: "json"},
	}
	if got := l.Config; !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
	if len(l.Env) != 83 {
		t.Errorf("%d variables applied; want 83", len(l.Env))
	}
}

func TestEnvEmptyLists(t *testing.T) {
	l := mustLoad(t, conf.Options{Env: []string{"VESTA_CLIENT_SERVERS=", "VESTA_MACHINE_IP_TABLE="}})
	if s := l.Config.Client.Servers; s == nil || len(s) != 0 {
		t.Errorf("client.servers = %#v; want empty", s)
	}
	if m := l.Config.Machine.IPTable; m == nil || len(m) != 0 {
		t.Errorf("machine.ip_table = %#v; want empty", m)
	}
}

// Values of the wrong kind, from the file or the environment, are errors
// naming the key; mapstructure's silent conversions are refused.
func TestDecodeInvalid(t *testing.T) {
	for _, tc := range []struct {
		src  string // YAML, or VAR=value for the environment
		key  string
		want string
	}{
		{"id: {layout: foo}", "id.layout", `"foo"; want sorted, vesta or leaf`},
		// The layout and type read their own text (core's UnmarshalText):
		// a number or a list is judged as its text.
		{"id: {layout: 1}", "id.layout", `"1"; want sorted, vesta or leaf`},
		{"id: {type: 2}", "id.type", `"2"; want max-peak, min-granularity, 0 or 1`},
		{"id: {type: [0]}", "id.type", `"[0]"; want max-peak`},
		{"id: {epoch: 2025-13-01}", "id.epoch", `"2025-13-01"; want an RFC 3339 instant`},
		{"id: {epoch: 1735689600}", "id.epoch", "1735689600; want an RFC 3339 instant"},
		{"id: {version: 1.5}", "id.version", "1.5; want an integer"},
		{"id: {version: 18446744073709551615}", "id.version", "18446744073709551615; want an integer"},
		{"id: {version: 256}", "id.version", "256; want an integer 0-255"},
		{"VESTA_ID_VERSION=-1", "id.version", `"-1"; want an integer 0-255`},
		{"id: {max_borrow: 5}", "id.max_borrow", "5; want a duration with a unit, such as 5s"},
		{"id: {max_borrow: 1x}", "id.max_borrow", `"1x"; want a duration`},
		{"VESTA_ID_MAX_BORROW=", "id.max_borrow", `""; want a duration`},
		{"machine: {providers: {a: 1}}", "machine.providers", "want a list of strings"},
		{"machine: {id: abc}", "machine.id", `"abc"; want an integer`},
		{"VESTA_MACHINE_ID=", "machine.id", `""; want an integer`},
		{"VESTA_MACHINE_ID=7x", "machine.id", `"7x"; want an integer`},
		{"machine: {ip_table: [1, 2]}", "machine.ip_table", "want a mapping of IP address to machine ID"},
		{`machine: {ip_table: {"10.1.2.3": abc}}`, "machine.ip_table", `item [10.1.2.3]: "abc"; want an integer`},
		{"VESTA_MACHINE_IP_TABLE=10.1.2.3", "machine.ip_table", `"10.1.2.3"; want IP=ID pairs`},
		{"VESTA_MACHINE_IP_TABLE=10.1.2.3=1,10.1.2.3=2", "machine.ip_table", `"10.1.2.3"; listed twice`},
		{"VESTA_MACHINE_IP_TABLE=10.1.2.3=x", "machine.ip_table", `"x"; want an integer`},
		{"machine: {k8s_offset: true}", "machine.k8s_offset", "true; want an integer"},
		{"machine: {embedded_range: 5-x}", "machine.embedded_range", `"5-x"; want first-last within 0-1023`},
		{"machine: {server_range: 1000-2000}", "machine.server_range", `"1000-2000"; want first-last`},
		{"machine: {server_range: {first: 1}}", "machine.server_range", `want first-last within 0-1023`},
		{"machine: {redis: {addrs: {a: 1}}}", "machine.redis.addrs", "want a list"},
		{"machine: {redis: {master_name: {a: 1}}}", "machine.redis.master_name", "want a string"},
		{"machine: {redis: {password: [hunter2, x]}}", "machine.redis.password", "(value not shown); want a string"},
		{"machine: {redis: {password_file: {a: 1}}}", "machine.redis.password_file", "want a string"},
		{"machine: {redis: {key_prefix: [a, b]}}", "machine.redis.key_prefix", "want a string"},
		{"machine: {redis: {lease_ttl: 15}}", "machine.redis.lease_ttl", "15; want a duration with a unit"},
		{"machine: {redis: {max_clock_skew: fast}}", "machine.redis.max_clock_skew", `"fast"; want a duration`},
		{"machine: {redis: 5}", "machine.redis", "want a mapping of machine.redis.* keys"},
		{"machine: [a]", "machine", "want a mapping of machine.* keys"},
		{"time_guard: {dir: [a, b]}", "time_guard.dir", "want a string"},
		{"time_guard: {window: 3}", "time_guard.window", "3; want a duration with a unit"},
		{"time_guard: {max_startup_wait: -}", "time_guard.max_startup_wait", `"-"; want a duration`},
		{"central: {listen: {a: 1}}", "central.listen", "want a string"},
		{"central: {max_batch: 1e3x}", "central.max_batch", `"1e3x"; want an integer`},
		{"VESTA_CENTRAL_MAX_REQUEST_BYTES=64KiB", "central.max_request_bytes", `"64KiB"; want an integer`},
		{"central: {max_conns: 2.5}", "central.max_conns", "2.5; want an integer"},
		{"central: {tls: {cert: [a, b]}}", "central.tls.cert", "want a string"},
		{"central: {tls: {key: [a, b]}}", "central.tls.key", "want a string"},
		{"central: {tls: {client_ca: [a, b]}}", "central.tls.client_ca", "want a string"},
		{"rest: {listen: [a, b]}", "rest.listen", "want a string"},
		{"rest: {token: {t: s3cret}}", "rest.token", "(value not shown); want a string"},
		{"rest: {token_file: [a, b]}", "rest.token_file", "want a string"},
		{"rest: {tls: {cert: [a, b]}}", "rest.tls.cert", "want a string"},
		{"rest: {tls: {key: [a, b]}}", "rest.tls.key", "want a string"},
		{"rest: {tls: {client_ca: [a, b]}}", "rest.tls.client_ca", "want a string"},
		{"metrics: {tls: {cert: [a, b]}}", "metrics.tls.cert", "want a string"},
		{"client: {servers: {a: 1}}", "client.servers", "want a list"},
		{"client: {timeout: 200}", "client.timeout", "200; want a duration with a unit, such as 200s"},
		{"client: {retries: two}", "client.retries", `"two"; want an integer`},
		{"client: {prefetch: null}", "", ""}, // null leaves the default
		{"client: {no_fallback: 1}", "client.no_fallback", "1; want true or false"},
		{"client: {no_fallback: yes}", "client.no_fallback", `"yes"; want true or false`},
		{"VESTA_CLIENT_NO_FALLBACK=", "client.no_fallback", `""; want true or false`},
		{"log: {level: [a, b]}", "log.level", "want a string"},
		{"log: {format: {a: 1}}", "log.format", "want a string"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			var err error
			if v, ok := strings.CutPrefix(tc.src, "VESTA_"); ok && strings.Contains(v, "=") {
				_, err = conf.Load(conf.Options{Env: []string{tc.src}})
			} else {
				_, err = loadYAML(t, tc.src)
			}
			if tc.key == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantKeyErrors(t, err, tc.key, tc.want)
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

// Every key rejects a value of the wrong kind, naming the key.
func TestEveryKeyRejectsWrongKind(t *testing.T) {
	for _, k := range conf.Keys() {
		t.Run(k, func(t *testing.T) {
			var v any = map[string]any{"a": map[string]any{"b": 1}}
			if k == "machine.ip_table" {
				v = []any{1, 2}
			}
			_, err := loadYAML(t, nested(t, k, v))
			wantKeyErrors(t, err, k, "; want ")
		})
	}
}

func TestNullKeepsDefaults(t *testing.T) {
	l := mustLoad(t, conf.Options{File: writeFile(t, "v.yaml", "id:\nmachine: {id: null, redis: ~}\nlog: {level: null}\n")})
	if !reflect.DeepEqual(l.Config, conf.DefaultConfig()) {
		t.Errorf("got %v; want the defaults", l.Config)
	}
}

func TestLoadFileErrors(t *testing.T) {
	_, err := conf.Load(conf.Options{File: t.TempDir() + "/missing.yaml", Env: noEnv})
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, conf.ErrConfig) {
		t.Errorf("missing file: %v; want fs.ErrNotExist", err)
	}
	for _, bad := range []string{"id: [", "- a\n- b\n", "5", "id: {layout: a}\nid: {layout: b}\n"} {
		_, err := loadYAML(t, bad)
		if !errtest.Wraps(err, conf.ErrConfig, "vesta.yaml") {
			t.Errorf("%q: %v; want ErrConfig naming the file", bad, err)
		}
	}
	if _, err := loadYAML(t, ""); err != nil {
		t.Errorf("empty file: %v", err)
	}
}

func TestErrorSources(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	conf.AddFlags(fs, "machine", "log-level")
	if err := fs.Parse([]string{"--machine=5000"}); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "v.yaml", "central: {max_batch: 2000000}\n")
	_, err := conf.Load(conf.Options{File: path, Flags: fs, Env: []string{"VESTA_LOG_FORMAT=xml"}})
	for _, want := range []string{
		"conf: machine.id: 5000; want 0-1023 (flag --machine)",
		"conf: central.max_batch: central: invalid config: MaxBatch: 2000000; want 0 (meaning 10000) to 1000000 (file " + path + ")",
		`conf: log.format: "xml"; want text or json (env VESTA_LOG_FORMAT)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nlacks\n%s", err, want)
		}
	}
}

func TestSecretFiles(t *testing.T) {
	pw := writeFile(t, "pw", "redis-pw\n")
	short := writeFile(t, "short", "rest-token\n")
	tok := writeFile(t, "tok", "rest-token-of-a-file\r\n")
	l := mustLoad(t, conf.Options{
		File: writeFile(t, "v.yaml", "rest: {token_file: "+tok+"}\n"),
		Env:  []string{"VESTA_MACHINE_REDIS_PASSWORD_FILE=" + pw},
	})
	if got := l.Config.Machine.Redis.Password.Reveal(); got != "redis-pw" {
		t.Errorf("password = %q; want redis-pw", got)
	}
	if got := l.Config.REST.Token.Reveal(); got != "rest-token-of-a-file" {
		t.Errorf("token = %q; want rest-token-of-a-file", got)
	}
	if err := l.Config.Validate(); err != nil {
		t.Errorf("Validate after Load: %v", err)
	}

	// The file's content is judged as rest.token, read from the file.
	_, err := conf.Load(conf.Options{Env: []string{"VESTA_REST_TOKEN_FILE=" + short}})
	wantKeyErrors(t, err, "rest.token", "10 bytes; want at least 16", "(rest.token_file "+short+")")
	if strings.Contains(err.Error(), "rest-token") {
		t.Errorf("error %q shows the token", err)
	}

	for _, tc := range []struct {
		name string
		env  []string
		key  string
		want string
	}{
		{"both", []string{"VESTA_REST_TOKEN=x-x-x-x-x-x-x-x-x", "VESTA_REST_TOKEN_FILE=" + tok}, "rest.token_file", "set together with rest.token"},
		{"both password", []string{"VESTA_MACHINE_REDIS_PASSWORD=x", "VESTA_MACHINE_REDIS_PASSWORD_FILE=" + pw},
			"machine.redis.password_file", "set together with machine.redis.password"},
		{"missing", []string{"VESTA_REST_TOKEN_FILE=" + t.TempDir() + "/none"}, "rest.token_file", "no such file"},
		{"empty", []string{"VESTA_MACHINE_REDIS_PASSWORD_FILE=" + writeFile(t, "e", "\n")}, "machine.redis.password_file", "is empty"},
		{"large", []string{"VESTA_REST_TOKEN_FILE=" + writeFile(t, "big", strings.Repeat("x", 64<<10+1))}, "rest.token_file", "larger than 64 KiB"},
		{"directory", []string{"VESTA_REST_TOKEN_FILE=" + t.TempDir()}, "rest.token_file", "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conf.Load(conf.Options{Env: tc.env})
			wantKeyErrors(t, err, tc.key, tc.want, "(env VESTA_")
			if strings.Contains(err.Error(), "rest-token") || strings.Contains(err.Error(), "redis-pw") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	keys := conf.Keys()
	seen := map[string]bool{}
	for _, f := range conf.Flags() {
		if !slices.Contains(keys, f.Key) || seen[f.Name] || f.Usage == "" {
			t.Errorf("flag %+v: unknown key, duplicate name or no usage", f)
		}
		seen[f.Name] = true
	}
	want := map[string]string{
		"machine": "machine.id", "layout": "id.layout", "type": "id.type", "epoch": "id.epoch",
		"servers": "client.servers", "data-dir": "time_guard.dir", "central-listen": "central.listen",
		"rest-listen": "rest.listen", "log-level": "log.level", "log-format": "log.format",
	}
	got := map[string]string{}
	for _, f := range conf.Flags() {
		got[f.Name] = f.Key
	}
	if !maps.Equal(got, want) {
		t.Errorf("flag table %v; want %v", got, want)
	}

	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	conf.AddFlags(fs)
	args := []string{"--machine=3", "--layout=vesta", "--type=1", "--epoch=2020-01-01T00:00:00Z",
		"--servers=a:1,b:2", "--servers=c:3", "--data-dir=data", "--central-listen=:1", "--rest-listen=:2",
		"--log-level=error", "--log-format=json"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	l := mustLoad(t, conf.Options{Flags: fs})
	c := l.Config
	if *c.Machine.ID != 3 || c.ID.Layout != core.Vesta || c.ID.Type != core.MinGranularity ||
		!c.ID.Epoch.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) ||
		!slices.Equal(c.Client.Servers, []string{"a:1", "b:2", "c:3"}) || c.TimeGuard.DataDir != "data" ||
		c.Central.Listen != ":1" || c.REST.Listen != ":2" || c.Log.Level != "error" || c.Log.Format != "json" {
		t.Errorf("got %v", c)
	}
	if len(l.Flags) != len(want) {
		t.Errorf("flags applied %v; want all %d", l.Flags, len(want))
	}

	// Registered but unset flags change nothing, whatever their defaults.
	fs = pflag.NewFlagSet("y", pflag.ContinueOnError)
	conf.AddFlags(fs, "layout", "machine")
	if l := mustLoad(t, conf.Options{Flags: fs}); !l.Defaults() || !reflect.DeepEqual(l.Config, conf.DefaultConfig()) {
		t.Errorf("unset flags changed the config: %v", l.Config)
	}

	defer func() {
		if recover() == nil {
			t.Error("AddFlags with an unknown name did not panic")
		}
	}()
	conf.AddFlags(pflag.NewFlagSet("z", pflag.ContinueOnError), "nope")
}

// machine.id has no default: unset it is nil, whatever the mode, and the
// issuers refuse (RequireMachine) while static is listed.
func TestNoDefaultMachineID(t *testing.T) {
	c := conf.DefaultConfig()
	if c.Machine.ID != nil || c.Machine.Static() != nil || machineIDOf(t, c).Static != nil {
		t.Fatalf("default machine.id %v; want unset", c.Machine.ID)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate of the defaults: %v (a client without the fallback needs no machine ID)", err)
	}
	err := c.RequireMachine()
	if !errors.Is(err, conf.ErrConfig) || !errors.Is(err, machineid.ErrNoMachineID) {
		t.Fatalf("RequireMachine = %v; want ErrConfig and machineid.ErrNoMachineID", err)
	}
	if ke := conf.KeyErrors(err); len(ke) != 1 || ke[0].Key != "machine.id" {
		t.Fatalf("RequireMachine = %v; want one KeyError on machine.id", err)
	}
	// Every other provider is a way to choose, and is named.
	for _, w := range append([]string{"--machine", "VESTA_MACHINE_ID"}, otherProviders()...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
	for _, f := range conf.Flags() {
		if f.Name != "machine" {
			continue
		}
		for _, p := range otherProviders() {
			if !strings.Contains(f.Usage, p) {
				t.Errorf("--machine's help %q does not name the provider %s", f.Usage, p)
			}
		}
	}
	if _, err := c.CoreConfig(); !errors.Is(err, machineid.ErrNoMachineID) {
		t.Errorf("Core = %v; want ErrNoMachineID", err)
	}
	if _, err := c.EmbedConfig(); !errors.Is(err, machineid.ErrNoMachineID) {
		t.Errorf("Embed = %v; want ErrNoMachineID", err)
	}
	if _, err := c.ClientConfig(); !errors.Is(err, machineid.ErrNoMachineID) {
		t.Errorf("ClientConfig with the fallback = %v; want ErrNoMachineID", err)
	}
	c.Client.NoFallback = true
	if _, err := c.ClientConfig(); err != nil {
		t.Errorf("ClientConfig without the fallback = %v; want no machine ID needed", err)
	}
	c.Client.NoFallback = false
	c.Machine.Providers = []string{"redis"}
	if err := c.RequireMachine(); err != nil {
		t.Errorf("RequireMachine with redis only = %v", err)
	}
	c.Machine.Providers, c.Machine.ID = []string{"static"}, intp(7)
	if got := machineIDOf(t, c).Static; got == nil || *got != 7 {
		t.Errorf("MachineIDConfig().Static = %v; want 7", got)
	}
	if r := c.Machine.Range(core.REST); r != machineid.DefaultServerRange {
		t.Errorf("Range(REST) = %v", r)
	}
}

func TestCore(t *testing.T) {
	c := conf.DefaultConfig()
	c.Machine.ID = intp(1023)
	c.ID.Layout, c.ID.Version = core.Vesta, 1
	cc, err := c.CoreConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cc.Machine != 1023 || cc.Layout != core.Vesta || cc.Version != 1 || cc.MaxBorrow != time.Second ||
		cc.GuardWindow != 3*time.Second || cc.MaxStartupWait != 10*time.Second {
		t.Errorf("Core = %+v", cc)
	}
	if err := cc.Validate(); err != nil {
		t.Error(err)
	}
	c.Central.MaxBatch = -1
	if _, err := c.CoreConfig(); !errors.Is(err, conf.ErrConfig) {
		t.Errorf("Core of an invalid config: %v; want ErrConfig", err)
	}
}

func TestDefaultConfigFresh(t *testing.T) {
	a := conf.DefaultConfig()
	a.Machine.Providers[0] = "redis"
	a.Machine.IPTable["x"] = 1
	a.Machine.Redis.Addrs[0] = "x"
	if b := conf.DefaultConfig(); b.Machine.Providers[0] != "static" || len(b.Machine.IPTable) != 0 ||
		b.Machine.Redis.Addrs[0] != "127.0.0.1:6379" {
		t.Error("DefaultConfig shares its slices or maps between calls")
	}
	_ = machineid.DefaultServerRange
}

func TestYAMLValues(t *testing.T) {
	l, err := loadYAML(t, `
id:
  layout: VESTA
  type: 1
  epoch: 2020-01-01T08:00:00+08:00
  max_borrow: 0
machine:
  providers: [iptable, static]
  id: "924"
  ip_table:
    "10.1.2.3": 924
    "fd00::1": 925
  embedded_range: 5
time_guard: {window: 1ms, max_startup_wait: 0}
client: {servers: ["a:1"], prefetch: 10.0, no_fallback: true}
`)
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.ID.Layout != core.Vesta || c.ID.Type != core.MinGranularity || c.ID.MaxBorrow != 0 ||
		!c.ID.Epoch.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("id: %+v", c.ID)
	}
	if *c.Machine.ID != 924 || !maps.Equal(c.Machine.IPTable, map[string]int{"10.1.2.3": 924, "fd00::1": 925}) ||
		c.Machine.EmbeddedRange != mustRange(t, "5-5") {
		t.Errorf("machine: %v", c)
	}
	if c.Client.Prefetch != 10 || !c.Client.NoFallback || c.TimeGuard.MaxStartupWait != 0 {
		t.Errorf("client: %+v", c.Client)
	}
}

// id.layout: leaf alone gives Leaf's milliseconds and epoch, from the file,
// the environment or a flag; an explicit max-peak or another epoch is
// refused naming the key.
func TestLeafLayout(t *testing.T) {
	leafFlag := pflag.NewFlagSet("leaf", pflag.ContinueOnError)
	conf.AddFlags(leafFlag, "layout")
	if err := leafFlag.Parse([]string{"--layout", "leaf"}); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]conf.Options{
		"file":  {File: writeFile(t, "leaf.yaml", "id: {layout: leaf}\n"), Env: []string{}},
		"env":   {Env: []string{"VESTA_ID_LAYOUT=leaf"}},
		"flag":  {Env: []string{}, Flags: leafFlag},
		"epoch": {Env: []string{"VESTA_ID_LAYOUT=leaf", "VESTA_ID_EPOCH=2010-11-04T01:42:54.657Z", "VESTA_ID_TYPE=min-granularity"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := mustLoad(t, opts).Config
			c.Machine.ID = intp(1)
			cc, err := c.CoreConfig()
			if err != nil {
				t.Fatal(err)
			}
			if cc.Layout != core.Leaf || cc.Type != core.MinGranularity {
				t.Fatalf("Core = %+v", cc)
			}
			if sh, err := cc.Shape(); err != nil || sh.EpochMs != 1288834974657 {
				t.Fatalf("shape %+v, %v", sh, err)
			}
		})
	}
	for _, tc := range []struct{ env, key, want string }{
		{"VESTA_ID_TYPE=max-peak", "id.type", "max-peak; the leaf layout (id.layout) counts milliseconds only"},
		{"VESTA_ID_EPOCH=2025-01-01T00:00:00Z", "id.epoch", "the leaf layout counts from Leaf's own epoch"},
		{"VESTA_ID_VERSION=1", "id.version", "the leaf layout's top bit is the sign bit"},
	} {
		_, err := conf.Load(conf.Options{Env: []string{"VESTA_ID_LAYOUT=leaf", tc.env}})
		wantKeyErrors(t, err, tc.key, tc.want)
	}
}
