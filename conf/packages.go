package conf

import (
	"cmp"
	"errors"
	"reflect"
	"strings"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/connlimit"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/rest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/mysqlstore"
	"github.com/vesta-go/vesta/segment/redisstore"
)

// conf is a mapping: YAML, environment and flag keys onto the Config of
// each package. The meaning of a field (what zero means included), its
// default and its limits are its package's, checked by its package's
// Validate; conf names the key. Each conversion below has one table from
// the package's field (a Go path) to the YAML key it is read from, and the
// table is the conversion (fromKeys) and the default (toKeys): no field is
// copied by hand. The keys in no table are conf's own (ownKeys), and
// TestKeyTable holds every key of Config, vesta.example.yaml, README's key
// list and the environment to these tables. What conf checks itself is listed in the
// package documentation; machineid checks the machine section again when
// the lease is acquired.

// fieldKey maps one field of a package's Config to its YAML key. with
// lists the fields its check depends on, copied along in a probe (an
// epoch is checked against its layout).
type fieldKey struct {
	field, key string
	with       []string
}

// The tables, one per package Config, derived from the field tags of
// Config: `field:"central.MaxBatch rest.MaxBatch"` names the package
// fields a key is read into, `with:"Layout"` the fields its check depends
// on. Each key is so declared once, beside its YAML name.
var (
	// coreKeys: core.Config, from CoreConfig and EmbedConfig.
	coreKeys = tableOf("core")
	// embedKeys: embed.Config's own fields (beside core.Config's), from
	// EmbedConfig; its users report a bad time_guard.dir when they open
	// it.
	embedKeys = tableOf("embed")
	// centralKeys: central.Config, from CentralConfig.
	centralKeys = tableOf("central")
	// restKeys: rest.Config, from RESTConfig. REST's largest batch is
	// central.max_batch: one server, one batch limit, whichever protocol a
	// client speaks (Vesta.Info reports it as max_batch).
	restKeys = tableOf("rest")
	// metricsKeys: connlimit.Config, the metrics listener's policy, from
	// MetricsConfig. Its timeouts are REST's defaults.
	metricsKeys = tableOf("connlimit")
	// clientKeys: client.Config, from ClientConfig. client.servers is
	// checked by conf, as the key may be empty when no client is built
	// (the client wants at least one server).
	clientKeys = tableOf("client")
	// machineKeys: machineid.Config, from MachineIDConfig. The ranges,
	// providers, static ID and IP table are checked by conf in YAML terms
	// (see MachineConfig.validate); the whole Config is validated after
	// them.
	machineKeys = tableOf("machineid")
	// segmentKeys: segment.Config, from SegmentConfig. The store keys are
	// conf's, but for the redis store's own.
	segmentKeys = tableOf("segment")
	// segmentRedisKeys: redisstore.Config, from segmentRedisConfig, judged
	// with segment.store redis only. It has no defaults: conf's are.
	segmentRedisKeys = tableOf("redisstore")
	// segmentMySQLKeys: mysqlstore.Config, from segmentMySQLConfig, judged
	// with segment.store mysql only. Its default table is conf's too.
	segmentMySQLKeys = tableOf("mysqlstore")
)

// tableOf is the table of package pkg: the keys whose field tag names a
// field of pkg's Config, in Config's order.
func tableOf(pkg string) []fieldKey {
	var out []fieldKey
	eachKey(func(key string, f field) {
		for target := range strings.FieldsSeq(f.tag.Get("field")) {
			if p, path, _ := strings.Cut(target, "."); p == pkg {
				out = append(out, fieldKey{field: path, key: key, with: strings.Fields(f.tag.Get("with"))})
			}
		}
	})
	return out
}

