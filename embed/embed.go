package embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// ErrConfig: a Config field the issuer cannot use; the message names it.
var ErrConfig = errors.New("embed: invalid config")

// Config configures an embedded Issuer.
type Config struct {
	// Layout of the IDs; zero is core.Sorted.
	Layout core.Layout
	// Type of the IDs; zero is core.MaxPeak.
	Type core.Type
	// Epoch; the zero Time is the layout's own epoch.
	Epoch time.Time
	// Version bit; zero is 0.
	Version uint8
	// Machine ID; it must lie in Range. Zero is machine 0.
	Machine core.MachineID
	// Range the machine ID must lie in; the zero Range is
	// machineid.DefaultEmbeddedRange (0-923).
	Range machineid.Range
	// MaxBorrow is how far issuing may run ahead of the clock when a
	// unit's sequence runs out; zero never runs ahead.
	MaxBorrow time.Duration
	// DataDir holds the file time guard; "" runs without one (a restart
	// with the clock set back could then re-issue IDs; a warning is logged).
	DataDir string
	// GuardWindow is how far each reservation of the mark reaches ahead;
	// zero is 3s.
	GuardWindow time.Duration
	// MaxStartupWait is how long Open waits for the clock to pass the
	// mark; zero fails at once.
	MaxStartupWait time.Duration
	// Clock; nil is a core.SystemClock.
	Clock core.Clock
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns the recommended configuration: machine 0, a 1s
// MaxBorrow, a time guard in ./vesta-data with a 3s window and a 10s
// startup wait.
func DefaultConfig() Config {
	d := core.DefaultConfig()
	return Config{
		MaxBorrow: d.MaxBorrow, DataDir: "./vesta-data",
		GuardWindow: d.GuardWindow, MaxStartupWait: d.MaxStartupWait,
	}
}

// Validate reports the first field that cannot be used, by name.
func (c Config) Validate() error {
	if err := c.core(nil).Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.rangeOrDefault().Check(c.Machine, "embedded"); err != nil {
		return fmt.Errorf("%w: Machine: %w", ErrConfig, err)
	}
	return nil
}

func (c Config) rangeOrDefault() machineid.Range {
	if c.Range.IsZero() {
		return machineid.DefaultEmbeddedRange
	}
	return c.Range
}

func (c Config) core(guard core.GuardStore) core.Config {
	return core.Config{
		Layout: c.Layout, Type: c.Type, Epoch: c.Epoch, Version: c.Version, Machine: c.Machine,
		MaxBorrow: c.MaxBorrow, Clock: c.Clock, Guard: guard, GuardWindow: c.GuardWindow,
		MaxStartupWait: c.MaxStartupWait, Logger: c.Logger,
	}
}

// Issuer issues embedded IDs in-process. It is safe for concurrent use.
type Issuer struct {
	gen   *core.Generator
	guard *core.FileGuard // nil without a DataDir
}

// Open validates cfg, takes the time guard of its machine ID (waiting for
// the clock if it is behind the mark) and returns a ready Issuer.
func Open(ctx context.Context, cfg Config) (*Issuer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	is := &Issuer{}
	var store core.GuardStore
	if cfg.DataDir == "" {
		log.Warn("embed: no time guard (DataDir is empty): a restart with the clock set back may re-issue IDs")
	} else {
		fg, err := core.OpenFileGuard(cfg.DataDir, cfg.Machine)
		if err != nil {
			return nil, err
		}
		is.guard, store = fg, fg
	}
	gen, err := core.New(ctx, cfg.core(store))
	if err != nil {
		if is.guard != nil {
			is.guard.Close()
		}
		return nil, err
	}
	is.gen = gen
	return is, nil
}

// NextID issues one ID.
func (is *Issuer) NextID(ctx context.Context) (core.ID, error) {
	return is.gen.NextID(ctx, core.Embedded)
}

// NextIDs issues n IDs in increasing order.
func (is *Issuer) NextIDs(ctx context.Context, n int) ([]core.ID, error) {
	return is.gen.NextIDs(ctx, core.Embedded, n)
}

// Explain takes an ID apart with the issuer's layout and epoch.
func (is *Issuer) Explain(id core.ID) core.Explanation { return is.gen.Codec().Explain(id) }

// Make builds an ID; fields left nil take the issuer's version, type,
// machine and the embedded method.
func (is *Issuer) Make(p core.Partial) (core.ID, error) {
	return is.gen.Codec().Make(p.Fill(is.gen.Own(core.Embedded)))
}

// TransTime turns a time field of the issuer's type into an instant.
func (is *Issuer) TransTime(units uint64) (time.Time, error) {
	return is.gen.Codec().TransTime(is.gen.Type(), units)
}

// Generator exposes the core generator, for metrics and tests.
func (is *Issuer) Generator() *core.Generator { return is.gen }

// Close stops issuing, saves the exact mark and releases the guard's lock.
// It is idempotent.
func (is *Issuer) Close() error {
	err := is.gen.Close()
	if is.guard != nil {
		err = errors.Join(err, is.guard.Close())
	}
	return err
}
