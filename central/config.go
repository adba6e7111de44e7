package central

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/connlimit"
	"github.com/vesta-go/vesta/mask"
	"github.com/vesta-go/vesta/segment"
)

// Defaults, used for zero Config fields.
const (
	DefaultMaxBatch     = 10000
	DefaultMaxConns     = 10000
	DefaultMaxConnsPeer = 1000
	// DefaultMaxUnsent bounds the answers held for peers that have not
	// read them: 64 MiB over the server, so 6.4 MiB per peer at the
	// default caps.
	DefaultMaxUnsent    = 64 << 20
	DefaultFirstFrame   = 5 * time.Second
	DefaultMaxInFlight  = 1024
	DefaultIdleTimeout  = 5 * time.Minute
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 10 * time.Second
)

// Bounds that Validate enforces.
const (
	maxBatchLimit   = 1_000_000
	minRequestBytes = 256 // holds any legitimate request
	maxRequestBytes = 64 << 20
	maxConnsLimit   = connlimit.MaxConnsLimit
	maxInFlight     = 1 << 20
	maxWaitingIDs   = 1 << 30
	maxWaitingCalls = 1 << 24
	// IdleTimeout, ReadTimeout and FirstFrameTimeout (0 is the default):
	// below 10ms a healthy peer is cut off, above a day is a typo.
	minTimeout = 10 * time.Millisecond
	maxTimeout = 24 * time.Hour
)

// Config configures a Server. The zero Config is valid and means the
// defaults; the address to listen on is not here, as Serve takes a
// listener.
type Config struct {
	// MaxBatch is the largest count of Vesta.GenIDs and Vesta.TakeIDs;
	// zero is 10000.
	MaxBatch int
	// MaxRequestBytes bounds one request frame; a larger one closes the
	// connection. Zero is 65536. Memory held for reading is at most this
	// much per connection.
	MaxRequestBytes int
	// MaxConns bounds open connections. At it, a new connection sheds the
	// oldest connection that has not sent a complete frame yet, else the
	// one idle the longest, else one whose peer holds it up (answers
	// unread, or half a frame owed for over a second: package connlimit);
	// when the server works for every connection it is closed as soon as
	// accepted. Zero is 10000.
	MaxConns int
	// MaxConnsPerPeer bounds the open connections of one peer (an IPv4
	// address, or an IPv6 prefix of PeerPrefixV6 bits), shedding that
	// peer's own silent or idle connections first as MaxConns does. Zero
	// is 1000.
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
	// FirstFrameTimeout closes a new connection whose first complete
	// frame has not arrived this long after accept (the TLS handshake
	// included). Zero is 5 seconds, else 10ms to 24h.
	FirstFrameTimeout time.Duration
	// MaxInFlight bounds the calls of one connection that wait for the
	// generator at once (the sequence ran out, or the time guard lags);
	// past it, calls are answered unavailable at once. Zero is 1024.
	MaxInFlight int
	// MaxWaitingIDs bounds the IDs owed to calls that wait at the
	// sequence's ceiling (GenID, GenIDs), over all connections: a call
	// that would pass it is answered unavailable at once. Each connection
	// may besides have at most 4 x MaxBatch IDs owed to its waiting calls
	// or in their answers not yet written. Zero is 1048576.
	MaxWaitingIDs int
	// MaxWaitingCalls bounds the calls that wait at the ceiling, over all
	// connections; past it, calls are answered unavailable at once. Zero
	// is 4096.
	MaxWaitingCalls int
	// IdleTimeout closes a connection that sends nothing while no call of
	// its is waiting; zero is 5 minutes, else 10ms to 24h.
	IdleTimeout time.Duration
	// ReadTimeout bounds how long a frame may take to arrive once its first
	// byte has, and the TLS handshake; a peer that sends half a frame and
	// stalls is cut off. Zero is 10 seconds, else 10ms to 24h.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of responses to a connection; a peer
	// that does not read is cut off. Zero is 10 seconds.
	WriteTimeout time.Duration
	// TLS, when not nil, serves TLS with this configuration (cloned, never
	// modified). With ClientCAs set and ClientAuth
	// tls.RequireAndVerifyClientCert, only clients with a certificate
	// signed by those CAs get in (mTLS). Nil serves plain TCP.
	TLS *tls.Config
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer receives the server's Prometheus metrics; nil registers
	// none.
	Registerer prometheus.Registerer
	// Budget is the descriptor budget of the process, shared with its
	// other listeners (vesta serve sets it, from RLIMIT_NOFILE); nil
	// bounds this server's connections by MaxConns alone.
	Budget *connlimit.Budget
	// Sequences serves Vesta.NextSeq and Vesta.NextSeqs (segment
	// sequences; a *segment.Sequencer, which the caller owns and closes after
	// the server). Nil answers them invalid_argument: sequences are off.
	Sequences segment.Sequences
	// Masks serves Vesta.Mask and Vesta.Unmask (package mask: the key,
	// and the check of the IDs the deployment issues). Nil answers them
	// not_found: masking is off.
	Masks *mask.Maskers
	// Holders serves Vesta.Holder from the hold histories (machineid's
	// Lease.History; display and detection only), read through its
	// cache, which REST's GET /v1/ids/{id}?holder=true shares
	// (api.NewHolders). Nil answers that this server keeps no history.
	Holders *api.Holders
}

