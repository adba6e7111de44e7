package conf

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/connlimit"
	"github.com/vesta-go/vesta/machineid"
)

// Config is the whole configuration. The koanf tags are the YAML keys.
// Build one with DefaultConfig (or Load), not from the zero value: the zero
// Config does not validate.
type Config struct {
	ID        IDConfig        `koanf:"id"`
	Machine   MachineConfig   `koanf:"machine"`
	TimeGuard TimeGuardConfig `koanf:"time_guard"`
	Central   CentralConfig   `koanf:"central"`
	REST      RESTConfig      `koanf:"rest"`
	Client    ClientConfig    `koanf:"client"`
	Segment   SegmentConfig   `koanf:"segment"` // segment.go
	Mask      MaskConfig      `koanf:"mask"`    // mask.go
	Metrics   MetricsConfig   `koanf:"metrics"`
	Log       LogConfig       `koanf:"log"`
}

// IDConfig is what the IDs look like.
type IDConfig struct {
	// The id keys are core.Config's fields (coreKeys): their meaning,
	// zero included, and their limits are documented there. YAML writes
	// Layout as sorted, vesta or leaf (Leaf's snowflake bits; Load then
	// defaults Type to min-granularity, and Epoch may only be Leaf's), Type
	// as max-peak, min-granularity, 0 or 1, and Epoch in RFC 3339, or ""
	// for the zero Time. MaxBorrow is an exception to the zero rule (see
	// the package documentation): 0 never runs ahead.
	Layout    core.Layout   `koanf:"layout" field:"core.Layout"`
	Type      core.Type     `koanf:"type" field:"core.Type" with:"Layout"`
	Epoch     time.Time     `koanf:"epoch" field:"core.Epoch" with:"Layout"`
	Version   uint8         `koanf:"version" field:"core.Version" with:"Layout"`
	MaxBorrow time.Duration `koanf:"max_borrow" field:"core.MaxBorrow"`
}

// MachineConfig is how an issuer gets its machine ID.
type MachineConfig struct {
	// Providers are tried in the order listed: static, iptable, k8s,
	// redis or etcd (not both). Nil or empty does not validate.
	Providers []string `koanf:"providers"`
	// ID is the static provider's machine ID; nil is unset. There is no
	// default: with static listed and ID unset, the issuers refuse
	// (RequireMachine), as two hosts left on a default would issue the
	// same IDs. It must lie outside the IDs leases hand out (see
	// RedisConfig.ServerRange).
	ID *int `koanf:"id"`
	// IPTable maps an IP address to a machine ID (iptable provider); nil
	// or empty is no entries.
	IPTable map[string]int `koanf:"ip_table"`
	// K8sOffset is added to a StatefulSet pod's ordinal (k8s provider):
	// machineid.Config.K8sOffset (machineKeys), its default included (924,
	// the server range's first ID); zero adds nothing.
	K8sOffset int `koanf:"k8s_offset" field:"machineid.K8sOffset"`
	// EmbeddedRange is where embedded issuers and the client's fallback
	// take IDs; the zero Range does not validate.
	EmbeddedRange core.MachineRange `koanf:"embedded_range"`
	// ServerRange is where central and REST servers take IDs; the zero
	// Range does not validate.
	ServerRange core.MachineRange `koanf:"server_range"`
	Redis       RedisConfig       `koanf:"redis"`
	Etcd        EtcdConfig        `koanf:"etcd"`
	History     HistoryConfig     `koanf:"history"`
}

// HistoryConfig bounds the hold history a leased machine ID keeps beside
// its lease: Holds and MaxAge are machineid.HistoryConfig's fields
// (machineKeys), their meaning, zero, default and checks there.
type HistoryConfig struct {
	Holds  int           `koanf:"holds" field:"machineid.History.Holds"`
	MaxAge time.Duration `koanf:"max_age" field:"machineid.History.MaxAge"`
}

