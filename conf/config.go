package conf

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
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
	Metrics   MetricsConfig   `koanf:"metrics"`
	Log       LogConfig       `koanf:"log"`
}

// IDConfig is what the IDs look like.
type IDConfig struct {
	// Layout of the bits; zero is core.Sorted. YAML: sorted or vesta.
	Layout core.Layout `koanf:"layout"`
	// Type of the IDs; zero is core.MaxPeak. YAML: max-peak,
	// min-granularity, 0 or 1.
	Type core.Type `koanf:"type"`
	// Epoch of the time field; the zero Time is the layout's own epoch.
	// YAML: RFC 3339, or "" for the zero Time.
	Epoch time.Time `koanf:"epoch"`
	// Version bit, 0 or 1; zero is 0.
	Version int `koanf:"version"`
	// MaxBorrow is how far issuing may run ahead of the clock when a
	// unit's sequence runs out; zero never runs ahead.
	MaxBorrow time.Duration `koanf:"max_borrow"`
}

// MachineConfig is how an issuer gets its machine ID.
type MachineConfig struct {
	// Providers are tried in order: redis, k8s, iptable, static. Nil or
	// empty does not validate.
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
	// K8sOffset is added to a StatefulSet pod's ordinal (k8s provider);
	// zero adds nothing.
	K8sOffset int `koanf:"k8s_offset"`
	// EmbeddedRange is where embedded issuers and the client's fallback
	// take IDs; the zero Range does not validate.
	EmbeddedRange machineid.Range `koanf:"embedded_range"`
	// ServerRange is where central and REST servers take IDs; the zero
	// Range does not validate.
	ServerRange machineid.Range `koanf:"server_range"`
	Redis       RedisConfig     `koanf:"redis"`
	Etcd        EtcdConfig      `koanf:"etcd"`
}

// RedisConfig is the Redis lease of the redis provider.
type RedisConfig struct {
	// Addrs: one address, or the Sentinel addresses with MasterName,
	// host:port each. Empty does not validate when the redis provider is
	// used, nor do several without MasterName (Redis Cluster cannot keep a
	// lease).
	Addrs []string `koanf:"addrs"`
	// MasterName selects Sentinel; "" is a single server.
	MasterName string `koanf:"master_name"`
	// Password; "" is none. Load fills it from PasswordFile when that is set.
	Password Secret `koanf:"password"`
	// PasswordFile holds the password (read by Load, trailing newline
	// trimmed); "" is none. Setting it and Password is an error.
	PasswordFile string `koanf:"password_file"`
	// KeyPrefix starts every Redis key; "" does not validate when the
	// redis provider is used.
	KeyPrefix string `koanf:"key_prefix"`
	// LeaseTTL is the lease's time to live; it is renewed every third of
	// it. Below 1s does not validate.
	LeaseTTL time.Duration `koanf:"lease_ttl"`
	// MaxClockSkew is how far the local clock may be from Redis's TIME
	// when leasing and at every renewal; zero (no check) does not validate
	// when the redis provider is used: a new holder's quarantine counts on
	// the bound.
	MaxClockSkew time.Duration `koanf:"max_clock_skew"`
	// EmbeddedRange is the part of machine.embedded_range that leases
	// hand out. The zero Range (YAML "") is all of it when the redis
	// provider is listed, and no ID otherwise. Fixed IDs (machine.id,
	// machine.ip_table, the k8s IDs) must lie outside it; a fleet mixing
	// leasing hosts and fixed IDs sets it in the config every host shares.
	EmbeddedRange machineid.Range `koanf:"embedded_range"`
	// ServerRange is EmbeddedRange for machine.server_range.
	ServerRange machineid.Range `koanf:"server_range"`
	// MinReplicas: above zero, every lease write is followed by WAIT for
	// this many replicas, and fewer acknowledgements fail the write; zero
	// waits for none.
	MinReplicas int `koanf:"min_replicas"`
}

