package rest

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/connlimit"
	"github.com/vesta-go/vesta/mask"
	"github.com/vesta-go/vesta/segment"
)

// Sentinel errors of the package; messages add the details.
var (
	// ErrConfig: a Config field has a value the server cannot use.
	// The message names the field.
	ErrConfig = errors.New("rest: invalid config")

	// ErrServing: Serve was called while the server is already serving.
	ErrServing = errors.New("rest: already serving")

	// ErrClosed: Serve was called after Shutdown or Close.
	ErrClosed = errors.New("rest: server closed")
)

// Defaults of the zero Config fields.
const (
	DefaultMaxBatch       = 10000
	DefaultBodyLimit      = 64 << 10
	DefaultRequestTimeout = 5 * time.Second
	DefaultMaxConns       = 10000
	DefaultMaxConnsPeer   = 1000
	// DefaultMaxUnsent bounds the answers held for peers that have not
	// read them: 64 MiB over the server, 6.4 MiB per peer at the default
	// caps.
	DefaultMaxUnsent = 64 << 20

	// maxConnsLimit bounds MaxConns and MaxConnsPerPeer.
	maxConnsLimit = connlimit.MaxConnsLimit

	// maxMaxBatch keeps one response below ~25 MB.
	maxMaxBatch = 1 << 20
	// maxWaiting catches a typo in MaxWaitingIDs or MaxWaitingCalls.
	maxWaiting = 1 << 30
)

// MinTokenBytes is the shortest Token. It refuses the word a person
// types ("secret", "changeme"), not weak randomness: 16 random characters
// are 64 bits even in hex, past guessing over a network; make one with
// head -c 32 /dev/urandom | base64.
const MinTokenBytes = 16