// RedisConfig is the Redis lease of the redis provider.
type RedisConfig struct {
	// Addrs is machineid.RedisConfig.Addrs (machineKeys): one address, or
	// the Sentinel addresses with MasterName.
	Addrs []string `koanf:"addrs" field:"machineid.Redis.Addrs" with:"Providers Redis.MasterName"`
	// MasterName selects Sentinel; "" is a single server.
	MasterName string `koanf:"master_name"`
	// Password; "" is none. Load fills it from PasswordFile when that is set.
	Password Secret `koanf:"password"`
	// PasswordFile holds the password (read by Load, trailing newline
	// trimmed); "" is none. Setting it and Password is an error.
	PasswordFile string `koanf:"password_file"`
	// Addrs, KeyPrefix, LeaseTTL, MaxClockSkew and MinReplicas are
	// machineid.RedisConfig's fields (machineKeys): their meaning, zero
	// included ("" is vesta; MaxClockSkew zero, no check, does not
	// validate with the redis provider), and their checks are there.
	KeyPrefix    string        `koanf:"key_prefix" field:"machineid.Redis.KeyPrefix"`
	LeaseTTL     time.Duration `koanf:"lease_ttl" field:"machineid.Redis.LeaseTTL"`
	MaxClockSkew time.Duration `koanf:"max_clock_skew" field:"machineid.Redis.MaxClockSkew" with:"Providers"`
	// EmbeddedRange is the part of machine.embedded_range that leases
	// hand out. The zero Range (YAML "") is all of it when the redis
	// provider is listed, and no ID otherwise. Fixed IDs (machine.id,
	// machine.ip_table, the k8s IDs) must lie outside it; a fleet mixing
	// leasing hosts and fixed IDs sets it in the config every host shares.
	EmbeddedRange core.MachineRange `koanf:"embedded_range"`
	// ServerRange is EmbeddedRange for machine.server_range.
	ServerRange core.MachineRange `koanf:"server_range"`
	// MinReplicas is machineid.RedisConfig's, as KeyPrefix.
	MinReplicas int `koanf:"min_replicas" field:"machineid.Redis.MinReplicas"`
}

// EtcdConfig is the etcd lease of the etcd provider.
type EtcdConfig struct {
	// Endpoints is machineid.EtcdConfig.Endpoints (machineKeys), the
	// cluster's members. In the environment (VESTA_MACHINE_ETCD_ENDPOINTS)
	// comma-separated.
	Endpoints []string `koanf:"endpoints" field:"machineid.Etcd.Endpoints" with:"Providers"`
	// Username and Password authenticate; "" is none. Load fills Password
	// from PasswordFile when that is set.
	Username     string `koanf:"username"`
	Password     Secret `koanf:"password"`
	PasswordFile string `koanf:"password_file"`
	// TLS to the members; no CA speaks plain TCP.
	TLS EtcdTLS `koanf:"tls"`
	// KeyPrefix starts every etcd key: machineid.EtcdConfig.KeyPrefix
	// (machineKeys); "" is vesta.
	KeyPrefix string `koanf:"key_prefix" field:"machineid.Etcd.KeyPrefix"`
	// LeaseTTL is the etcd lease's time to live, renewed every third of
	// it: machineid.EtcdConfig.LeaseTTL (machineKeys), documented there.
	LeaseTTL time.Duration `koanf:"lease_ttl" field:"machineid.Etcd.LeaseTTL"`
	// EmbeddedRange and ServerRange are the lease ranges, as
	// machine.redis.embedded_range and server_range are for Redis.
	EmbeddedRange core.MachineRange `koanf:"embedded_range"`
	ServerRange   core.MachineRange `koanf:"server_range"`
}

