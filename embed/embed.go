package embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/mask"
)

// ErrConfig: a Config field the issuer cannot use; the message names it.
var ErrConfig = errors.New("embed: invalid config")

// closeTimeout bounds the release of a lease in Redis or etcd (Close, a
// failed Open).
const closeTimeout = 5 * time.Second

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
	// Machine says where the machine ID comes from (static, IP table,
	// a lease in Redis or etcd, Kubernetes ordinal); it must lie in the
	// embedded range (Machine.EmbeddedRange, default 0-923). The zero value
	// chooses no machine ID, and Open refuses (machineid.ErrNoMachineID):
	// set Machine.Static to an ID unique to this instance, or use a lease
	// in etcd or Redis, the Kubernetes ordinal or the IP table (a lease
	// needs its provider linked: machineid/redislease, machineid/etcdlease).
	// Its Clock and Logger, when nil, take this Config's.
	Machine machineid.Config
	// MaxBorrow is how far issuing may run ahead of the clock when a
	// unit's sequence runs out; zero never runs ahead, a setting of its
	// own as in core.Config (DefaultConfig's is 1s).
	MaxBorrow time.Duration
	// DataDir holds the file time guard (with a lease in Redis or etcd the
	// mark lives in that store instead); "" runs without one (a restart with the clock set
	// back could then re-issue IDs; a warning is logged).
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

// DefaultConfig returns the recommended configuration: a 1s MaxBorrow, a
// time guard in ./vesta-data with a 3s window and a 10s startup wait,
// machineid's defaults but a k8s offset of 0 (ordinal 0 is the embedded
// range's first ID, where machineid's 924 is the server range's), and
// no machine ID: Open refuses with machineid.ErrNoMachineID until one is
// chosen (Machine.Static, or Machine.Providers), as two instances left on a
// default would issue the same IDs.
func DefaultConfig() Config {
	d := core.DefaultConfig()
	m := machineid.DefaultConfig()
	m.K8sOffset = int(m.EmbeddedRange.First)
	return Config{
		Machine:   m,
		MaxBorrow: d.MaxBorrow, DataDir: "./vesta-data",
		GuardWindow: d.GuardWindow, MaxStartupWait: d.MaxStartupWait,
	}
}

// Validate reports the first field that cannot be used, by name.
func (c Config) Validate() error {
	if err := c.core().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.Machine.ValidateFor(core.Embedded); err != nil {
		return fmt.Errorf("%w: Machine: %w", ErrConfig, err)
	}
	return nil
}

func (c Config) core() core.Config {
	return core.Config{
		Layout: c.Layout, Type: c.Type, Epoch: c.Epoch, Version: c.Version,
		MaxBorrow: c.MaxBorrow, Clock: c.Clock, GuardWindow: c.GuardWindow,
		MaxStartupWait: c.MaxStartupWait, Logger: c.Logger,
	}
}

// Issuer issues embedded IDs in-process. It is safe for concurrent use.
type Issuer struct {
	gen   *core.Generator
	lease *machineid.Lease
	cfg   Config // for MaskCheck
}

