package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
)

// fallback is the embedded issuer the client falls back on. New acquires
// its machine ID (embed.Acquire: a Redis lease then renewed for the
// client's life, or a fixed ID with its time guard's lock) when the client
// starts, not at the start of an outage, when Redis may be unreachable
// too; an instance that cannot get one fails at New, in the open, instead
// of during the outage. The rest of the opening may wait (a fresh lease's
// takeover quarantine, about 19 s at the defaults; a clock behind the mark): it
// runs on a goroutine of the client (open), so New does not wait for it,
// and calls that need the fallback meanwhile wait within their own context.
type fallback struct {
	claim *embed.Claim
	lease *machineid.Lease
	own   identity // the fallback's layout, epoch, type, version and machine
	log   *slog.Logger
	start time.Time // New's, for the time to ready

	ready   chan struct{} // closed when the opening ended, with is or err set
	is      *embed.Issuer // once ready; nil when the opening failed
	err     error         // why the opening failed
	waiting atomic.Int64  // calls waiting for ready

	mismatch  atomic.Pointer[error] // a server's shape differs from own
	closeOnce sync.Once
	closeErr  error
}

// newFallback acquires the fallback's machine ID; open does the rest.
func newFallback(ctx context.Context, cfg Config) (*fallback, error) {
	start := time.Now()
	fcfg := cfg.FallbackConfig
	if fcfg.Logger == nil {
		fcfg.Logger = cfg.Logger
	}
	own, err := identityOf(fcfg)
	if err != nil { // Validate passed: cannot happen
		return nil, fmt.Errorf("%w: FallbackConfig: %w", ErrConfig, err)
	}
	claim, err := embed.Acquire(ctx, fcfg)
	if err != nil {
		return nil, fmt.Errorf("client: opening the fallback: %w", err)
	}
	own.machine = claim.Lease().ID()
	return &fallback{claim: claim, lease: claim.Lease(), own: own,
		log: cfg.Logger, start: start, ready: make(chan struct{})}, nil
}

// open finishes opening the fallback, on a goroutine of the client; ctx
// ends at Close. A failure is final, not retried: what can fail here is a
// lease lost during its quarantine (a new claim would start its quarantine
// over, against the Redis that just failed it), a clock behind the mark
// past MaxStartupWait (the patience configured) or a mark of another shape
// (configuration), none of which a retry on this claim mends. The failure
// is shown (FallbackState, vesta_client_fallback_ready, an error line) and
// every call that needs the fallback fails with it; a new client (New)
// tries again.
func (f *fallback) open(ctx context.Context) {
	is, err := f.claim.Open(ctx)
	took := time.Since(f.start).Round(time.Millisecond)
	// Logged before ready is closed, so that whoever sees the state
	// change finds the line too.
	switch {
	case err == nil:
		f.is = is
		f.log.Info("client: the fallback is ready: it may issue from now", "machine", f.lease.ID(), "after", took)
	case ctx.Err() == nil: // not Close
		f.log.Error("client: the fallback could not be opened: calls that need it fail until the client is restarted", "err", err, "after", took)
	}
	if err != nil {
		f.err = fmt.Errorf("client: fallback: opening failed: %w", err)
	}
	close(f.ready)
}

// issuer returns the fallback's issuer, waiting until it is ready, ctx
// ends or the client closes; an error wrapping ErrFallbackShape when it
// must not issue.
func (f *fallback) issuer(ctx context.Context, closed <-chan struct{}) (*embed.Issuer, error) {
	if err := f.refused(); err != nil {
		return nil, err
	}
	select {
	case <-f.ready:
		return f.is, f.err
	default:
	}
	f.waiting.Add(1)
	defer f.waiting.Add(-1)
	select {
	case <-f.ready:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", f.notReady(f.lease.Status()), context.Cause(ctx))
	case <-closed:
		return nil, ErrClosed
	}
	if err := f.refused(); err != nil { // a server was reached meanwhile
		return nil, err
	}
	return f.is, f.err
}