// ownKeys are the keys no package Config holds as they are: conf reads
// and checks them itself (see the package documentation). Every other key
// is a row of one table above; TestKeyTable fails on a key in neither, or
// in both.
var ownKeys = map[string]string{
	"central.listen":              "an address",
	"rest.listen":                 "an address",
	"metrics.listen":              "an address",
	"central.tls.cert":            "a TLS file",
	"central.tls.key":             "a TLS file",
	"central.tls.client_ca":       "a TLS file",
	"rest.tls.cert":               "a TLS file",
	"rest.tls.key":                "a TLS file",
	"rest.tls.client_ca":          "a TLS file",
	"metrics.tls.cert":            "a TLS file",
	"metrics.tls.key":             "a TLS file",
	"metrics.tls.client_ca":       "a TLS file",
	"rest.token_file":             "a secret's file, read by Load",
	"client.servers":              "may be empty when no client is built; the client wants one",
	"client.no_fallback":          "client.Config.NoFallback, but the fallback it turns on is built from the id, machine and time_guard sections (Embed judges it)",
	"segment.store":               "the store selection",
	"segment.dsn_file":            "a secret's file, read by Load",
	"segment.redis.password_file": "a secret's file, read by Load",
	"mask.key":                    "a secret, the key text; mask.ParseKeys judges it",
	"mask.key_file":               "a secret's file, read by Load",
	"mask.not_before":             "the masking check's NotBefore, judged with the id and machine sections (mask.Check)",
	"log.level":                   "the log",
	"log.format":                  "the log",
	// The machine section in YAML terms: which provider reads which key,
	// ranges and lease ranges, fixed IDs within reach of leases.
	"machine.providers":            "the machine section",
	"machine.id":                   "the machine section",
	"machine.ip_table":             "the machine section",
	"machine.embedded_range":       "the machine section",
	"machine.server_range":         "the machine section",
	"machine.redis.master_name":    "the machine section (Sentinel or not: machine.redis.addrs is judged with it)",
	"machine.redis.password":       "the machine section",
	"machine.redis.password_file":  "a secret's file, read by Load",
	"machine.redis.embedded_range": "the machine section (a lease range)",
	"machine.redis.server_range":   "the machine section (a lease range)",
	"machine.etcd.username":        "the machine section",
	"machine.etcd.password":        "the machine section",
	"machine.etcd.password_file":   "a secret's file, read by Load",
	"machine.etcd.tls.ca":          "a TLS file",
	"machine.etcd.tls.cert":        "a TLS file",
	"machine.etcd.tls.key":         "a TLS file",
	"machine.etcd.embedded_range":  "the machine section (a lease range)",
	"machine.etcd.server_range":    "the machine section (a lease range)",
}

// keyTable is one conversion's table: the YAML key of each field of its
// package's Config, and that package's DefaultConfig (the zero Config
// with OwnDefaults when the package has none: the metrics listener's caps
// are conf's).
type keyTable struct {
	Package     string
	Fields      map[string]string // key -> Go path of the field
	Defaults    any
	OwnDefaults bool
}

// conversions are the tables with their package's DefaultConfig, from
// which DefaultConfig takes each row's default (nil: conf owns the
// defaults, the metrics listener's caps). REST's precedes central's, so
// that central.max_batch is central's default (TestKeyTable holds the
// two equal).
var conversions = []struct {
	pkg      string
	keys     []fieldKey
	defaults func() any // nil: conf's own; zero is then the Config's type
	zero     any
}{
	{"core", coreKeys, func() any { return core.DefaultConfig() }, nil},
	{"embed", embedKeys, func() any { return embed.DefaultConfig() }, nil},
	{"rest", restKeys, func() any { return rest.DefaultConfig() }, nil},
	{"central", centralKeys, func() any { return central.DefaultConfig() }, nil},
	{"connlimit", metricsKeys, nil, connlimit.Config{}},
	{"client", clientKeys, func() any { return client.DefaultConfig() }, nil},
	{"machineid", machineKeys, func() any { return machineid.DefaultConfig() }, nil},
	{"segment", segmentKeys, func() any { return segment.DefaultConfig() }, nil},
	{"redisstore", segmentRedisKeys, nil, redisstore.Config{}},
	{"mysqlstore", segmentMySQLKeys, nil, mysqlstore.Config{}},
}

// keyTables returns every conversion's table with its package's
// defaults: what TestKeyTable holds every key to.
func keyTables() []keyTable {
	var tables []keyTable
	for _, cv := range conversions {
		tb := keyTable{Package: cv.pkg, Fields: map[string]string{}, Defaults: cv.zero, OwnDefaults: cv.defaults == nil}
		if cv.defaults != nil {
			tb.Defaults = cv.defaults()
		}
		for _, k := range cv.keys {
			tb.Fields[k.key] = k.field
		}
		tables = append(tables, tb)
	}
	return tables
}