// DefaultConfig returns the defaults, spelled out.
func DefaultConfig() Config {
	return Config{
		MaxBatch:          DefaultMaxBatch,
		MaxRequestBytes:   wire.DefaultMaxRequestBytes,
		MaxConns:          DefaultMaxConns,
		MaxConnsPerPeer:   DefaultMaxConnsPeer,
		PeerPrefixV6:      connlimit.DefaultPeerPrefixV6,
		MaxUnsentBytes:    DefaultMaxUnsent,
		FirstFrameTimeout: DefaultFirstFrame,
		MaxInFlight:       DefaultMaxInFlight,
		MaxWaitingIDs:     core.DefaultMaxWaitingIDs,
		MaxWaitingCalls:   core.DefaultMaxWaitingCalls,
		IdleTimeout:       DefaultIdleTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
	}
}

// Validate reports the first field that cannot be used, by name.
func (c Config) Validate() error {
	d := DefaultConfig()
	ints := []struct {
		name     string
		v, def   int
		min, max int
	}{
		{"MaxBatch", c.MaxBatch, d.MaxBatch, 1, maxBatchLimit},
		{"MaxRequestBytes", c.MaxRequestBytes, d.MaxRequestBytes, minRequestBytes, maxRequestBytes},
		{"MaxConns", c.MaxConns, d.MaxConns, 1, maxConnsLimit},
		{"MaxConnsPerPeer", c.MaxConnsPerPeer, d.MaxConnsPerPeer, 1, maxConnsLimit},
		{"PeerPrefixV6", c.PeerPrefixV6, d.PeerPrefixV6, 1, 128},
		{"MaxUnsentBytes", c.MaxUnsentBytes, d.MaxUnsentBytes, 1, connlimit.MaxUnsentLimit},
		{"MaxInFlight", c.MaxInFlight, d.MaxInFlight, 1, maxInFlight},
		{"MaxWaitingIDs", c.MaxWaitingIDs, d.MaxWaitingIDs, 1, maxWaitingIDs},
		{"MaxWaitingCalls", c.MaxWaitingCalls, d.MaxWaitingCalls, 1, maxWaitingCalls},
	}
	// One style for every limit of every package: "Field: value; want 0
	// (meaning D) to max", or "or min to max" when 1 is not allowed.
	for _, f := range ints {
		if f.v != 0 && (f.v < f.min || f.v > f.max) {
			if f.min == 1 {
				return fmt.Errorf("%w: %s: %d; want 0 (meaning %d) to %d", ErrConfig, f.name, f.v, f.def, f.max)
			}
			return fmt.Errorf("%w: %s: %d; want 0 (meaning %d) or %d to %d", ErrConfig, f.name, f.v, f.def, f.min, f.max)
		}
	}
	durations := []struct {
		name   string
		v, def time.Duration
	}{{"IdleTimeout", c.IdleTimeout, d.IdleTimeout}, {"ReadTimeout", c.ReadTimeout, d.ReadTimeout},
		{"WriteTimeout", c.WriteTimeout, d.WriteTimeout}, {"FirstFrameTimeout", c.FirstFrameTimeout, d.FirstFrameTimeout}}
	for _, f := range durations {
		if f.v < 0 {
			return fmt.Errorf("%w: %s: %v; want 0 (meaning %v) or more", ErrConfig, f.name, f.v, f.def)
		}
		if f.name != "WriteTimeout" && f.v != 0 && (f.v < minTimeout || f.v > maxTimeout) {
			return fmt.Errorf("%w: %s: %v; want 0 (meaning %v) or %v to %v", ErrConfig, f.name, f.v, f.def, minTimeout, "24h")
		}
	}
	if c.TLS != nil && len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil && c.TLS.GetConfigForClient == nil {
		return fmt.Errorf("%w: TLS has no certificate", ErrConfig)
	}
	return nil
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.MaxBatch = cmp.Or(c.MaxBatch, d.MaxBatch)
	c.MaxRequestBytes = cmp.Or(c.MaxRequestBytes, d.MaxRequestBytes)
	c.MaxConns = cmp.Or(c.MaxConns, d.MaxConns)
	c.MaxInFlight = cmp.Or(c.MaxInFlight, d.MaxInFlight)
	c.MaxConnsPerPeer = cmp.Or(c.MaxConnsPerPeer, d.MaxConnsPerPeer)
	c.PeerPrefixV6 = cmp.Or(c.PeerPrefixV6, d.PeerPrefixV6)
	c.MaxUnsentBytes = cmp.Or(c.MaxUnsentBytes, d.MaxUnsentBytes)
	c.FirstFrameTimeout = cmp.Or(c.FirstFrameTimeout, d.FirstFrameTimeout)
	c.MaxWaitingIDs = cmp.Or(c.MaxWaitingIDs, d.MaxWaitingIDs)
	c.MaxWaitingCalls = cmp.Or(c.MaxWaitingCalls, d.MaxWaitingCalls)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, d.IdleTimeout)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, d.ReadTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, d.WriteTimeout)
	if c.TLS != nil {
		c.TLS = c.TLS.Clone()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
