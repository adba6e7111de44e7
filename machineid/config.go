package machineid

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// The publish method (core.Method) of an issuer chooses the range its
// machine ID must lie in: core.Embedded (package embed and the client's
// fallback) the embedded range, core.Central and core.REST (the servers)
// the server range. serverSide is that rule, and rangeName names the
// range in messages and in the metrics' range label.
func serverSide(m core.Method) bool { return m != core.Embedded }

func rangeName(m core.Method) string {
	if serverSide(m) {
		return "server"
	}
	return "embedded"
}

// checkMethod refuses a method no issuer publishes with.
func checkMethod(m core.Method) error {
	if m > core.REST {
		return fmt.Errorf("%w: method %s; want embedded, central or rest", ErrConfig, m)
	}
	return nil
}

// Provider names, as Config.Providers lists them.
const (
	ProviderStatic  = "static"  // Config.Static
	ProviderIPTable = "iptable" // Config.IPTable, matched against every address of the host
	ProviderRedis   = "redis"   // a lease in Redis (Config.Redis)
	ProviderK8s     = "k8s"     // the StatefulSet ordinal of the hostname plus Config.K8sOffset
	ProviderEtcd    = "etcd"    // a lease in etcd (Config.Etcd)
)

var knownProviders = []string{ProviderStatic, ProviderIPTable, ProviderRedis, ProviderK8s, ProviderEtcd}

// linkImport is the package that links a leasing provider's store into a
// program (with the store's client library): machineid itself links none,
// so that a program on a fixed ID pays for no Redis or etcd client.
var linkImport = map[string]string{
	ProviderRedis: "github.com/vesta-go/vesta/machineid/redislease",
	ProviderEtcd:  "github.com/vesta-go/vesta/machineid/etcdlease",
}

// notLinked says, for a leasing provider whose store package this program
// does not link, which import to add; "" when it is linked, or needs none.
func notLinked(p string) string {
	pkg, ok := linkImport[p]
	if !ok {
		return ""
	}
	if _, linked := leasestore.Lookup(p); linked {
		return ""
	}
	return fmt.Sprintf("the %s provider is not linked into this program; add import _ %q", p, pkg)
}

// leasing reports whether a provider leases IDs from a store (redis,
// etcd): the IDs it may hand out are the lease range, which fixed IDs
// must stay out of.
func leasing(providers []string) bool {
	return slices.Contains(providers, ProviderRedis) || slices.Contains(providers, ProviderEtcd)
}

// Providers returns every provider name, in the order above.
func Providers() []string { return append([]string(nil), knownProviders...) }

// Config says where an issuer's machine ID comes from. Acquire copies it.
type Config struct {
	// Providers are tried in order until one gives an ID; a provider that
	// is not available here (ErrUnavailable) passes to the next. Each
	// name at most once. Nil or empty is [static].
	Providers []string
	// Static is the static provider's machine ID; nil is none chosen, and
	// then a listed static provider is refused with ErrNoMachineID: there
	// is no default ID, as two hosts left on one would issue the same IDs.
	// Each instance needs its own, outside the IDs leases hand out
	// (see ServerLeaseRange). Since Go 1.26: new(core.MachineID(42)).
	Static *core.MachineID
	// IPTable maps IP addresses (IPv4 or IPv6 text) to machine IDs for
	// the iptable provider. Empty does not validate when the provider is
	// listed.
	IPTable map[string]core.MachineID
	// K8sOffset is added to the StatefulSet pod ordinal by the k8s
	// provider, 0-1023. It is a value, not a limit: zero adds nothing
	// (ordinal 0 is machine 0), the one reading that keeps every offset
	// reachable. DefaultConfig's is 924, the server range's first ID, for
	// a StatefulSet of servers; embed's DefaultConfig takes 0, the
	// embedded range's first.
	K8sOffset int
	// Hostname is read by the k8s provider; "" is os.Hostname().
	Hostname string
	// HostAddrs are matched by the iptable provider; nil reads the
	// addresses of every network interface of the host.
	HostAddrs []netip.Addr
	// EmbeddedRange holds the IDs of embedded issuers and the client's
	// fallback; the zero Range is DefaultEmbeddedRange (0-923).
	EmbeddedRange core.MachineRange
	// ServerRange holds the IDs of central and REST servers; the zero
	// Range is DefaultServerRange (924-1023). It must not overlap
	// EmbeddedRange.
	ServerRange core.MachineRange
	// EmbeddedLeaseRange is the part of EmbeddedRange that leases (Redis
	// or etcd) hand out. The zero Range is all of EmbeddedRange when the
	// redis or etcd provider is listed, and no ID otherwise. Fixed IDs (Static, the
	// IPTable values, the k8s IDs) must lie outside it, so that a host on
	// a fixed ID never holds one a leasing host can take: a fleet mixing
	// both sets it in the configuration every host shares.
	EmbeddedLeaseRange core.MachineRange
	// ServerLeaseRange is EmbeddedLeaseRange for ServerRange.
	ServerLeaseRange core.MachineRange
	// Redis configures the redis provider.
	Redis RedisConfig
	// Etcd configures the etcd provider.
	Etcd EtcdConfig
	// History bounds the hold history kept beside the leases (history.go);
	// the zero value keeps the last 32 holds of each machine ID, for at
	// most 30 days.
	History HistoryConfig
	// Clock times the lease (deadlines and renewals) and is compared
	// with Redis's TIME; nil is a core.SystemClock anchored at Acquire.
	Clock core.Clock
	// Logger; nil discards. Passwords are never logged.
	Logger *slog.Logger
}