// EtcdConfig is the etcd lease of the etcd provider.
type EtcdConfig struct {
	// Endpoints of the cluster's members, host:port or URLs. Empty does
	// not validate when the etcd provider is used. In the environment
	// (VESTA_MACHINE_ETCD_ENDPOINTS) comma-separated.
	Endpoints []string `koanf:"endpoints"`
	// Username and Password authenticate; "" is none. Load fills Password
	// from PasswordFile when that is set.
	Username     string `koanf:"username"`
	Password     Secret `koanf:"password"`
	PasswordFile string `koanf:"password_file"`
	// TLS to the members; no CA speaks plain TCP.
	TLS EtcdTLS `koanf:"tls"`
	// KeyPrefix starts every etcd key; "" does not validate when the etcd
	// provider is used.
	KeyPrefix string `koanf:"key_prefix"`
	// LeaseTTL is the etcd lease's time to live, whole seconds, renewed
	// every third of it. Below 2s does not validate.
	LeaseTTL time.Duration `koanf:"lease_ttl"`
	// EmbeddedRange and ServerRange are the lease ranges, as
	// machine.redis.embedded_range and server_range are for Redis.
	EmbeddedRange machineid.Range `koanf:"embedded_range"`
	ServerRange   machineid.Range `koanf:"server_range"`
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
	// Dir holds the file store of the mark; "" runs without one (a
	// restart with the clock set back could re-issue IDs; warned).
	Dir string `koanf:"dir"`
	// Window is how far each reservation of the mark reaches ahead of
	// the clock; below one time unit (zero included) does not validate.
	Window time.Duration `koanf:"window"`
	// MaxStartupWait is how long start-up waits for the clock to pass
	// the mark; zero fails at once.
	MaxStartupWait time.Duration `koanf:"max_startup_wait"`
}

// CentralConfig is the MessagePack-RPC server.
type CentralConfig struct {
	// Listen is host:port; "" turns the server off.
	Listen string `koanf:"listen"`
	// MaxBatch is the largest count of one Vesta.GenIDs call; zero does
	// not validate.
	MaxBatch int `koanf:"max_batch"`
	// MaxRequestBytes limits one request's size; zero does not validate.
	MaxRequestBytes int `koanf:"max_request_bytes"`
	// MaxConns limits open connections (at it a newcomer sheds a silent,
	// else an idle connection); zero does not validate.
	MaxConns int `koanf:"max_conns"`
	// MaxConnsPerPeer limits the open connections of one peer (an IPv4
	// address, an IPv6 prefix of PeerIPv6Prefix bits), shedding as
	// MaxConns; zero does not validate.
	MaxConnsPerPeer int `koanf:"max_conns_per_peer"`
	// PeerIPv6Prefix is the prefix length by which IPv6 addresses count
	// as one peer; zero does not validate.
	PeerIPv6Prefix int `koanf:"peer_ipv6_prefix"`
	// MaxUnsentBytes bounds the answers held for peers that have not read
	// them (each peer its share by MaxConnsPerPeer / MaxConns); past it
	// the connections waiting longest are closed. Zero does not validate.
	MaxUnsentBytes int `koanf:"max_unsent_bytes"`
	// FirstFrameTimeout closes a new connection whose first complete
	// request has not arrived in this long; zero does not validate.
	FirstFrameTimeout time.Duration `koanf:"first_frame_timeout"`
	// MaxWaitingIDs bounds the IDs owed to GenID/GenIDs calls that wait
	// at the sequence's ceiling, server-wide; past it calls are answered
	// unavailable at once. Zero does not validate.
	MaxWaitingIDs int `koanf:"max_waiting_ids"`
	// MaxWaitingCalls bounds the calls that wait at the ceiling,
	// server-wide; zero does not validate.
	MaxWaitingCalls int `koanf:"max_waiting_calls"`
	// IdleTimeout closes a connection that sends nothing (while none of
	// its calls waits); zero does not validate.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// ReadTimeout bounds how long a request may take to arrive once it
	// began (a peer sending half a frame and stalling), and the TLS
	// handshake; zero does not validate.
	ReadTimeout time.Duration `koanf:"read_timeout"`
	TLS         CentralTLS    `koanf:"tls"`
}

// CentralTLS is the central server's TLS; all empty is plain TCP.
type CentralTLS struct {
	// Cert and Key are PEM files, both or neither.
	Cert string `koanf:"cert"`
	Key  string `koanf:"key"`
	// ClientCA is a PEM file of CAs whose client certificates are
	// required (mTLS); "" asks for none. It needs Cert.
	ClientCA string `koanf:"client_ca"`
}

// Enabled reports whether the server speaks TLS.
func (t CentralTLS) Enabled() bool { return t.Cert != "" }