// checkConversion validates cfg, one section converted, with its package's
// Validate, and reports a failing field by its YAML key. A package reports
// its first bad field only; to report every bad key at once, each field is
// probed alone: copied (with its dependencies) into base, a valid Config of
// the package, and validated. Then cfg is validated whole, for what only a
// combination of fields breaks, unless a key of the section (prefixes) was
// already reported: that error is reported under section.
func checkConversion[T interface{ Validate() error }](ck *checker, section string, prefixes []string, cfg, base T, keys []fieldKey) {
	for _, k := range keys {
		probe := base
		for _, f := range k.with {
			copyField(&probe, &cfg, f)
		}
		if probe.Validate() != nil {
			continue // a field it depends on is bad: its own row reports it
		}
		copyField(&probe, &cfg, k.field)
		if err := probe.Validate(); err != nil {
			ck.addErr(k.key, err)
		}
	}
	for _, e := range ck.errs {
		var ke *KeyError
		if errors.As(e, &ke) && hasAnyPrefix(ke.Key, prefixes) {
			return
		}
	}
	// No machine ID chosen is RequireMachine's to report: Validate passes
	// a Config for commands that need none.
	if err := cfg.Validate(); err != nil && !errors.Is(err, machineid.ErrNoMachineID) {
		ck.addErr(section, err)
	}
}

// copyField sets the field at path (e.g. "Redis.LeaseTTL") of *dst to
// that of *src. A path that names no field panics: the tables are checked
// by every Validate, DefaultConfig's included.
func copyField[T any](dst, src *T, path string) {
	fieldAt(reflect.ValueOf(dst).Elem(), path).Set(fieldAt(reflect.ValueOf(src).Elem(), path))
}

// fieldAt is the field of v, a struct, at a Go path ("Redis.LeaseTTL").
// A path that names no field, a typo in a field tag, panics naming it
// (TestKeyTable meets it first).
func fieldAt(v reflect.Value, path string) reflect.Value {
	t := v.Type()
	for name := range strings.SplitSeq(path, ".") {
		if v = v.FieldByName(name); !v.IsValid() {
			panic("conf: " + t.String() + " has no field " + path)
		}
	}
	return v
}

// fromKeys is the one conversion of a table: each row's field of *dst,
// a package's Config, is set to the value of the row's key in c, lists
// copied (a Secret reads as its string). TestKeyTable holds every row to
// one key and one field of the same type.
func fromKeys[T any](c Config, dst *T, keys []fieldKey) {
	d := reflect.ValueOf(dst).Elem()
	for _, k := range keys {
		f := fieldAt(d, k.field)
		f.Set(cloneList(keyValue(reflect.ValueOf(c), k.key)).Convert(f.Type()))
	}
}

// toKeys is fromKeys the other way: each row's key of *c is set to the
// field of src, a package's DefaultConfig; a nil list is an empty one, as
// conf's defaults print and compare so.
func toKeys(c *Config, src any, keys []fieldKey) {
	s := reflect.ValueOf(src)
	for _, k := range keys {
		kv := keyValue(reflect.ValueOf(c).Elem(), k.key)
		v := cloneList(fieldAt(s, k.field))
		if v.Kind() == reflect.Slice && v.IsNil() {
			v = reflect.MakeSlice(v.Type(), 0, 0)
		}
		kv.Set(v.Convert(kv.Type()))
	}
}

// cloneList returns a copy of v when it is a slice, else v.
func cloneList(v reflect.Value) reflect.Value {
	if v.Kind() != reflect.Slice || v.IsNil() {
		return v
	}
	out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
	reflect.Copy(out, v)
	return out
}

func hasAnyPrefix(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if key == p || strings.HasPrefix(key, p+".") {
			return true
		}
	}
	return false
}

// validatePackages checks every conversion with its package's Validate.
func (c Config) validatePackages(ck *checker) {
	// The base counts milliseconds, the one type every layout takes, so
	// that a probe of id.layout alone judges the layout, not the type.
	checkConversion(ck, "id", []string{"id", "time_guard", "machine.id"}, c.coreConfig(), core.Config{Type: core.MinGranularity}, coreKeys)
	checkConversion(ck, "central", []string{"central"}, c.centralConfig(), central.Config{}, centralKeys)
	checkConversion(ck, "rest", []string{"rest", "central.max_batch"}, c.restConfig(), rest.Config{}, restKeys)
	checkConversion(ck, "metrics", []string{"metrics"}, c.metricsConfig(), connlimit.Config{MaxConns: 1, MaxConnsPerPeer: 1}, metricsKeys)
	// The client's fallback is an embedded issuer, checked as such when
	// ClientConfig builds it.
	base := client.DefaultConfig("127.0.0.1:1")
	base.NoFallback = true
	cc := c.clientConfig()
	cc.NoFallback = true      // judged as an embedded issuer, as said above
	if len(cc.Servers) == 0 { // no client is built from this Config
		cc.Servers = base.Servers
	}
	checkConversion(ck, "client", []string{"client"}, cc, base, clientKeys)
	mbase := machineid.DefaultConfig()
	mbase.Static = new(core.MachineID(0))
	checkConversion(ck, "machine", []string{"machine"}, c.Machine.machineID(), mbase, machineKeys)
	checkConversion(ck, "segment", []string{"segment"}, c.segmentConfig(), segment.DefaultConfig(), segmentKeys)
	if c.Segment.Store == SegmentStoreMySQL {
		checkConversion(ck, "segment", []string{"segment.dsn", "segment.table"}, c.segmentMySQLConfig(),
			mysqlstore.Config{DSN: "vesta@tcp(127.0.0.1:3306)/leaf"}, segmentMySQLKeys)
	}
	if c.Segment.Store == SegmentStoreRedis {
		checkConversion(ck, "segment.redis", []string{"segment.redis"}, c.segmentRedisConfig(),
			redisstore.Config{Addrs: []string{"127.0.0.1:6379"}}, segmentRedisKeys)
	}
}