// RedisConfig configures the redis provider: where Redis is and how long a
// lease lives. Its String and LogValue hide the password.
//
// A single Redis, or the master of a Redis Sentinel group. Redis Cluster
// is refused: a Cluster master cut off in a minority keeps accepting
// writes until its node timeout while a replica on the majority side is
// promoted, and nothing lets a holder tell (docs/design/sentinel.md).
type RedisConfig struct {
	// Addrs: one address (a single Redis), or the Sentinel addresses with
	// MasterName; host:port each, a port 1-65535. Empty does not validate
	// when the redis provider is listed, nor do several without MasterName
	// (a Cluster).
	Addrs []string
	// MasterName selects Sentinel: Addrs are the Sentinels, and a lease
	// write counts only when a majority of the Sentinel group names the
	// master it went to, at the same config epoch as the claim. "" is a
	// single Redis.
	MasterName string
	// Username and Password authenticate; "" is none.
	Username string
	Password string
	// DB is the database of a single Redis or Sentinel; zero is 0.
	DB int
	// TLS, when not nil, is the *tls.Config (crypto/tls) of the
	// connections to Redis and the Sentinels; nil speaks plain TCP. It is
	// typed any so that machineid does not import crypto/tls, whose
	// initialization would add about 1.2 MB to every program on a fixed
	// machine ID; the redis provider's package checks it (Validate: anything
	// but a *tls.Config is ErrConfig, naming Redis.TLS).
	TLS any
	// KeyPrefix starts every key; "" is "vesta". It may not hold "{" or
	// "}", which would break the hash tag that keeps a machine ID's keys
	// in one Cluster slot.
	KeyPrefix string
	// LeaseTTL is the lease's time to live, renewed every third of it;
	// zero is 15s. It may not be below 100ms, and LeaseTTL +
	// MaxClockSkew + the generator's MaxBorrow may not exceed
	// MaxRedisReach.
	LeaseTTL time.Duration
	// SafetyMargin: the issuer is fenced once renewal has not succeeded
	// for LeaseTTL minus SafetyMargin, so it stops before Redis could
	// give the ID to someone else. Zero is max(LeaseTTL/5, 1s) plus
	// MaxClockSkew, capped at LeaseTTL/2. It must be below 2/3 of
	// LeaseTTL, so that a renewal is due before the deadline.
	SafetyMargin time.Duration
	// MaxClockSkew is how far the local clock may be from Redis's TIME
	// (and, under Sentinel, from each Sentinel's clock) when leasing and
	// at every renewal, round trip included. The quarantine of a new
	// holder counts on it, so with the redis provider zero (no check)
	// does not validate.
	MaxClockSkew time.Duration
	// MinReplicas: when above zero, every write of the lease (claim,
	// renewal, mark, release) is followed by WAIT for this many replicas;
	// fewer acknowledgements count as a failed write. Zero waits for none:
	// safety does not depend on it, it narrows what a failover loses.
	MinReplicas int
}