// EtcdTLS is TLS to etcd's members.
type EtcdTLS struct {
	// CA is a PEM file of the CAs that sign the members' certificates;
	// "" speaks plain TCP.
	CA string `koanf:"ca"`
	// Cert and Key are a client certificate (PEM), both or neither; they
	// need CA.
	Cert string `koanf:"cert"`
	Key  string `koanf:"key"`
}

// Enabled reports whether the etcd client speaks TLS.
func (t EtcdTLS) Enabled() bool { return t.CA != "" }

// TimeGuardConfig is the time guard's high-water mark.
type TimeGuardConfig struct {
	// DataDir is embed.Config.DataDir: the directory of the mark's file
	// store; "" runs without one (a restart with the clock set back could
	// re-issue IDs; warned).
	DataDir string `koanf:"dir" field:"embed.DataDir"`
	// GuardWindow and MaxStartupWait are core.Config's (coreKeys),
	// documented there; MaxStartupWait is an exception to the zero rule:
	// 0 fails at once.
	GuardWindow    time.Duration `koanf:"window" field:"core.GuardWindow" with:"Type"`
	MaxStartupWait time.Duration `koanf:"max_startup_wait" field:"core.MaxStartupWait"`
}

// CentralConfig is the MessagePack-RPC server.
type CentralConfig struct {
	// Listen is host:port; "" turns the server off.
	Listen string `koanf:"listen"`
	// The limits and timeouts are central.Config's fields (each tag names
	// it): their meaning, zero included, and their limits are documented
	// there. REST's largest batch is max_batch too.
	MaxBatch          int           `koanf:"max_batch" field:"central.MaxBatch rest.MaxBatch"`
	MaxRequestBytes   int           `koanf:"max_request_bytes" field:"central.MaxRequestBytes"`
	MaxConns          int           `koanf:"max_conns" field:"central.MaxConns"`
	MaxConnsPerPeer   int           `koanf:"max_conns_per_peer" field:"central.MaxConnsPerPeer"`
	PeerPrefixV6      int           `koanf:"peer_ipv6_prefix" field:"central.PeerPrefixV6"`
	MaxUnsentBytes    int           `koanf:"max_unsent_bytes" field:"central.MaxUnsentBytes"`
	FirstFrameTimeout time.Duration `koanf:"first_frame_timeout" field:"central.FirstFrameTimeout"`
	MaxWaitingIDs     int           `koanf:"max_waiting_ids" field:"central.MaxWaitingIDs"`
	MaxWaitingCalls   int           `koanf:"max_waiting_calls" field:"central.MaxWaitingCalls"`
	IdleTimeout       time.Duration `koanf:"idle_timeout" field:"central.IdleTimeout"`
	ReadTimeout       time.Duration `koanf:"read_timeout" field:"central.ReadTimeout"`
	TLS               CentralTLS    `koanf:"tls"`
}

// ListenerTLS is a listener's TLS, the fields of CentralTLS, RESTTLS and
// MetricsTLS; all empty is none.
type ListenerTLS struct {
	// Cert and Key are PEM files, both or neither.
	Cert string `koanf:"cert"`
	Key  string `koanf:"key"`
	// ClientCA is a PEM file of CAs whose client certificates are
	// required (mTLS): a client without one is refused at the handshake.
	// "" asks for none. It needs Cert.
	ClientCA string `koanf:"client_ca"`
}

// Enabled reports whether the listener speaks TLS.
func (t ListenerTLS) Enabled() bool { return t.Cert != "" }

// CentralTLS is the central server's TLS (central.tls); all empty is
// plain TCP.
type CentralTLS ListenerTLS

// Enabled reports whether the server speaks TLS.
func (t CentralTLS) Enabled() bool { return ListenerTLS(t).Enabled() }

