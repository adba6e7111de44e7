package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/vesta-go/vesta/embed"
)

// fallback opens the embedded issuer on first use. Opening may wait for the
// clock to pass the time guard's mark, so it is guarded by a one-slot
// semaphore that waiters leave when their context ends; a failed open is
// retried by the next caller.
type fallback struct {
	cfg embed.Config
	log *slog.Logger
	// shape returns the servers' layout, type, epoch and version if a
	// server was ever reached, so fallback IDs decode like central ones.
	shape func() (identity, bool)
	// adopt records the fallback's identity when it opens before any
	// server was reached.
	adopt func(identity)

	open atomic.Pointer[embed.Issuer] // set once opened, cleared by close

	sem    chan struct{} // one token; holding it guards the fields below
	is     *embed.Issuer
	closed bool
}

func newFallback(cfg embed.Config, log *slog.Logger, shape func() (identity, bool), adopt func(identity)) *fallback {
	f := &fallback{cfg: cfg, log: log, shape: shape, adopt: adopt, sem: make(chan struct{}, 1)}
	f.sem <- struct{}{}
	return f
}

// issuer returns the open issuer, opening it if needed.
func (f *fallback) issuer(ctx context.Context) (*embed.Issuer, error) {
	if is := f.open.Load(); is != nil {
		return is, nil // after close it fails with core.ErrClosed
	}
	select {
	case <-f.sem:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { f.sem <- struct{}{} }()
	if f.closed {
		return nil, ErrClosed
	}
	if f.is != nil {
		return f.is, nil
	}
	cfg := f.cfg
	if cfg.Logger == nil {
		cfg.Logger = f.log
	}
	if id, ok := f.shape(); ok {
		if own, err := identityOf(cfg); err == nil && !own.sameShape(id) {
			f.log.Warn("client: the fallback takes the servers' layout, type, epoch and version instead of its own config",
				"layout", id.codec.Layout(), "type", id.typ, "epoch", id.codec.Epoch(), "version", id.version)
		}
		cfg.Layout, cfg.Type, cfg.Epoch, cfg.Version = id.codec.Layout(), id.typ, id.codec.Epoch(), id.version
	}
	is, err := embed.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("client: opening the fallback: %w", err)
	}
	f.log.Warn("client: every server is down; issuing from the embedded fallback",
		"machine", cfg.Machine, "data_dir", cfg.DataDir)
	f.is = is
	f.open.Store(is)
	gen := is.Generator()
	f.adopt(identity{codec: gen.Codec(), typ: gen.Type(), version: gen.Version(), machine: gen.Machine(), maxBatch: defaultMaxBatch})
	return is, nil
}

// close closes the issuer if it was opened; later opens fail with
// ErrClosed. It waits for an open in progress.
func (f *fallback) close() error {
	<-f.sem
	defer func() { f.sem <- struct{}{} }()
	if f.closed {
		return nil
	}
	f.closed = true
	f.open.Store(nil)
	if f.is == nil {
		return nil
	}
	return f.is.Close()
}