// String prints the configuration with the password hidden.
func (r RedisConfig) String() string {
	return fmt.Sprintf("{Addrs:%v MasterName:%q Username:%q Password:%s DB:%d TLS:%t KeyPrefix:%q LeaseTTL:%s SafetyMargin:%s MaxClockSkew:%s MinReplicas:%d}",
		r.Addrs, r.MasterName, r.Username, redact(r.Password), r.DB, tlsOn(r.TLS), r.KeyPrefix, r.LeaseTTL, r.SafetyMargin, r.MaxClockSkew, r.MinReplicas)
}

// GoString is String, so that %#v hides the password too.
func (r RedisConfig) GoString() string { return r.String() }

// LogValue logs the configuration with the password hidden.
func (r RedisConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("addrs", r.Addrs), slog.String("master_name", r.MasterName),
		slog.String("password", redact(r.Password)), slog.String("key_prefix", r.KeyPrefix),
		slog.Duration("lease_ttl", r.LeaseTTL), slog.Duration("max_clock_skew", r.MaxClockSkew))
}

// EtcdConfig configures the etcd provider: where etcd is and how long a
// lease lives. Its String and LogValue hide the password.
type EtcdConfig struct {
	// Endpoints of the etcd cluster's members, host:port each (a port
	// 1-65535), or URLs of http:// or https:// and host:port. Empty does
	// not validate when the etcd provider is listed.
	Endpoints []string
	// Username and Password authenticate; "" is none.
	Username string
	Password string
	// TLS, when not nil, is the *tls.Config (crypto/tls) of the
	// connections to etcd, typed any as RedisConfig.TLS is and checked by
	// the etcd provider's package; nil speaks plain TCP.
	TLS any
	// KeyPrefix starts every key ("vesta/machine/924/lease"); "" is
	// "vesta".
	KeyPrefix string
	// LeaseTTL is the etcd lease's time to live, in whole seconds (etcd
	// counts seconds), renewed every third of it; zero is 10s, and it may
	// not be below 2s.
	LeaseTTL time.Duration
	// SafetyMargin: the issuer is fenced once renewal has not succeeded
	// for LeaseTTL minus SafetyMargin. Zero is max(LeaseTTL/5, 1s), capped
	// at LeaseTTL/2; it must be below 2/3 of LeaseTTL.
	SafetyMargin time.Duration
}

// String prints the configuration with the password hidden.
func (e EtcdConfig) String() string {
	return fmt.Sprintf("{Endpoints:%v Username:%q Password:%s TLS:%t KeyPrefix:%q LeaseTTL:%s SafetyMargin:%s}",
		e.Endpoints, e.Username, redact(e.Password), tlsOn(e.TLS), e.KeyPrefix, e.LeaseTTL, e.SafetyMargin)
}

// GoString is String, so that %#v hides the password too.
func (e EtcdConfig) GoString() string { return e.String() }

// LogValue logs the configuration with the password hidden.
func (e EtcdConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("endpoints", e.Endpoints), slog.String("username", e.Username),
		slog.String("password", redact(e.Password)), slog.String("key_prefix", e.KeyPrefix),
		slog.Duration("lease_ttl", e.LeaseTTL))
}

// tlsOn reports a TLS setting that is not nil, nor a nil *tls.Config.
func tlsOn(v any) bool {
	if v == nil {
		return false
	}
	r := reflect.ValueOf(v)
	return r.Kind() != reflect.Pointer || !r.IsNil()
}

func redact(secret string) string {
	if secret == "" {
		return `""`
	}
	return "[hidden]"
}

// MaxRedisReach bounds, on every host that leases from Redis, LeaseTTL +
// MaxClockSkew + the generator's MaxBorrow: how far past the moment Redis
// could have lost its lease a holder's IDs can reach. The holder fences
// within LeaseTTL of its last renewal, its clock is within MaxClockSkew of
// Redis's, and its time fields run at most MaxBorrow ahead of its clock.
//
// A claim that may follow a holder whose lease Redis lost (a new, restarted,
// flushed or failed-over instance; a mark deleted or evicted) waits for
// this bound to pass, never for its own settings: the record of the
// fleet's settings may have gone with the data, and the holder before it
// may run other settings, another clock or another build. It is part of
// the lease protocol, the same in every build. The argument is in
// docs/design/redis-data-loss.md#takeover-quarantine, and the start-up it
// costs (about 19s on a new Redis at the defaults) in BENCHMARKS.md.
const MaxRedisReach = 20 * time.Second