// RESTConfig is the HTTP server.
type RESTConfig struct {
	// Listen is host:port; "" turns the server off.
	Listen string `koanf:"listen"`
	// Token is rest.Config.Token; Load fills it from TokenFile when that
	// is set.
	Token Secret `koanf:"token" field:"rest.Token"`
	// TokenFile holds the token (read by Load, trailing newline
	// trimmed); "" is none. Setting it and Token is an error.
	TokenFile string `koanf:"token_file"`
	// The rest are rest.Config's fields too (each tag names it): their
	// meaning, zero included, and their limits are documented there.
	MetricsAuth     bool     `koanf:"metrics_auth" field:"rest.MetricsAuth" with:"Token"`
	AllowedHosts    []string `koanf:"allowed_hosts" field:"rest.AllowedHosts" with:"Token"`
	MaxConns        int      `koanf:"max_conns" field:"rest.MaxConns"`
	MaxConnsPerPeer int      `koanf:"max_conns_per_peer" field:"rest.MaxConnsPerPeer"`
	PeerPrefixV6    int      `koanf:"peer_ipv6_prefix" field:"rest.PeerPrefixV6"`
	MaxUnsentBytes  int      `koanf:"max_unsent_bytes" field:"rest.MaxUnsentBytes"`
	MaxWaitingIDs   int      `koanf:"max_waiting_ids" field:"rest.MaxWaitingIDs"`
	MaxWaitingCalls int      `koanf:"max_waiting_calls" field:"rest.MaxWaitingCalls"`
	TLS             RESTTLS  `koanf:"tls"`
}

// RESTTLS is the REST server's TLS (rest.tls); all empty is plain HTTP.
// A ClientCA is required on every route, /healthz and /readyz included;
// a Token is still required when set.
type RESTTLS ListenerTLS

// Enabled reports whether the server speaks TLS.
func (t RESTTLS) Enabled() bool { return ListenerTLS(t).Enabled() }

// ClientConfig is for applications using package client, and for
// `vesta gen --servers`.
type ClientConfig struct {
	// Servers are the central servers, host:port each; empty is none
	// (embedded use).
	Servers []string `koanf:"servers"`
	// Timeout, Retries and Prefetch are client.Config's fields
	// (clientKeys): their meaning, zero included, and their limits are
	// documented there.
	Timeout  time.Duration `koanf:"timeout" field:"client.Timeout"`
	Retries  int           `koanf:"retries" field:"client.Retries"`
	Prefetch int           `koanf:"prefetch" field:"client.Prefetch"`
	// NoFallback is client.Config.NoFallback (clientKeys): false, the
	// zero and the default, issues from an embedded generator while every
	// server is down; true returns the error instead.
	NoFallback bool `koanf:"no_fallback"`
}

// MetricsConfig is a listener of its own for GET /metrics (Prometheus),
// for deployments without the REST server, which serves /metrics too. It
// follows the listener policy of the others with caps of its own, small,
// as its clients are a few scrapers: a flood there holds no more than
// they allow. rest.metrics_auth, with rest.token, guards it too.
type MetricsConfig struct {
	// Listen is host:port; "" turns it off.
	Listen string `koanf:"listen"`
	// The caps are connlimit.Config's fields (metricsKeys), which has no
	// defaults: defaultMetrics' are the only ones, and zero means them
	// (metricsConfig): MaxConns zero is 100, MaxConnsPerPeer zero is 10,
	// PeerPrefixV6 zero is 64, MaxUnsentBytes zero is 8 MiB and a
	// negative one is no bound.
	MaxConns        int        `koanf:"max_conns" field:"connlimit.MaxConns"`
	MaxConnsPerPeer int        `koanf:"max_conns_per_peer" field:"connlimit.MaxConnsPerPeer"`
	PeerPrefixV6    int        `koanf:"peer_ipv6_prefix" field:"connlimit.PeerPrefixV6"`
	MaxUnsentBytes  int64      `koanf:"max_unsent_bytes" field:"connlimit.MaxUnsentBytes"`
	TLS             MetricsTLS `koanf:"tls"`
}