// Config configures a Server. The zero Config is valid: plain HTTP, no
// token, the defaults above, no logging and a private metrics registry.
type Config struct {
	// TLS serves HTTPS (and HTTP/2) with this configuration, which must
	// hold a certificate (Certificates, GetCertificate or
	// GetConfigForClient); nil serves plain HTTP. It is cloned. Its
	// ClientAuth holds for every route: a client it refuses (say, one
	// without a certificate from ClientCAs) never reaches HTTP, /healthz
	// included; Token is checked on top of it.
	TLS *tls.Config

	// Token is the bearer token the ID routes require (compared in
	// constant time, never logged), at least MinTokenBytes long; "" leaves
	// them open. Health, readiness, metrics, the OpenAPI document and the
	// page stay open.
	Token string

	// MetricsAuth makes GET /metrics require Token too; false leaves it
	// open. It needs a Token.
	MetricsAuth bool

	// AllowedHosts are the names (or IP addresses) the server answers as
	// Host besides its defaults, with any port: "ids.example.com",
	// "*.example.com" (the names under it), "*" (any Host: only with a
	// Token, since a DNS-rebinding page is then answered like the
	// server's own). Another Host is refused with 421 on every route but
	// /healthz and /readyz. Nil or empty is the defaults alone, which DNS
	// rebinding cannot use: serving on a loopback listener, localhost,
	// *.localhost and loopback addresses; on any other listener (or
	// through Handler, where Serve cannot see the listener) also every IP
	// address, single-label names (a Kubernetes Service's, a pod's), the
	// machine's host name and names under .local, .internal and
	// .home.arpa.
	AllowedHosts []string

	// MaxBatch is the largest count /v1/ids accepts; zero is 10000.
	MaxBatch int

	// MaxConns bounds open connections. At it, a new connection sheds
	// the oldest one that has not sent a request yet, else the one idle
	// the longest, else one whose peer holds it up (answers unread, or a
	// promised body owed for over a second); when the server works for
	// every connection it is closed on accept (package connlimit). Zero
	// is 10000.
	MaxConns int

	// MaxConnsPerPeer bounds the open connections of one peer (an IPv4
	// address, or an IPv6 prefix of PeerPrefixV6 bits), shedding that
	// peer's own silent or idle ones first. Zero is 1000.
	MaxConnsPerPeer int

	// PeerPrefixV6 is the prefix length by which IPv6 addresses count as
	// one peer; zero is 64, else 1 to 128.
	PeerPrefixV6 int

	// MaxUnsentBytes bounds the answers held for peers in writes the
	// kernel has not taken (peers that do not read): past it, or past a
	// peer's share (MaxUnsentBytes × MaxConnsPerPeer / MaxConns), the
	// connections whose answers waited longest are closed. One answer
	// alone is never cut. Zero is 64 MiB.
	MaxUnsentBytes int

	// Budget is the descriptor budget of the process, shared with its
	// other listeners (vesta serve sets it, from RLIMIT_NOFILE); nil
	// bounds this server's connections by MaxConns alone.
	Budget *connlimit.Budget

	// BodyLimit caps a request body in bytes (413 past it); zero is 64 KiB.
	BodyLimit int64

	// RequestTimeout bounds each request: how long issuing may wait for
	// the generator (the sequence ran out, the time guard lags; past it
	// the answer is 503 unavailable), and the connection's read and write
	// deadlines. Zero is 5s.
	RequestTimeout time.Duration

	// MaxWaitingIDs bounds the IDs owed to requests waiting at the
	// sequence's ceiling; past it requests get 503 with Retry-After at
	// once. Zero is core.DefaultMaxWaitingIDs (1048576).
	MaxWaitingIDs int

	// MaxWaitingCalls bounds the requests waiting at the ceiling; zero is
	// core.DefaultMaxWaitingCalls (4096).
	MaxWaitingCalls int

	// Logger receives the access log (Debug, one record per request; Warn
	// for 5xx answers) and server errors; nil discards.
	Logger *slog.Logger

	// Registerer is where the server registers its metrics
	// (vesta_http_requests_total, vesta_http_request_duration_seconds,
	// vesta_ids_issued_total{method="rest"}); nil is a private registry.
	Registerer prometheus.Registerer

	// Gatherer is what /metrics serves, normally the process's whole
	// registry. Nil is the Registerer when it is also a Gatherer (as a
	// *prometheus.Registry is), else the server's own metrics only.
	Gatherer prometheus.Gatherer

	// Ready is an extra readiness check beyond the generator's own, for
	// example that a machine-ID lease is held; its error is the reason
	// /readyz gives. Nil is none.
	Ready func() error

	// Lease reports the machine-ID lease (how the ID was obtained, its
	// state, time to renewal and deadline) for GET /v1/status and the
	// page; it is called on each request and must be quick. Nil shows no
	// lease ("lease": null).
	Lease func() LeaseStatus

	// Listeners names the process's listeners for GET /v1/status and the
	// page: "rpc", "http" or "metrics" with the address each listens on
	// (their open connections and refusals are read from Gatherer). Nil
	// lists the REST server's own address alone, once it serves.
	Listeners []Listener

	// SegmentStore says which store Sequences reserve their ranges in and
	// where, for GET /v1/status and the page: a kind ("mysql", "redis")
	// and an address, never a password or a DSN. The zero value shows no
	// store.
	SegmentStore StoreInfo

	// Sequences serves /v1/seq/{tag} and Leaf's /api/segment/get/{key}
	// (segment sequences; a *segment.Sequencer, which the caller owns and
	// closes after the server). Its state is the "segment" field of
	// /readyz, which does not decide readiness: IDs are still issued while
	// the store is down. Leaf's /cache and /db show it when it is also a
	// SequenceMonitor, as *segment.Sequencer is. Nil turns sequences off:
	// those routes answer that they are.
	Sequences segment.Sequences

	// Fleet lists the servers sharing this one's lease store for GET
	// /v1/fleet and the page, read from the store (machineid's member
	// records; display only). Its context bounds the read (1.5s, or
	// RequestTimeout when shorter). On an error the route still answers
	// 200, with the error and the members returned (this server alone, if
	// none). Nil answers with this server alone, store "none".
	Fleet FleetFunc

	// Holders answers GET /v1/ids/{id}?holder=true from the hold
	// histories (machineid's Lease.History; display and detection only),
	// read through its cache, which the central server of the same
	// process shares (api.NewHolders); each read is bounded like Fleet's.
	// A history that cannot be read is a 503. Nil answers that this
	// server keeps no history.
	Holders *api.Holders

	// Capacity reports the server's capacity for GET /v1/capacity (years
	// left in the time field, the machine-ID pools, the sequence's
	// ceiling, segment tags); vesta serve sets it. Nil answers with what
	// the generator alone tells: the time field and the sequence's
	// counters.
	Capacity CapacityFunc

	// Masks serves /v1/mask, /v1/unmask and the masked option of /v1/id
	// and /v1/ids (package mask: the key, and the check of the IDs the
	// deployment issues). Nil answers them 404 not_found: masking is off.
	Masks *mask.Maskers
}

// DefaultConfig returns the recommended configuration: the zero Config with
// its defaults spelled out.
func DefaultConfig() Config {
	return Config{MaxBatch: DefaultMaxBatch, BodyLimit: DefaultBodyLimit, RequestTimeout: DefaultRequestTimeout,
		MaxConns: DefaultMaxConns, MaxConnsPerPeer: DefaultMaxConnsPeer,
		PeerPrefixV6: connlimit.DefaultPeerPrefixV6, MaxUnsentBytes: DefaultMaxUnsent,
		MaxWaitingIDs: core.DefaultMaxWaitingIDs, MaxWaitingCalls: core.DefaultMaxWaitingCalls}
}