// maxRedisReach is MaxRedisReach; in-package tests lower it to keep their
// quarantines short (export_test.go).
var maxRedisReach = MaxRedisReach

// Defaults of the zero fields.
const (
	defaultKeyPrefix = "vesta"
	defaultLeaseTTL  = 15 * time.Second
	minLeaseTTL      = 100 * time.Millisecond
	defaultEtcdTTL   = 10 * time.Second
	minEtcdTTL       = 2 * time.Second
)

// DefaultConfig returns the recommended configuration: the static provider
// with no machine ID chosen (Acquire refuses with ErrNoMachineID until
// Static is set or other providers are chosen), the default ranges, for
// the k8s provider the offset 924 (ordinal 0 is the server range's first
// ID), and for
// the redis provider Redis at 127.0.0.1:6379, key prefix "vesta", a 15s
// lease and a 2s clock-skew check, for the etcd provider etcd at
// 127.0.0.1:2379, key prefix "vesta" and a 10s lease.
func DefaultConfig() Config {
	return Config{
		Providers:     []string{ProviderStatic},
		K8sOffset:     int(DefaultServerRange.First),
		EmbeddedRange: DefaultEmbeddedRange,
		ServerRange:   DefaultServerRange,
		Redis: RedisConfig{
			Addrs: []string{"127.0.0.1:6379"}, KeyPrefix: defaultKeyPrefix,
			LeaseTTL: defaultLeaseTTL, MaxClockSkew: 2 * time.Second,
		},
		Etcd:    EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}, KeyPrefix: defaultKeyPrefix, LeaseTTL: defaultEtcdTTL},
		History: HistoryConfig{Holds: DefaultHistoryHolds, MaxAge: DefaultHistoryMaxAge},
	}
}

// Validate reports the first field that cannot be used, by name. What
// depends on the publish method (is the static ID inside its range?) is
// checked by ValidateFor and Acquire.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