// RESTConfig is the HTTP server.
type RESTConfig struct {
	// Listen is host:port; "" turns the server off.
	Listen string `koanf:"listen"`
	// Token is the bearer token the ID endpoints require; "" requires
	// none. Load fills it from TokenFile when that is set.
	Token Secret `koanf:"token"`
	// TokenFile holds the token (read by Load, trailing newline
	// trimmed); "" is none. Setting it and Token is an error.
	TokenFile string `koanf:"token_file"`
	// MetricsAuth makes GET /metrics require the token too; false leaves
	// it open (for a Prometheus without the token). True needs a token.
	MetricsAuth bool `koanf:"metrics_auth"`
	// AllowedHosts are the names (or IP addresses) the server answers as
	// Host besides its defaults, as rest.Config.AllowedHosts: a name,
	// "*.domain" or "*" (only with a token); empty is the defaults alone.
	AllowedHosts []string `koanf:"allowed_hosts"`
	// MaxConns limits open HTTP connections (at it a newcomer sheds a
	// connection that has not sent a request yet, else an idle
	// keep-alive one); zero does not validate.
	MaxConns int `koanf:"max_conns"`
	// MaxConnsPerPeer limits the open HTTP connections of one peer (an
	// IPv4 address, an IPv6 prefix of PeerIPv6Prefix bits), shedding as
	// MaxConns; zero does not validate.
	MaxConnsPerPeer int `koanf:"max_conns_per_peer"`
	// PeerIPv6Prefix is the prefix length by which IPv6 addresses count
	// as one peer; zero does not validate.
	PeerIPv6Prefix int `koanf:"peer_ipv6_prefix"`
	// MaxUnsentBytes bounds the answers held for peers that have not read
	// them, as central's does; zero does not validate.
	MaxUnsentBytes int `koanf:"max_unsent_bytes"`
	// MaxWaitingIDs bounds the IDs owed to requests that wait at the
	// sequence's ceiling; past it requests are answered 503 at once. Zero
	// does not validate.
	MaxWaitingIDs int `koanf:"max_waiting_ids"`
	// MaxWaitingCalls bounds the requests that wait at the ceiling; zero
	// does not validate.
	MaxWaitingCalls int     `koanf:"max_waiting_calls"`
	TLS             RESTTLS `koanf:"tls"`
}

// RESTTLS is the REST server's TLS; all empty is plain HTTP.
type RESTTLS struct {
	// Cert and Key are PEM files, both or neither.
	Cert string `koanf:"cert"`
	Key  string `koanf:"key"`
	// ClientCA is a PEM file of CAs whose client certificates are
	// required (mTLS) on every route, /healthz and /readyz included: a
	// client without one is refused at the handshake. "" asks for none.
	// It needs Cert; a Token is still required when set.
	ClientCA string `koanf:"client_ca"`
}

// Enabled reports whether the server speaks TLS.
func (t RESTTLS) Enabled() bool { return t.Cert != "" }

// ClientConfig is for applications using package client, and for
// `vesta gen --servers`.
type ClientConfig struct {
	// Servers are the central servers, host:port each; empty is none
	// (embedded use).
	Servers []string `koanf:"servers"`
	// Timeout of one call; zero does not validate.
	Timeout time.Duration `koanf:"timeout"`
	// Retries on another server after a failed call; zero never retries.
	Retries int `koanf:"retries"`
	// Prefetch is how many IDs are kept ready; zero turns it off.
	Prefetch int `koanf:"prefetch"`
	// Fallback issues from an embedded generator while every server is
	// down; false returns the error instead.
	Fallback bool `koanf:"fallback"`
}

// MetricsConfig is a listener of its own for GET /metrics (Prometheus),
// for deployments without the REST server, which serves /metrics too. It
// follows the listener policy of the others with caps of its own, small,
// as its clients are a few scrapers: a flood there holds no more than
// they allow. rest.metrics_auth, with rest.token, guards it too.
type MetricsConfig struct {
	// Listen is host:port; "" turns it off.
	Listen string `koanf:"listen"`
	// MaxConns limits its open connections, shedding as central's;
	// zero does not validate.
	MaxConns int `koanf:"max_conns"`
	// MaxConnsPerPeer limits those of one peer; zero does not validate.
	MaxConnsPerPeer int `koanf:"max_conns_per_peer"`
	// PeerIPv6Prefix groups IPv6 addresses into peers; zero does not
	// validate.
	PeerIPv6Prefix int `koanf:"peer_ipv6_prefix"`
	// MaxUnsentBytes bounds the answers held for peers that have not read
	// them; zero does not validate.
	MaxUnsentBytes int `koanf:"max_unsent_bytes"`
}

// LogConfig is the log output.
type LogConfig struct {
	// Level: debug, info, warn or error; "" does not validate.
	Level string `koanf:"level"`
	// Format: text or json; "" does not validate.
	Format string `koanf:"format"`
}