// MetricsTLS is the metrics listener's TLS (metrics.tls); all empty is
// plain HTTP. With rest.metrics_auth the token crosses the network on
// each scrape: over plain HTTP to another host, in clear.
type MetricsTLS ListenerTLS

// Enabled reports whether the listener speaks TLS.
func (t MetricsTLS) Enabled() bool { return ListenerTLS(t).Enabled() }

// LogConfig is the log output.
type LogConfig struct {
	// Level: debug, info, warn or error; "" does not validate.
	Level string `koanf:"level"`
	// Format: text or json; "" does not validate.
	Format string `koanf:"format"`
}

// DefaultConfig returns the defaults of every key: each package's
// DefaultConfig for the keys of its table (conversions, packages.go),
// conf's own for the rest. Each call returns fresh slices and maps, so a
// caller may change them.
func DefaultConfig() Config {
	m := machineid.DefaultConfig()
	c := Config{
		Machine: MachineConfig{
			Providers:     m.Providers,
			IPTable:       map[string]int{},
			EmbeddedRange: m.EmbeddedRange,
			ServerRange:   m.ServerRange,
		},
		Central: CentralConfig{Listen: "127.0.0.1:7070"},
		REST:    RESTConfig{Listen: "127.0.0.1:7080", AllowedHosts: []string{}},
		Client:  ClientConfig{Servers: []string{}, NoFallback: client.DefaultConfig().NoFallback},
		Segment: defaultSegment(),
		Metrics: defaultMetrics(),
		Log:     LogConfig{Level: "info", Format: "text"},
	}
	for _, cv := range conversions {
		if cv.defaults != nil {
			toKeys(&c, cv.defaults(), cv.keys)
		}
	}
	return c
}

// defaultMetrics is the metrics listener's caps: conf's (connlimit has
// none), small, as its clients are a few scrapers; its peers are the same
// prefix as everywhere.
func defaultMetrics() MetricsConfig {
	return MetricsConfig{MaxConns: 100, MaxConnsPerPeer: 10, PeerPrefixV6: connlimit.DefaultPeerPrefixV6, MaxUnsentBytes: connlimit.DefaultMaxUnsentBytes}
}

// Range returns the machine-ID range of a publish method:
// machine.embedded_range for core.Embedded, machine.server_range for
// core.Central and core.REST (machineid.Config.Range decides).
func (m MachineConfig) Range(method core.Method) core.MachineRange {
	return m.machineID().Range(method)
}

// Static returns machine.id as a machine ID, or nil when unset. ID must
// be valid (see Validate).
func (m MachineConfig) Static() *core.MachineID {
	if m.ID == nil {
		return nil
	}
	return new(core.MachineID(*m.ID))
}

// LeaseRange returns the IDs leases hand out in the range of a
// publish method (the effective lease range): machine.redis.embedded_range
// or server_range when set; else the whole range when the redis provider
// is listed; else none (the zero Range). machineid.Config.LeaseRange
// decides.
func (m MachineConfig) LeaseRange(method core.Method) core.MachineRange {
	return m.machineID().LeaseRange(method)
}

// RequireMachine reports an issuer that could not get a machine ID:
// machine.providers lists static but machine.id is unset. There is no
// default ID (two hosts on one would issue the same IDs); the error, a
// *KeyError naming machine.id, also matches machineid.ErrNoMachineID.
// Validate does not check it, as a client without the fallback needs no
// machine ID; CoreConfig and EmbedConfig, and `vesta serve`, do.
func (c Config) RequireMachine() error {
	if c.Machine.ID != nil || !c.Machine.Uses(machineid.ProviderStatic) {
		return nil
	}
	return &KeyError{Key: "machine.id", err: machineid.ErrNoMachineID,
		Msg: "unset, and machine.providers lists static: there is no default machine ID, as two instances on one would issue the same IDs; " +
			"choose one unique to this instance (machine.id, --machine or VESTA_MACHINE_ID), " +
			"or machine.providers etcd (a lease; machine.etcd.*), redis (a lease; machine.redis.*), k8s (the StatefulSet ordinal plus machine.k8s_offset) or iptable (machine.ip_table)"}
}