// resolve validates c and returns a copy with the zero fields replaced by
// their defaults, sharing no slice or map with c.
func (c Config) resolve() (Config, error) {
	bad := func(field, format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, args...))
	}
	r := c
	r.Providers = append([]string(nil), c.Providers...)
	if len(r.Providers) == 0 {
		r.Providers = []string{ProviderStatic}
	}
	seen := map[string]bool{}
	for _, p := range r.Providers {
		if !isKnown(p) {
			return bad("Providers", "unknown provider %q; want any of %s", p, strings.Join(knownProviders, ", "))
		}
		if seen[p] {
			return bad("Providers", "%q is listed twice", p)
		}
		if msg := notLinked(p); msg != "" {
			return bad("Providers", "%s", msg)
		}
		seen[p] = true
	}
	if seen[ProviderRedis] && seen[ProviderEtcd] {
		return bad("Providers", "lists both redis and etcd; two stores cannot keep one machine ID exclusive: list one (a fleet moving from one to the other gives each its own lease range)")
	}
	if c.Static != nil {
		id := *c.Static
		if id > core.MaxMachine {
			return bad("Static", "%d; want 0-%d", id, core.MaxMachine)
		}
		r.Static = &id
	}
	if seen[ProviderIPTable] && len(c.IPTable) == 0 {
		return bad("IPTable", "empty, but the iptable provider is listed")
	}
	if _, err := parseIPTable(c.IPTable); err != nil {
		return bad("IPTable", "%v", err)
	}
	if c.K8sOffset < 0 || c.K8sOffset > int(core.MaxMachine) {
		return bad("K8sOffset", "%d; want 0-%d", c.K8sOffset, core.MaxMachine)
	}
	r.HostAddrs = append([]netip.Addr(nil), c.HostAddrs...)
	if r.EmbeddedRange.IsZero() {
		r.EmbeddedRange = DefaultEmbeddedRange
	}
	if r.ServerRange.IsZero() {
		r.ServerRange = DefaultServerRange
	}
	for _, f := range []struct {
		name string
		r    core.MachineRange
	}{{"EmbeddedRange", r.EmbeddedRange}, {"ServerRange", r.ServerRange}} {
		if int(f.r.First)+int(f.r.Count)-1 > int(core.MaxMachine) {
			return bad(f.name, "%d IDs from %d pass %d; want first-last within 0-%d", f.r.Count, f.r.First, core.MaxMachine, core.MaxMachine)
		}
	}
	if r.EmbeddedRange.Overlaps(r.ServerRange) {
		return bad("EmbeddedRange", "%s overlaps ServerRange %s; the ranges must be disjoint", r.EmbeddedRange, r.ServerRange)
	}
	for _, f := range []struct {
		name, rangeName string
		lease, rng      core.MachineRange
	}{{"EmbeddedLeaseRange", "EmbeddedRange", r.EmbeddedLeaseRange, r.EmbeddedRange}, {"ServerLeaseRange", "ServerRange", r.ServerLeaseRange, r.ServerRange}} {
		if !f.lease.IsZero() && !f.rng.Covers(f.lease) {
			return bad(f.name, "%s; want a part of %s %s", f.lease, f.rangeName, f.rng)
		}
	}
	if err := r.checkFixed(seen); err != nil {
		return Config{}, err
	}
	rc := &r.Redis
	rc.Addrs = append([]string(nil), c.Redis.Addrs...)
	if rc.KeyPrefix == "" {
		rc.KeyPrefix = defaultKeyPrefix
	}
	if strings.ContainsAny(rc.KeyPrefix, "{}") {
		return bad("Redis.KeyPrefix", "%q holds { or }; they would break the keys' hash tag", rc.KeyPrefix)
	}
	rc.LeaseTTL = cmp.Or(rc.LeaseTTL, defaultLeaseTTL)
	if rc.LeaseTTL < minLeaseTTL {
		return bad("Redis.LeaseTTL", "%s; want at least %s", rc.LeaseTTL, minLeaseTTL)
	}
	if rc.MaxClockSkew < 0 {
		return bad("Redis.MaxClockSkew", "%s is negative", rc.MaxClockSkew)
	}
	if rc.MaxClockSkew == 0 && seen[ProviderRedis] {
		return bad("Redis.MaxClockSkew", "0 turns the clock check off, but the redis provider needs a bound: a new holder's quarantine counts on every clock being within it of Redis's TIME; set it (e.g. 2s)")
	}
	if err := checkReach(rc.LeaseTTL, rc.MaxClockSkew, 0); err != nil && seen[ProviderRedis] {
		return Config{}, err
	}
	if rc.MinReplicas < 0 {
		return bad("Redis.MinReplicas", "%d is negative; want 0 (no WAIT) or more", rc.MinReplicas)
	}
	switch {
	case rc.SafetyMargin < 0:
		return bad("Redis.SafetyMargin", "%s is negative", rc.SafetyMargin)
	case rc.SafetyMargin == 0:
		rc.SafetyMargin = min(max(rc.LeaseTTL/5, time.Second)+rc.MaxClockSkew, rc.LeaseTTL/2)
	case rc.SafetyMargin >= rc.LeaseTTL*2/3:
		return bad("Redis.SafetyMargin", "%s; want below 2/3 of Redis.LeaseTTL %s, so that a renewal is due before the deadline", rc.SafetyMargin, rc.LeaseTTL)
	}
	if seen[ProviderRedis] && len(rc.Addrs) == 0 {
		return bad("Redis.Addrs", "empty, but the redis provider is listed")
	}
	for _, a := range rc.Addrs {
		if msg := checkHostPort(a); msg != "" {
			return bad("Redis.Addrs", "%s", msg)
		}
	}
	if seen[ProviderRedis] && len(rc.Addrs) > 1 && rc.MasterName == "" {
		return bad("Redis.Addrs", "%d addresses without Redis.MasterName would be a Redis Cluster, which cannot keep a machine-ID lease: a Cluster master cut off in a minority keeps accepting writes while a replica is promoted on the majority side; give one Redis, or the Sentinels with Redis.MasterName, or use etcd", len(rc.Addrs))
	}
	if err := r.resolveEtcd(seen[ProviderEtcd]); err != nil {
		return Config{}, err
	}
	h, err := r.History.resolve()
	if err != nil {
		return Config{}, err
	}
	r.History = h
	// What only a store's package can judge (a TLS setting's type).
	for _, p := range r.Providers {
		if lp, ok := leasestore.Lookup(p); ok && lp.Check != nil {
			if err := lp.Check(leasestore.Base{Redis: leasestore.RedisSettings(r.Redis), Etcd: leasestore.EtcdSettings(r.Etcd)}); err != nil {
				return Config{}, err
			}
		}
	}
	// Last, so that a config with other mistakes names those first.
	if seen[ProviderStatic] && r.Static == nil {
		return Config{}, fmt.Errorf("%w: Static: unset, but the static provider is listed: %w", ErrConfig, ErrNoMachineID)
	}
	return r, nil
}