// notReady says why a fallback still being opened cannot issue yet.
func (f *fallback) notReady(st machineid.Status) error {
	if q := st.QuarantineUntil; q.After(st.At) {
		return fmt.Errorf("%w: machine %d is a fresh Redis lease, in its takeover quarantine until %s",
			ErrFallbackNotReady, st.Machine, q.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Errorf("%w: its generator on machine %d is starting", ErrFallbackNotReady, st.Machine)
}

// state is the fallback's part of FallbackState.
func (f *fallback) state() FallbackState {
	st := f.lease.Status()
	s := FallbackState{Enabled: true, Machine: st.Machine, Provider: st.Provider, Lease: st}
	select {
	case <-f.ready:
		s.Ready, s.NotReady = f.err == nil, f.err
	default:
		s.NotReady = f.notReady(st)
	}
	s.ShapeMismatch = f.refused()
	return s
}

// checkShape compares the first server's identity with the fallback's
// own, once: IDs of two layouts can be equal 64-bit values (and of two
// epochs, types or versions decode differently), so from then on the
// fallback refuses to issue (refused), until the client is configured
// like the servers and restarted.
func (f *fallback) checkShape(server identity) {
	if f.own.sameShape(server) {
		return
	}
	err := fmt.Errorf("%w: servers issue %s; the fallback %s", ErrFallbackShape, server.shape(), f.own.shape())
	if f.mismatch.CompareAndSwap(nil, &err) {
		f.log.Error("client: the fallback refuses to issue: its IDs are shaped unlike the servers'; configure FallbackConfig (layout, epoch, type, version) like the servers", "err", err)
	}
}

// refused is why the fallback must not issue (ErrFallbackShape), or nil.
func (f *fallback) refused() error {
	if e := f.mismatch.Load(); e != nil {
		return *e
	}
	return nil
}

// close closes the issuer (the final mark is saved, the machine ID
// released), or releases the machine ID of a fallback never opened. It
// runs once the opening goroutine has ended. Idempotent.
func (f *fallback) close() error {
	f.closeOnce.Do(func() {
		if f.is != nil {
			f.closeErr = f.is.Close()
		} else {
			f.closeErr = f.claim.Close()
		}
	})
	return f.closeErr
}

// issued is how many IDs the fallback issued: its generator's count,
// which it keeps once closed.
func (f *fallback) issued() uint64 {
	select {
	case <-f.ready:
		if f.is != nil {
			return f.is.Generator().Stats().Issued
		}
	default:
	}
	return 0
}

// FallbackState is the embedded fallback's state, for monitoring.
type FallbackState struct {
	// Enabled is !Config.NoFallback; without it the fields below are zero.
	Enabled bool
	// Active reports that the last IDs came from the fallback (InFallback).
	Active bool
	// Ready reports that the fallback may issue. New returns before: it
	// holds the machine ID from then on, but a fresh Redis lease issues
	// only after its takeover quarantine (Lease.QuarantineUntil), and the
	// generator starts in the background.
	Ready bool
	// NotReady says why it is not: while it is being opened, an error
	// wrapping ErrFallbackNotReady; when its opening failed, that error,
	// which every call needing the fallback then fails with. Nil once
	// Ready.
	NotReady error
	// Machine is the fallback's machine ID, held since New.
	Machine core.MachineID
	// Provider gave it: static, iptable, k8s or redis.
	Provider string
	// Lease is the machine ID's lease: held or fenced for a Redis lease
	// (renewed since New), none for a fixed ID.
	Lease machineid.Status
	// ShapeMismatch wraps ErrFallbackShape when the servers issue IDs of
	// another layout, epoch, type or version than the fallback's
	// configuration: the fallback then refuses to issue. Nil otherwise.
	ShapeMismatch error
}

// FallbackState returns the fallback's machine ID, provider and lease,
// whether it is ready, and whether IDs come from it now.
func (c *Client) FallbackState() FallbackState {
	if c.fb == nil {
		return FallbackState{}
	}
	s := c.fb.state()
	s.Active = c.InFallback()
	return s
}

// logStart is the client's start-up line: its servers and, with the
// fallback, the fallback's machine ID, provider and lease, and why it is
// not ready yet (it is logged before the opening goroutine starts).
func (c *Client) logStart() {
	if c.fb == nil {
		c.log.Info("client: started", "servers", c.cfg.Servers, "fallback", "off")
		return
	}
	st := c.fb.state()
	c.log.Info("client: started; the fallback holds its machine ID from now until Close",
		"servers", c.cfg.Servers, "fallback_machine", st.Machine, "fallback_provider", st.Provider,
		"fallback_lease", st.Lease.State, "fallback_range", c.fb.lease.Range(),
		"fallback_ready", st.Ready, "fallback_waiting", st.NotReady)
}
