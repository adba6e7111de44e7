package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
)

// fallback is the embedded issuer the client falls back on. New opens it,
// so its machine ID is obtained when the client starts (a Redis lease then
// renewed for the client's life, or a fixed ID with its time guard's lock)
// and not at the start of an outage, when Redis may be unreachable too; an
// instance that cannot get one fails at New, in the open, instead of
// during the outage.
type fallback struct {
	is  *embed.Issuer
	own identity // the fallback's layout, epoch, type, version and machine
	log *slog.Logger

	mismatch  atomic.Pointer[error] // a server's shape differs from own
	closeOnce sync.Once
	closeErr  error
}

// openFallback opens the fallback issuer of cfg. The lease's metrics go to
// the client's Registerer unless FallbackConfig names its own.
func openFallback(ctx context.Context, cfg Config) (*fallback, error) {
	fcfg := cfg.FallbackConfig
	if fcfg.Logger == nil {
		fcfg.Logger = cfg.Logger
	}
	if fcfg.Machine.Registerer == nil && fcfg.Registerer == nil {
		fcfg.Machine.Registerer = cfg.Registerer
	}
	is, err := embed.Open(ctx, fcfg)
	if err != nil {
		return nil, fmt.Errorf("client: opening the fallback: %w", err)
	}
	gen := is.Generator()
	f := &fallback{
		is:  is,
		own: identity{codec: gen.Codec(), typ: gen.Type(), version: gen.Version(), machine: gen.Machine(), maxBatch: defaultMaxBatch},
		log: cfg.Logger,
	}
	return f, nil
}

// state is the fallback's part of FallbackState.
func (f *fallback) state() FallbackState {
	st := f.is.Lease().Status()
	s := FallbackState{Enabled: true, Machine: st.Machine, Provider: st.Provider, Lease: st}
	if e := f.mismatch.Load(); e != nil {
		s.ShapeMismatch = *e
	}
	return s
}

// checkShape compares a server's identity with the fallback's own, once:
// IDs of both would then decode differently, which only configuring the
// fallback like the servers can fix.
func (f *fallback) checkShape(server identity) {
	if f.own.sameShape(server) {
		return
	}
	err := fmt.Errorf("%w: servers issue layout %s, epoch %s, type %s, version %d; the fallback layout %s, epoch %s, type %s, version %d",
		ErrFallbackShape,
		server.codec.Layout(), server.codec.Epoch().Format(time.RFC3339Nano), server.typ, server.version,
		f.own.codec.Layout(), f.own.codec.Epoch().Format(time.RFC3339Nano), f.own.typ, f.own.version)
	if f.mismatch.CompareAndSwap(nil, &err) {
		f.log.Error("client: the fallback's IDs will not decode like the servers': configure FallbackConfig (layout, epoch, type, version) like the servers", "err", err)
	}
}

// close closes the issuer: the final mark is saved, the machine ID
// released. Idempotent.
func (f *fallback) close() error {
	f.closeOnce.Do(func() { f.closeErr = f.is.Close() })
	return f.closeErr
}

// machineGauge is vesta_client_fallback_machine_id: read at scrape time,
// as a Redis lease lost and re-acquired may move the fallback to another
// machine ID.
func (f *fallback) machineGauge() prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vesta_client_fallback_machine_id",
		Help: "The machine ID of the client's embedded fallback, held from the client's start.",
	}, func() float64 { return float64(f.is.Lease().ID()) })
}

// FallbackState is the embedded fallback's state, for monitoring.
type FallbackState struct {
	// Enabled is Config.Fallback; without it the fields below are zero.
	Enabled bool
	// Active reports that the last IDs came from the fallback (InFallback).
	Active bool
	// Machine is the fallback's machine ID, held since New.
	Machine core.MachineID
	// Provider gave it: static, iptable, k8s or redis.
	Provider string
	// Lease is the machine ID's lease: held or fenced for a Redis lease
	// (renewed since New), none for a fixed ID.
	Lease machineid.Status
	// ShapeMismatch wraps ErrFallbackShape when a server issues IDs of
	// another layout, epoch, type or version than the fallback's
	// configuration; nil otherwise.
	ShapeMismatch error
}

// FallbackState returns the fallback's machine ID, provider and lease, and
// whether IDs come from it now.
func (c *Client) FallbackState() FallbackState {
	if c.fb == nil {
		return FallbackState{}
	}
	s := c.fb.state()
	s.Active = c.InFallback()
	return s
}

// logStart is the client's start-up line: its servers and, with the
// fallback, the fallback's machine ID, provider and lease.
func (c *Client) logStart() {
	if c.fb == nil {
		c.log.Info("client: started", "servers", c.cfg.Servers, "fallback", "off")
		return
	}
	st := c.fb.state()
	c.log.Info("client: started; the fallback holds its machine ID from now until Close",
		"servers", c.cfg.Servers, "fallback_machine", st.Machine, "fallback_provider", st.Provider,
		"fallback_lease", st.Lease.State, "fallback_range", c.fb.is.Lease().Range())
}