// resolveEtcd validates c.Etcd and fills its defaults.
func (c *Config) resolveEtcd(listed bool) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, args...))
	}
	e := &c.Etcd
	e.Endpoints = append([]string(nil), e.Endpoints...)
	if e.KeyPrefix == "" {
		e.KeyPrefix = defaultKeyPrefix
	}
	e.LeaseTTL = cmp.Or(e.LeaseTTL, defaultEtcdTTL)
	switch {
	case e.LeaseTTL < minEtcdTTL:
		return bad("Etcd.LeaseTTL", "%s; want at least %s", e.LeaseTTL, minEtcdTTL)
	case e.LeaseTTL%time.Second != 0:
		return bad("Etcd.LeaseTTL", "%s; want whole seconds (etcd leases count seconds)", e.LeaseTTL)
	}
	switch {
	case e.SafetyMargin < 0:
		return bad("Etcd.SafetyMargin", "%s is negative", e.SafetyMargin)
	case e.SafetyMargin == 0:
		e.SafetyMargin = min(max(e.LeaseTTL/5, time.Second), e.LeaseTTL/2)
	case e.SafetyMargin >= e.LeaseTTL*2/3:
		return bad("Etcd.SafetyMargin", "%s; want below 2/3 of Etcd.LeaseTTL %s, so that a renewal is due before the deadline", e.SafetyMargin, e.LeaseTTL)
	}
	if listed && len(e.Endpoints) == 0 {
		return bad("Etcd.Endpoints", "empty, but the etcd provider is listed")
	}
	for _, a := range e.Endpoints {
		hostPort := strings.TrimPrefix(strings.TrimPrefix(a, "http://"), "https://")
		if msg := checkHostPort(hostPort); msg != "" {
			return bad("Etcd.Endpoints", "%s (or http:// or https:// before it)", msg)
		}
	}
	return nil
}

// checkHostPort is "" when s is host:port with a port 1-65535, else why
// not, s shortened to 64 bytes: the one rule of a store's address.
func checkHostPort(s string) string {
	if _, port, err := net.SplitHostPort(s); err == nil {
		if p, err := strconv.Atoi(port); err == nil && p >= 1 && p <= 65535 {
			return ""
		}
	}
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Sprintf("%q; want host:port with a port 1-65535", s)
}

// Range returns the machine-ID range of publish method m: EmbeddedRange
// for core.Embedded, ServerRange for core.Central and core.REST; a zero
// field is its default. It does not validate c.
func (c Config) Range(m core.Method) core.MachineRange {
	if serverSide(m) {
		return cmp.Or(c.ServerRange, DefaultServerRange)
	}
	return cmp.Or(c.EmbeddedRange, DefaultEmbeddedRange)
}

// LeaseRange returns the IDs of m's range (see Range) that leases (Redis
// or etcd) hand out (the effective lease range): EmbeddedLeaseRange or
// ServerLeaseRange when set; else the whole range when the redis or etcd
// provider is listed; else the zero Range (none). It does not validate c.
func (c Config) LeaseRange(m core.Method) core.MachineRange {
	explicit := c.EmbeddedLeaseRange
	if serverSide(m) {
		explicit = c.ServerLeaseRange
	}
	return EffectiveLeaseRange(explicit, c.Range(m), leasing(c.Providers))
}

// inLease is InLease for m's effective lease range, naming c's fields.
func (c Config) inLease(m core.Method, id core.MachineID) string {
	leaseName, wholeName, explicit := "EmbeddedLeaseRange", "EmbeddedRange", c.EmbeddedLeaseRange
	if serverSide(m) {
		leaseName, wholeName, explicit = "ServerLeaseRange", "ServerRange", c.ServerLeaseRange
	}
	return InLease(id, c.LeaseRange(m), !explicit.IsZero(), leaseName, wholeName)
}