// Validate reports the first field that cannot be used, by name.
func (c Config) Validate() error {
	if c.TLS != nil && len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil && c.TLS.GetConfigForClient == nil {
		return fmt.Errorf("%w: TLS: no certificate (set Certificates or GetCertificate)", ErrConfig)
	}
	for i := 0; i < len(c.Token); i++ {
		// The message never shows the token, only where it goes wrong.
		if ch := c.Token[i]; ch <= ' ' || ch >= 0x7f {
			return fmt.Errorf("%w: Token: byte %d is a space, control or non-ASCII character; a bearer token cannot carry it", ErrConfig, i)
		}
	}
	if c.Token != "" && len(c.Token) < MinTokenBytes {
		return fmt.Errorf("%w: Token: %d bytes; want at least %d (e.g. head -c 32 /dev/urandom | base64)", ErrConfig, len(c.Token), MinTokenBytes)
	}
	if c.MaxBatch < 0 || c.MaxBatch > maxMaxBatch {
		return fmt.Errorf("%w: MaxBatch: %d; want 0 (meaning %d) to %d", ErrConfig, c.MaxBatch, DefaultMaxBatch, maxMaxBatch)
	}
	for _, f := range []struct {
		name   string
		v, def int
	}{{"MaxConns", c.MaxConns, DefaultMaxConns}, {"MaxConnsPerPeer", c.MaxConnsPerPeer, DefaultMaxConnsPeer}} {
		if f.v < 0 || f.v > maxConnsLimit {
			return fmt.Errorf("%w: %s: %d; want 0 (meaning %d) to %d", ErrConfig, f.name, f.v, f.def, maxConnsLimit)
		}
	}
	if c.PeerPrefixV6 < 0 || c.PeerPrefixV6 > 128 {
		return fmt.Errorf("%w: PeerPrefixV6: %d; want 0 (meaning %d) to 128", ErrConfig, c.PeerPrefixV6, connlimit.DefaultPeerPrefixV6)
	}
	if c.MaxUnsentBytes < 0 || c.MaxUnsentBytes > connlimit.MaxUnsentLimit {
		return fmt.Errorf("%w: MaxUnsentBytes: %d; want 0 (meaning %d) to %d", ErrConfig, c.MaxUnsentBytes, DefaultMaxUnsent, connlimit.MaxUnsentLimit)
	}
	if c.MetricsAuth && c.Token == "" {
		return fmt.Errorf("%w: MetricsAuth: set without a Token", ErrConfig)
	}
	for i, h := range c.AllowedHosts {
		if err := checkAllowedHost(h); err != nil {
			return fmt.Errorf("%w: AllowedHosts[%d]: %q: %v", ErrConfig, i, clip(h), err)
		}
		if h == "*" && c.Token == "" {
			return fmt.Errorf("%w: AllowedHosts: \"*\" without a Token: a DNS-rebinding page would then be answered as this server's own", ErrConfig)
		}
	}
	if c.BodyLimit < 0 {
		return fmt.Errorf("%w: BodyLimit: %d; want 0 (meaning %d) or more bytes", ErrConfig, c.BodyLimit, DefaultBodyLimit)
	}
	if c.RequestTimeout < 0 {
		return fmt.Errorf("%w: RequestTimeout: %s; want 0 (meaning %s) or more", ErrConfig, c.RequestTimeout, DefaultRequestTimeout)
	}
	if c.MaxWaitingIDs < 0 || c.MaxWaitingIDs > maxWaiting {
		return fmt.Errorf("%w: MaxWaitingIDs: %d; want 0 (meaning %d) to %d", ErrConfig, c.MaxWaitingIDs, core.DefaultMaxWaitingIDs, maxWaiting)
	}
	if c.MaxWaitingCalls < 0 || c.MaxWaitingCalls > maxWaiting {
		return fmt.Errorf("%w: MaxWaitingCalls: %d; want 0 (meaning %d) to %d", ErrConfig, c.MaxWaitingCalls, core.DefaultMaxWaitingCalls, maxWaiting)
	}
	if c.Registerer != nil && c.Gatherer == nil {
		if _, ok := c.Registerer.(prometheus.Gatherer); !ok {
			return fmt.Errorf("%w: Gatherer: required when Registerer is not a prometheus.Gatherer", ErrConfig)
		}
	}
	return nil
}

// withDefaults fills the zero fields; the caller's copy is not touched.
func (c Config) withDefaults() Config {
	c.MaxBatch = cmp.Or(c.MaxBatch, DefaultMaxBatch)
	c.BodyLimit = cmp.Or(c.BodyLimit, DefaultBodyLimit)
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns)
	c.MaxConnsPerPeer = cmp.Or(c.MaxConnsPerPeer, DefaultMaxConnsPeer)
	c.PeerPrefixV6 = cmp.Or(c.PeerPrefixV6, connlimit.DefaultPeerPrefixV6)
	c.MaxUnsentBytes = cmp.Or(c.MaxUnsentBytes, DefaultMaxUnsent)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, DefaultRequestTimeout)
	if c.TLS != nil {
		c.TLS = c.TLS.Clone()
	}
	c.AllowedHosts = slices.Clone(c.AllowedHosts)
	c.Listeners = slices.Clone(c.Listeners)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