// coreConfig is CoreConfig without the checks: coreKeys, and machine.id
// (0 when unset).
func (c Config) coreConfig() core.Config {
	var cc core.Config
	if id := c.Machine.Static(); id != nil {
		cc.Machine = *id
	}
	fromKeys(c, &cc, coreKeys)
	return cc
}

// centralConfig is CentralConfig without the checks and the TLS files.
func (c Config) centralConfig() central.Config {
	cc := central.DefaultConfig()
	fromKeys(c, &cc, centralKeys)
	return cc
}

// restConfig is RESTConfig without the checks and the TLS files.
func (c Config) restConfig() rest.Config {
	rc := rest.DefaultConfig()
	fromKeys(c, &rc, restKeys)
	return rc
}

// metricsConfig is MetricsConfig without the checks: the caps, and
// REST's request timeout as the first request's deadline. connlimit has
// no defaults for its connection caps, so the zero rule is applied here,
// the one place that owns them: zero is defaultMetrics' value.
// max_unsent_bytes is passed on as it is: connlimit reads zero as
// defaultMetrics' 8 MiB and a negative value as no bound. A negative
// max_conns or max_conns_per_peer is passed on for connlimit to refuse:
// a connection cap has no off.
func (c Config) metricsConfig() connlimit.Config {
	d := defaultMetrics()
	lc := connlimit.Config{FirstRequest: rest.DefaultRequestTimeout}
	fromKeys(c, &lc, metricsKeys)
	lc.MaxConns = cmp.Or(lc.MaxConns, d.MaxConns)
	lc.MaxConnsPerPeer = cmp.Or(lc.MaxConnsPerPeer, d.MaxConnsPerPeer)
	return lc
}

// MetricsConfig returns the metrics listener's policy: the metrics.*
// caps, and REST's request timeout as the first request's deadline.
// Budget, Metrics, Logger and Name are left for the caller. It validates c
// first.
func (c Config) MetricsConfig() (connlimit.Config, error) {
	if err := c.Validate(); err != nil {
		return connlimit.Config{}, err
	}
	return c.metricsConfig(), nil
}

// clientConfig is ClientConfig without the checks and the fallback.
func (c Config) clientConfig() client.Config {
	cc := client.DefaultConfig(c.Client.Servers...)
	cc.NoFallback = c.Client.NoFallback
	fromKeys(c, &cc, clientKeys)
	return cc
}

// CentralConfig returns the central server's configuration: the
// central.* limits and timeouts, and the TLS configuration read from
// central.tls (nil when off). Logger, Registerer and Sequences are left
// for the caller. It validates c first.
func (c Config) CentralConfig() (central.Config, error) {
	if err := c.Validate(); err != nil {
		return central.Config{}, err
	}
	tlsCfg, err := c.Central.TLS.Load()
	if err != nil {
		return central.Config{}, err
	}
	cc := c.centralConfig()
	cc.TLS = tlsCfg
	return cc, nil
}

// RESTConfig returns the REST server's configuration: rest.token, the
// rest.* limits, central.max_batch as its largest batch, and the TLS
// configuration read from rest.tls (nil when off). Logger, Registerer,
// Gatherer, Ready and Sequences are left for the caller. It validates c
// first.
func (c Config) RESTConfig() (rest.Config, error) {
	if err := c.Validate(); err != nil {
		return rest.Config{}, err
	}
	tlsCfg, err := c.REST.TLS.Load()
	if err != nil {
		return rest.Config{}, err
	}
	rc := c.restConfig()
	rc.TLS = tlsCfg
	return rc, nil
}