// fixedCheck returns an error (wrapping ErrConfig) when id, a fixed ID
// given by what, lies in the effective lease range of either range (they
// are disjoint, so at most one can hold it).
func (c Config) fixedCheck(what string, id core.MachineID) error {
	for _, m := range []core.Method{core.Embedded, core.Central} {
		if msg := c.inLease(m, id); msg != "" {
			return fmt.Errorf("%w: %s: %s", ErrConfig, what, msg)
		}
	}
	return nil
}

// checkFixed refuses the fixed IDs of the listed providers that Redis
// leases could hand out too: Static, every IPTable value and the k8s ID of
// ordinal 0 (later ordinals are checked by Acquire).
func (c Config) checkFixed(listed map[string]bool) error {
	if listed[ProviderStatic] && c.Static != nil {
		if err := c.fixedCheck("Static", *c.Static); err != nil {
			return err
		}
	}
	if listed[ProviderIPTable] {
		for _, ip := range slices.Sorted(maps.Keys(c.IPTable)) {
			if err := c.fixedCheck(fmt.Sprintf("IPTable[%q]", ip), c.IPTable[ip]); err != nil {
				return err
			}
		}
	}
	if listed[ProviderK8s] {
		if err := c.fixedCheck("K8sOffset (the ID of ordinal 0)", core.MachineID(c.K8sOffset)); err != nil {
			return err
		}
	}
	return nil
}

// ValidateFor is Validate plus the checks of publish method m: the static
// ID and the k8s offset must lie in m's range (see Range).
func (c Config) ValidateFor(m core.Method) error {
	_, _, _, err := c.resolveFor(m)
	return err
}

// resolveFor is resolve plus the checks of publish method m: the static ID
// and the k8s offset must lie in m's range. It returns m's range and its
// effective lease range.
func (c Config) resolveFor(m core.Method) (Config, core.MachineRange, core.MachineRange, error) {
	if err := checkMethod(m); err != nil {
		return Config{}, core.MachineRange{}, core.MachineRange{}, err
	}
	r, err := c.resolve()
	if err != nil {
		return Config{}, core.MachineRange{}, core.MachineRange{}, err
	}
	rng := r.Range(m)
	for _, p := range r.Providers {
		switch p {
		case ProviderStatic:
			if err := rng.Check(*r.Static, rangeName(m)); err != nil {
				return Config{}, core.MachineRange{}, core.MachineRange{}, fmt.Errorf("%w: Static: %w", ErrConfig, err)
			}
		case ProviderK8s:
			if err := rng.Check(core.MachineID(r.K8sOffset), rangeName(m)); err != nil {
				return Config{}, core.MachineRange{}, core.MachineRange{}, fmt.Errorf("%w: K8sOffset (the ID of ordinal 0): %w", ErrConfig, err)
			}
		}
	}
	return r, rng, r.LeaseRange(m), nil
}

func isKnown(p string) bool {
	for _, k := range knownProviders {
		if p == k {
			return true
		}
	}
	return false
}

// parseIPTable parses the keys. Two spellings of one address (10.0.0.1
// and ::ffff:10.0.0.1) with different IDs are refused.
func parseIPTable(t map[string]core.MachineID) (map[netip.Addr]core.MachineID, error) {
	out := make(map[netip.Addr]core.MachineID, len(t))
	for k, id := range t {
		a, err := netip.ParseAddr(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address", k)
		}
		if id > core.MaxMachine {
			return nil, fmt.Errorf("%s: machine ID %d; want 0-%d", k, id, core.MaxMachine)
		}
		a = a.Unmap().WithZone("")
		if prev, ok := out[a]; ok && prev != id {
			return nil, fmt.Errorf("%s is listed twice, with IDs %d and %d", a, prev, id)
		}
		out[a] = id
	}
	return out, nil
}

// checkReach refuses a Redis lease whose holder could issue further than
// maxRedisReach past a loss of its lease: the bound every claimant after a
// Redis data loss waits for, whatever this host's own settings.
func checkReach(ttl, skew, borrow time.Duration) error {
	if reach := ttl + skew + borrow; reach > maxRedisReach {
		return fmt.Errorf("%w: Redis.LeaseTTL %s + Redis.MaxClockSkew %s + MaxBorrow %s = %s; want at most %s (machineid.MaxRedisReach): after Redis loses data, a new holder waits that bound, not the settings of the holder before it, so no holder may reach further",
			ErrConfig, ttl, skew, borrow, reach, maxRedisReach)
	}
	return nil
}
