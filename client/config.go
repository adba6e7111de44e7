package client

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
)

// Defaults applied to zero fields.
const (
	defaultTimeout         = 200 * time.Millisecond
	defaultConnsPerServer  = 2
	defaultBreakerFailures = 5
	defaultBreakerTimeout  = 5 * time.Second
	// defaultMaxBatch is the servers' own default, assumed until a
	// server's Vesta.Info says otherwise.
	defaultMaxBatch = 10000

	maxConnsPerServer = 64
	maxPrefetch       = 1 << 20
	defaultRetries    = 2
	maxRetries        = 10 // each retry is another server: more is a typo
)

// Config configures a Client. One rule for every field, sony/gobreaker's:
// zero is the default its comment names, which DefaultConfig spells out;
// where a default that is on can be turned off, a negative value (or a
// No... flag) turns it off. The zero Config is not usable (it names no
// server, and its fallback has no machine ID); start from DefaultConfig.
type Config struct {
	// Servers are the central servers, as host:port. At least one is
	// required; each may appear once.
	Servers []string

	// Timeout bounds each attempt (dial, handshake and call) on one server;
	// the caller's context deadline, when earlier, bounds it too. A server
	// that does not answer within it counts as failed. Waiting at the
	// sequence ceiling (every server busy) is not an attempt: only the
	// caller's context bounds it. Zero is 200ms.
	Timeout time.Duration

	// Retries is how many more servers a call tries after the first one
	// failed, each a different server (so at most len(Servers)-1 retries
	// happen), counted afresh after each server's answer and after each
	// wait at the ceiling. A busy answer is not a failure. At most 10;
	// zero is 2; negative retries none (one server only).
	Retries int

	// ConnsPerServer is how many TCP connections the client keeps to each
	// server. Calls are pipelined over them (matched by msgid), so a few
	// carry any number of concurrent callers. Zero is 2.
	ConnsPerServer int

	// Prefetch is how many IDs the client keeps ready: when fewer than half
	// remain, a background goroutine fetches more (Leaf's double buffer),
	// spread over the servers, so most NextID calls return without a round
	// trip.
	// Prefetched IDs are central IDs only; they are dropped by Close.
	// Zero turns prefetching off.
	Prefetch int

	// SeqPrefetch is how many numbers of each segment sequence tag the
	// client keeps ready (NextSeq), refilled in the background with
	// Vesta.NextSeqs when half are used. A tag gets a buffer once a server
	// issued numbers of it. Zero turns it off.
	SeqPrefetch int

	// SeqMaxTags bounds how many tags have buffers at once; past it the
	// least recently used buffer is dropped (its numbers are skipped).
	// Zero is 64.
	SeqMaxTags int

	// NoFallback turns the fallback off: a call that no server answers
	// returns an error wrapping ErrUnavailable. False (the zero value and
	// the default) keeps it on: IDs are issued from an embedded generator
	// (method 0, the machine ID of FallbackConfig) while every server is
	// down, and calls return to the servers as soon as one answers again.
	NoFallback bool

	// FallbackConfig configures the embedded fallback, kept until Close.
	// New acquires its machine ID (a Redis lease then renewed all along)
	// when the client starts, not when an outage begins; the rest of its
	// opening (a fresh lease's takeover quarantine, the generator's start)
	// runs in the background, and calls that need the fallback before it
	// is ready wait within their context (FallbackState().Ready). Its
	// Machine must be chosen (there is no default: New refuses
	// with machineid.ErrNoMachineID), lie in the embedded range and be
	// used by no other issuer; its DataDir (the time guard) is required
	// unless the machine ID is a Redis lease (whose mark lives in Redis),
	// so a restarted application cannot re-issue its own fallback IDs (and
	// a second issuer with the same Machine and DataDir on the host fails
	// to open, with core.ErrGuardLocked, instead of sharing them). Its
	// Layout, Type, Epoch and Version are its own: configure them like the
	// servers' (once a server shows a difference, the fallback refuses to
	// issue: ErrFallbackShape).
	// Its Logger, when nil, is the client's. Ignored with NoFallback.
	FallbackConfig embed.Config

	// BreakerFailures is how many consecutive failed calls open a server's
	// circuit breaker. Zero is 5.
	BreakerFailures uint32

	// BreakerTimeout is how long a breaker stays open before it lets one
	// trial call through (half-open); a successful trial closes it. Zero
	// is 5s.
	BreakerTimeout time.Duration

	// TLS, when not nil, wraps every connection in TLS; set Certificates
	// for mutual TLS. An empty ServerName is taken from the server's host.
	// Nil is plain TCP.
	TLS *tls.Config

	// DialContext opens the TCP connections; nil is a net.Dialer. Tests
	// use it to inject faults.
	DialContext func(ctx context.Context, network, address string) (net.Conn, error)

	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns the recommended configuration for servers: a 200ms
// timeout per attempt, 2 retries on other servers, 2 connections per
// server, no prefetch, breakers that open after 5 consecutive failures for
// 5s, and the fallback on (time guard in ./vesta-data) with no machine ID
// chosen: New refuses until FallbackConfig.Machine chooses one unique to
// this instance (or NoFallback is set), as two instances left on a
// default would issue the same IDs in the same outage.
func DefaultConfig(servers ...string) Config {
	return Config{
		Servers:         append([]string(nil), servers...),
		Timeout:         defaultTimeout,
		Retries:         defaultRetries,
		ConnsPerServer:  defaultConnsPerServer,
		FallbackConfig:  embed.DefaultConfig(),
		BreakerFailures: defaultBreakerFailures,
		BreakerTimeout:  defaultBreakerTimeout,
	}
}

// Validate reports the first field that cannot be used, by name.
func (c Config) Validate() error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("%w: Servers: empty; want at least one host:port", ErrConfig)
	}
	seen := make(map[string]bool, len(c.Servers))
	for i, s := range c.Servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" {
			return fmt.Errorf("%w: Servers[%d]: %q; want host:port", ErrConfig, i, s)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			return fmt.Errorf("%w: Servers[%d]: %q: port %q; want 1-65535", ErrConfig, i, s, port)
		}
		if seen[s] {
			return fmt.Errorf("%w: Servers[%d]: %q appears twice", ErrConfig, i, s)
		}
		seen[s] = true
	}
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout: %v; want 0 (meaning %v) or above", ErrConfig, c.Timeout, defaultTimeout)
	case c.Retries > maxRetries:
		return fmt.Errorf("%w: Retries: %d; want 0 (meaning %d) to %d, or negative (none)", ErrConfig, c.Retries, defaultRetries, maxRetries)
	case c.ConnsPerServer < 0 || c.ConnsPerServer > maxConnsPerServer:
		return fmt.Errorf("%w: ConnsPerServer: %d; want 0 (meaning %d) to %d", ErrConfig, c.ConnsPerServer, defaultConnsPerServer, maxConnsPerServer)
	case c.Prefetch < 0 || c.Prefetch > maxPrefetch:
		return fmt.Errorf("%w: Prefetch: %d; want 0 (off) to %d", ErrConfig, c.Prefetch, maxPrefetch)
	case c.SeqPrefetch < 0 || c.SeqPrefetch > maxSeqPrefetch:
		return fmt.Errorf("%w: SeqPrefetch: %d; want 0 (off) to %d", ErrConfig, c.SeqPrefetch, maxSeqPrefetch)
	case c.SeqMaxTags < 0 || c.SeqMaxTags > maxSeqMaxTags:
		return fmt.Errorf("%w: SeqMaxTags: %d; want 0 (meaning %d) to %d", ErrConfig, c.SeqMaxTags, defaultSeqMaxTags, maxSeqMaxTags)
	case c.BreakerTimeout < 0:
		return fmt.Errorf("%w: BreakerTimeout: %v; want 0 (meaning %v) or above", ErrConfig, c.BreakerTimeout, defaultBreakerTimeout)
	}
	if c.NoFallback {
		return nil
	}
	if err := c.FallbackConfig.Validate(); err != nil {
		if errors.Is(err, machineid.ErrNoMachineID) {
			return fmt.Errorf("%w: FallbackConfig.Machine: no fallback machine ID chosen (choose one, or set NoFallback): %w", ErrConfig, err)
		}
		return fmt.Errorf("%w: FallbackConfig: %w", ErrConfig, err)
	}
	// A Redis lease keeps the mark in Redis; any other provider needs the file.
	onlyRedis := slices.Equal(c.FallbackConfig.Machine.Providers, []string{machineid.ProviderRedis})
	if c.FallbackConfig.DataDir == "" && !onlyRedis {
		return fmt.Errorf("%w: FallbackConfig.DataDir: empty; the fallback needs a time guard so that a restarted application cannot re-issue its fallback IDs", ErrConfig)
	}
	return nil
}

// withDefaults returns a copy of c with zero fields replaced by their
// defaults; the caller's slices are not shared.
func (c Config) withDefaults() Config {
	c.Servers = append([]string(nil), c.Servers...)
	c.Timeout = cmp.Or(c.Timeout, defaultTimeout)
	switch {
	case c.Retries == 0:
		c.Retries = defaultRetries
	case c.Retries < 0:
		c.Retries = 0
	}
	c.ConnsPerServer = cmp.Or(c.ConnsPerServer, defaultConnsPerServer)
	c.BreakerFailures = cmp.Or(c.BreakerFailures, defaultBreakerFailures)
	c.SeqMaxTags = cmp.Or(c.SeqMaxTags, defaultSeqMaxTags)
	c.BreakerTimeout = cmp.Or(c.BreakerTimeout, defaultBreakerTimeout)
	if c.TLS != nil {
		c.TLS = c.TLS.Clone()
	}
	if c.DialContext == nil {
		c.DialContext = (&net.Dialer{}).DialContext
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