// Open validates cfg, acquires the machine ID, takes its time guard
// (waiting for the clock if it is behind the mark) and returns a ready
// Issuer. With a Redis lease, the issuer is fenced while the lease cannot be
// proven held (NextID fails with core.ErrFenced), and moves to another
// machine ID if its own was lost. It is Acquire then Claim.Open.
func Open(ctx context.Context, cfg Config) (*Issuer, error) {
	c, err := Acquire(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c.Open(ctx)
}

// Claim is an Issuer's machine ID held before its generator starts: the
// fast part of Open done, the part that may wait (a fresh Redis lease's
// takeover quarantine, a clock behind the mark) still to come. It lets a
// caller get the ID at once, in the open, and wait elsewhere (the client's
// fallback does).
type Claim struct {
	cfg   Config
	lease *machineid.Lease

	mu    sync.Mutex
	spent bool // Open or Close took the lease
}

// Acquire validates cfg and acquires its machine ID (a Redis lease is
// renewed from here on, until Claim.Open's Issuer or Claim.Close releases
// it), with DataDir its time guard's file and lock, and checks the fleet
// record of a lease (machineid.ErrFleet). It fails when Open would fail
// before waiting for anything.
func Acquire(ctx context.Context, cfg Config) (*Claim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mcfg := cfg.Machine
	if mcfg.Clock == nil {
		mcfg.Clock = cfg.Clock
	}
	if mcfg.Logger == nil {
		mcfg.Logger = cfg.Logger
	}
	lease, err := machineid.Acquire(ctx, mcfg, core.Embedded)
	if err != nil {
		return nil, err
	}
	// Opened here, so that a second process on the same ID and directory
	// is refused now (core.ErrGuardLocked); NewGenerator reuses it. A
	// host configured unlike its fleet is refused now too.
	if _, err := lease.TimeGuard(cfg.DataDir); err != nil {
		release(lease)
		return nil, err
	}
	if err := lease.CheckFleet(ctx, cfg.core()); err != nil {
		release(lease)
		return nil, err
	}
	return &Claim{cfg: cfg, lease: lease}, nil
}

// Lease is the machine ID's lease, for its ID and status (QuarantineUntil
// says until when Open waits on a fresh Redis lease).
func (c *Claim) Lease() *machineid.Lease { return c.lease }

// Open waits until the machine ID may issue (a fresh Redis lease's takeover
// quarantine, bounded by ctx only; a clock behind the time guard's mark, at
// most MaxStartupWait) and starts the Issuer, which then owns the machine
// ID. On error the machine ID is released. A Claim opens once: a second
// Open, or one after Close, fails with machineid.ErrClosed.
func (c *Claim) Open(ctx context.Context) (*Issuer, error) {
	if !c.take() {
		return nil, fmt.Errorf("embed: opening a claim twice or after Close: %w", machineid.ErrClosed)
	}
	cfg := c.cfg
	ccfg := cfg.core()
	if ccfg.Logger == nil {
		ccfg.Logger = slog.New(slog.DiscardHandler)
	}
	gen, err := c.lease.NewGenerator(ctx, ccfg, cfg.DataDir)
	if err != nil {
		release(c.lease)
		return nil, err
	}
	return &Issuer{gen: gen, lease: c.lease, cfg: cfg}, nil
}

// Close releases the machine ID of a Claim that was not opened. After Open
// began it does nothing (the Issuer, or Open's failure, releases it): to
// stop an Open that waits, cancel its ctx. Idempotent.
func (c *Claim) Close() error {
	if !c.take() {
		return nil
	}
	return release(c.lease)
}

// take reports whether the caller is the first to take the lease.
func (c *Claim) take() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := !c.spent
	c.spent = true
	return first
}

// release closes a lease within closeTimeout.
func release(lease *machineid.Lease) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return lease.Close(ctx)
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

// MaskCheck is what unmasking holds an ID to (mask.Check): the IDs of
// this issuer's shape (layout, epoch, type, version, MaxBorrow, Clock)
// that an embedded issuer or a server of its Machine ranges can have
// issued. Set its NotBefore to refuse more.
func (is *Issuer) MaskCheck() mask.Check {
	c, err := mask.CheckOf(is.cfg.core(), is.cfg.Machine.Range(core.Embedded), is.cfg.Machine.Range(core.Central))
	if err != nil {
		panic("embed: an open issuer's shape has no codec: " + err.Error()) // Validate checked it
	}
	return c
}

// Masker returns a masker of tenant and kind (see package mask) under
// keys, checked by MaskCheck: it masks IDs into texts that hide them, and
// unmasks the texts of this deployment's IDs, refusing others before any
// lookup.
func (is *Issuer) Masker(keys *mask.Keys, tenant, kind string) (*mask.Masker, error) {
	return mask.New(mask.Config{Keys: keys, Tenant: tenant, Kind: kind, Check: is.MaskCheck()})
}

// Generator exposes the core generator, for its Stats and tests. IDs
// issued through it count as the issuer's (its Stats().Issued, which
// package prommetrics exports as vesta_ids_issued_total{method="embedded"}).
func (is *Issuer) Generator() *core.Generator { return is.gen }

// Lease exposes the machine-ID lease, for its Status and Stats.
func (is *Issuer) Lease() *machineid.Lease { return is.lease }

// Close stops issuing, saves the exact mark, then releases the machine ID
// (and the time guard's file lock). It is idempotent.
func (is *Issuer) Close() error {
	err := is.gen.Close()
	return errors.Join(err, release(is.lease))
}