// RequireMachineIn is RequireMachine for an issuer of one publish method:
// a machine.id the static provider would use must also lie in that
// method's range (machine.embedded_range for core.Embedded, the issuers
// of vesta gen, package embed and the client's fallback;
// machine.server_range for the servers). Validate takes an ID of either
// range, as one file may configure both. The error, a *KeyError naming
// machine.id, also matches machineid.ErrRange.
func (c Config) RequireMachineIn(method core.Method) error {
	if err := c.RequireMachine(); err != nil || c.Machine.ID == nil || !c.Machine.Uses(machineid.ProviderStatic) {
		return err
	}
	id := *c.Machine.ID
	r := c.Machine.Range(method)
	if id < 0 || id > int(core.MaxMachine) || r.Contains(core.MachineID(id)) {
		return nil // out of every range: Validate's to report
	}
	key, users, otherKey, other := "machine.embedded_range", "embedded issuers (vesta gen, package embed, the client's fallback)",
		"machine.server_range", c.Machine.ServerRange
	if method != core.Embedded {
		key, users, otherKey, other = "machine.server_range", "servers (vesta serve)", "machine.embedded_range", c.Machine.EmbeddedRange
	}
	msg := fmt.Sprintf("%d lies outside %s %s, where %s take machine IDs; choose one there", id, key, r, users)
	if other.Contains(core.MachineID(id)) {
		msg += fmt.Sprintf(" (%d is in %s %s)", id, otherKey, other)
	}
	return &KeyError{Key: "machine.id", Msg: msg, err: machineid.ErrRange}
}

// Uses reports whether Providers lists provider.
func (m MachineConfig) Uses(provider string) bool {
	for _, p := range m.Providers {
		if p == provider {
			return true
		}
	}
	return false
}

// CoreConfig returns the generator's configuration, the same for every publish
// method (the machine-ID lease sets the method): layout, type, epoch,
// version, machine.id (0 when unset: the lease sets the generator's, see
// machineid.Lease.NewGenerator), MaxBorrow and the time guard's window and
// start-up wait. Clock, Guard and Logger are left nil for the caller. It
// validates c and RequireMachine first.
func (c Config) CoreConfig() (core.Config, error) {
	if err := errors.Join(c.Validate(), c.RequireMachine()); err != nil {
		return core.Config{}, err
	}
	return c.coreConfig(), nil
}

// EmbedConfig returns the embedded issuer's configuration: the machine-ID
// providers (see MachineIDConfig), time_guard.dir as DataDir. Clock and Logger
// are left nil for the caller. It validates c and RequireMachine first.
func (c Config) EmbedConfig() (embed.Config, error) {
	if err := errors.Join(c.Validate(), c.RequireMachine()); err != nil {
		return embed.Config{}, err
	}
	e := c.embedConfig()
	var err error
	e.Machine, err = c.leaseConfig()
	return e, err
}

// embedConfig is EmbedConfig without the checks and the files.
func (c Config) embedConfig() embed.Config {
	e := embed.Config{Machine: c.Machine.machineID()}
	fromKeys(c, &e, coreKeys) // embed.Config has core.Config's fields
	fromKeys(c, &e, embedKeys)
	return e
}

// Logger returns a logger writing to w at log.level in log.format. An
// invalid level is info and an invalid format text (Validate reports them).
func (c Config) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.Log.SlogLevel()}
	if strings.EqualFold(c.Log.Format, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// SlogLevel returns log.level as a slog.Level; an invalid level is info.
func (l LogConfig) SlogLevel() slog.Level {
	lv, _ := parseLevel(l.Level)
	return lv
}

func parseLevel(s string) (slog.Level, bool) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return slog.LevelInfo, false
}