// DefaultConfig returns the defaults of every key. Each call returns fresh
// slices and maps, so a caller may change them.
func DefaultConfig() Config {
	return Config{
		ID: IDConfig{Layout: core.Sorted, Type: core.MaxPeak, MaxBorrow: time.Second},
		Machine: MachineConfig{
			Providers:     []string{machineid.ProviderStatic},
			IPTable:       map[string]int{},
			K8sOffset:     924,
			EmbeddedRange: machineid.DefaultEmbeddedRange,
			ServerRange:   machineid.DefaultServerRange,
			Redis: RedisConfig{
				Addrs:        []string{"127.0.0.1:6379"},
				KeyPrefix:    "vesta",
				LeaseTTL:     15 * time.Second,
				MaxClockSkew: 2 * time.Second,
			},
			Etcd: EtcdConfig{
				Endpoints: []string{"127.0.0.1:2379"},
				KeyPrefix: "vesta",
				LeaseTTL:  10 * time.Second,
			},
		},
		TimeGuard: TimeGuardConfig{Dir: "./vesta-data", Window: 3 * time.Second, MaxStartupWait: 10 * time.Second},
		Central: CentralConfig{
			Listen: "127.0.0.1:7070", MaxBatch: 10000, MaxRequestBytes: 64 << 10, MaxConns: 10000,
			MaxConnsPerPeer: 1000, PeerIPv6Prefix: 64, MaxUnsentBytes: 64 << 20, FirstFrameTimeout: 5 * time.Second,
			MaxWaitingIDs: core.DefaultMaxWaitingIDs, MaxWaitingCalls: core.DefaultMaxWaitingCalls,
			IdleTimeout: 5 * time.Minute, ReadTimeout: 10 * time.Second,
		},
		REST: RESTConfig{Listen: "127.0.0.1:7080", AllowedHosts: []string{}, MaxConns: 10000, MaxConnsPerPeer: 1000,
			PeerIPv6Prefix: 64, MaxUnsentBytes: 64 << 20,
			MaxWaitingIDs: core.DefaultMaxWaitingIDs, MaxWaitingCalls: core.DefaultMaxWaitingCalls},
		Client:  ClientConfig{Servers: []string{}, Timeout: 200 * time.Millisecond, Retries: 2, Fallback: true},
		Segment: defaultSegment(),
		Metrics: MetricsConfig{MaxConns: 100, MaxConnsPerPeer: 10, PeerIPv6Prefix: 64, MaxUnsentBytes: 8 << 20},
		Log:     LogConfig{Level: "info", Format: "text"},
	}
}

// Range returns the machine-ID range of a publish method:
// machine.embedded_range for core.Embedded, machine.server_range for
// core.Central and core.REST (machineid.Config.Range decides).
func (m MachineConfig) Range(method core.Method) machineid.Range {
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
func (m MachineConfig) LeaseRange(method core.Method) machineid.Range {
	return m.machineID().LeaseRange(method)
}

// RequireMachine reports an issuer that could not get a machine ID:
// machine.providers lists static but machine.id is unset. There is no
// default ID (two hosts on one would issue the same IDs); the error, a
// *KeyError naming machine.id, also matches machineid.ErrNoMachineID.
// Validate does not check it, as a client without the fallback needs no
// machine ID; Core and Embed, and `vesta serve`, do.
func (c Config) RequireMachine() error {
	if c.Machine.ID != nil || !c.Machine.Uses(machineid.ProviderStatic) {
		return nil
	}
	return &KeyError{Key: "machine.id", err: machineid.ErrNoMachineID,
		Msg: "unset, and machine.providers lists static: there is no default machine ID, as two instances on one would issue the same IDs; " +
			"choose one unique to this instance (machine.id, --machine or VESTA_MACHINE_ID), " +
			"or machine.providers redis (a lease; machine.redis.*), k8s (the StatefulSet ordinal plus machine.k8s_offset) or iptable (machine.ip_table)"}
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

// Core returns the generator's configuration, the same for every publish
// method (the machine-ID lease sets the method): layout, type, epoch,
// version, machine.id (0 when unset: the lease sets the generator's, see
// machineid.Lease.NewGenerator), MaxBorrow and the time guard's window and
// start-up wait. Clock, Guard and Logger are left nil for the caller. It
// validates c and RequireMachine first.
func (c Config) Core() (core.Config, error) {
	if err := errors.Join(c.Validate(), c.RequireMachine()); err != nil {
		return core.Config{}, err
	}
	return c.coreConfig(), nil
}

// Embed returns the embedded issuer's configuration: the machine-ID
// providers (see MachineID), time_guard.dir as DataDir. Clock and Logger
// are left nil for the caller. It validates c and RequireMachine first.
func (c Config) Embed() (embed.Config, error) {
	if err := errors.Join(c.Validate(), c.RequireMachine()); err != nil {
		return embed.Config{}, err
	}
	e := c.embed()
	var err error
	e.Machine, err = c.Lease()
	return e, err
}

// embed is Embed without the checks.
func (c Config) embed() embed.Config {
	return embed.Config{
		Layout: c.ID.Layout, Type: c.ID.Type, Epoch: c.ID.Epoch, Version: uint8(c.ID.Version),
		Machine:   c.MachineID(),
		MaxBorrow: c.ID.MaxBorrow, DataDir: c.TimeGuard.Dir,
		GuardWindow: c.TimeGuard.Window, MaxStartupWait: c.TimeGuard.MaxStartupWait,
	}
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
