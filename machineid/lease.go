package machineid

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// State is what a lease lets its generator do.
type State uint8

const (
	// StateNone: no lease in a store (a static, iptable or k8s ID, which
	// nothing can take away), or the lease was closed.
	StateNone State = iota
	// StateHeld: the lease (Redis, etcd) is held and was renewed in time.
	StateHeld
	// StateFenced: the lease could not be proven held (renewal failing
	// past the deadline, lost, or being replaced); the generator is
	// fenced.
	StateFenced
)

// String is "none", "held" or "fenced".
func (s State) String() string {
	switch s {
	case StateNone:
		return "none"
	case StateHeld:
		return "held"
	case StateFenced:
		return "fenced"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Status is a snapshot of a lease.
type Status struct {
	Provider string         // which provider gave the ID
	Machine  core.MachineID // the ID in use
	State    State
	// Deadline is when the generator is fenced unless a renewal succeeds
	// first, on the lease's clock; zero for a fixed ID.
	Deadline time.Time
	// RenewAt is when the next renewal is due, on the lease's clock; zero
	// for a fixed ID.
	RenewAt time.Time
	// At is the lease clock's reading when the snapshot was taken: the
	// time left is Deadline.Sub(At) and RenewAt.Sub(At).
	At time.Time
	// Fences counts the times the generator was fenced.
	Fences uint64
	// RenewFailures counts renewals that did not reach the store or found
	// the lease gone.
	RenewFailures uint64
	// RangeFull counts the claims (the first, and re-acquisitions after
	// a lost lease) that found every ID of the range held (ErrRangeFull):
	// the pool ran out.
	RangeFull uint64
	// Err says why the state is not held; nil otherwise.
	Err error
	// QuarantineUntil is, for a Redis lease whose claim could follow a
	// holder whose key Redis lost, the instant above which its IDs' time
	// fields lie (that holder may issue below it); zero otherwise (a
	// release record, a mark this Redis instance wrote, etcd). See
	// Prepare.
	QuarantineUntil time.Time
}

// leaseBase is what every lease shares, whatever its provider.
type leaseBase struct {
	cfg    Config      // resolved
	method core.Method // the publish method; it chose rng
	rng    core.MachineRange
	log    *slog.Logger
	clock  core.Clock
	stats  *leaseStats            // Lease.Stats
	self   *selfInfo              // its member record's own part (member.go)
	plant  leasestore.PlantedBugs // the lease simulation's; none in the product
}

func newLeaseBase(c Config, m core.Method, rng core.MachineRange) leaseBase {
	b := leaseBase{cfg: c, method: m, rng: rng, log: c.Logger, clock: c.Clock}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.clock == nil {
		b.clock = core.NewSystemClock()
	}
	b.stats = newLeaseStats()
	b.self = newSelf(b.clock)
	return b
}

// storeBase is what the store of b's provider is opened with.
func (b leaseBase) storeBase() leasestore.Base {
	return leasestore.Base{
		Clock: b.clock, Log: b.log, Reach: maxRedisReach, ObserveSkew: b.stats.observeSkew, Plant: b.plant,
		Redis: leasestore.RedisSettings(b.cfg.Redis), Etcd: leasestore.EtcdSettings(b.cfg.Etcd),
	}
}

// Lease is a machine ID held by this process: a fixed ID (static, iptable,
// k8s), which nothing can take away, or a lease in Redis or etcd, which
// owns three goroutines started by Acquire and stopped by Close (and etcd's
// watch of its key): one renews the lease
// every third of its TTL (and, once a generator is attached, re-acquires a
// lost lease and re-keys the generator), one fences the generator
// when the renewal deadline passes, and one writes the member record after
// each renewal (member.go: information only).
//
// The wire format in Redis, per machine ID (see redislease.Keys,
// ShapeKey, ReleasedKey, InstanceKey; StoreKey and FleetKey per prefix):
// the lease key holds "<128 random bits>/<host>/<pid>" with the TTL; the
// mark key holds the time guard's mark in unix milliseconds, without a
// TTL, only ever raised; the shape key the JSON shape of the generator
// that last wrote it; the released key the clean-release record; the
// instance key the identity of the Redis instance that wrote the mark;
// the member key (MemberKey) the holder's member record, with the lease's
// TTL. In etcd (see etcdlease.Keys, FleetKey, MemberKey) the same token,
// mark (20 digits), shape and member record.
type Lease struct {
	leaseBase
	provider string
	h        holder // *fixedLease or *leased

	closeOnce sync.Once
	closeErr  error
}

// holder is what keeps a Lease's machine ID: a fixedLease (fixed.go) or a
// lease in a store, Redis or etcd (leased.go).
type holder interface {
	machine() core.MachineID
	// guard is the time guard store of the first hold; nil for a fixed ID.
	guard() core.GuardStore
	timeGuard(dir string) (core.GuardStore, error)
	attach(gen *core.Generator) error
	status() Status
	checkFleet(ctx context.Context, cfg core.Config) error
	prepare(ctx context.Context, cfg core.Config) error
	// advertise writes the member record now, if there is a store.
	advertise(ctx context.Context) error
	// members lists the fleet (Lease.Fleet).
	members(ctx context.Context) (Members, error)
	// history reads a machine ID's hold history (Lease.History).
	history(ctx context.Context, id core.MachineID) (History, error)
	close(ctx context.Context) error
}

// ID returns the machine ID in use. After a lost lease was replaced it is
// the new one.
func (l *Lease) ID() core.MachineID { return l.h.machine() }

// Provider returns the name of the provider that gave the ID.
func (l *Lease) Provider() string { return l.provider }

// Range returns the range the ID was taken from.
func (l *Lease) Range() core.MachineRange { return l.rng }

// Guard returns the time guard store of a lease in Redis or etcd, for
// core.Config.Guard: the mark lives beside the lease and only the holder
// can raise it. It is nil for the other providers; use TimeGuard to
// fall back to a file.
func (l *Lease) Guard() core.GuardStore { return l.h.guard() }

// TimeGuard returns the time guard to hand to core.Config.Guard: Guard for
// a lease in Redis or etcd; otherwise a core.FileGuard of the machine ID in dir,
// opened on the first call and closed by Close; nil when dir is "" (no
// time guard).
func (l *Lease) TimeGuard(dir string) (core.GuardStore, error) { return l.h.timeGuard(dir) }

// Attach hands the lease the generator issuing with its ID (built with
// Guard or TimeGuard as its time guard). From then on the lease fences gen
// when it can no longer prove it holds the ID, and re-acquires: the same ID
// when it is free, else another of the range, moving gen to it with
// core.Control.Rekey; then it unfences. For a static, iptable or k8s ID
// Attach only checks the machine ID.
func (l *Lease) Attach(gen *core.Generator) error { return l.h.attach(gen) }

// attachCheck is what every Attach refuses: a closed lease, a second
// generator, a generator of another machine ID.
func attachCheck(closed bool, attached, gen *core.Generator, id core.MachineID) error {
	switch {
	case closed:
		return ErrClosed
	case attached != nil:
		return fmt.Errorf("%w: a generator is already attached", ErrAttached)
	case gen.Machine() != id:
		return fmt.Errorf("%w: the generator issues machine ID %d, the lease holds %d", ErrAttached, gen.Machine(), id)
	}
	return nil
}

// Status returns a snapshot of the lease.
func (l *Lease) Status() Status { return l.h.status() }

// Close stops renewing, fences an attached generator (close the generator
// first, so that its final mark is saved while the lease is still held),
// releases the lease with compare-and-delete so the ID is free at once,
// and closes a file guard opened by TimeGuard. It is idempotent; later
// calls wait for the first and return its result.
func (l *Lease) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		l.stats.closed.Store(true)
		l.closeErr = l.h.close(ctx)
	})
	return l.closeErr
}

// CheckFleet checks the fleet record of a lease in a store (see Prepare,
// which does it too) without waiting for anything: a host whose settings
// differ from its fleet's fails with ErrFleet at once, in the open. It
// returns nil for the other providers.
func (l *Lease) CheckFleet(ctx context.Context, cfg core.Config) error {
	return l.h.checkFleet(ctx, cfg)
}

// Prepare readies the lease for a generator with cfg, before core.New:
//
//   - On Redis, a cfg.MaxBorrow that takes the lease TTL + MaxClockSkew +
//     MaxBorrow past MaxRedisReach is refused (ErrConfig).
//   - A lease in a store (Redis, etcd) checks the fleet's record there: the
//     first host leasing under the key prefix records its shape (layout,
//     type, epoch, version); a host whose shape differs is refused with
//     ErrFleet, naming each setting with both values.
//   - A Redis lease whose claim could follow a holder whose lease Redis
//     lost (no release on the same instance, and a mark Redis may have
//     lost since it was written) waits, renewing meanwhile, until its IDs
//     lie above anything such a holder may still issue: MaxRedisReach plus
//     this host's clock error after the claim (less the generator's
//     MaxBorrow), bounded by ctx only, not by cfg.MaxStartupWait. So does a
//     claim whose previous hold was released before it issued anything,
//     until that hold's own floor. The wait shows as
//     Status().QuarantineUntil.
//
// NewGenerator calls it; call it before core.New when building the
// generator yourself. It returns at once for the other providers.
func (l *Lease) Prepare(ctx context.Context, cfg core.Config) error {
	return l.h.prepare(ctx, cfg)
}

// NewGenerator runs the rest of the order of operations on the lease: it
// opens the time guard (TimeGuard(dataDir)), checks the fleet's record and
// waits out the quarantine of a lease in a store (Prepare), starts a core.Generator with cfg on the
// lease's machine ID and guard, and attaches it. cfg.Machine and cfg.Guard
// are overwritten; a nil cfg.Clock takes the lease's clock. On success
// close the generator first, then the lease; on error only the lease.
func (l *Lease) NewGenerator(ctx context.Context, cfg core.Config, dataDir string) (*core.Generator, error) {
	guard, err := l.TimeGuard(dataDir)
	if err != nil {
		return nil, err
	}
	if err := l.Prepare(ctx, cfg); err != nil {
		return nil, err
	}
	if guard == nil && cfg.Logger != nil {
		cfg.Logger.Warn("no time guard (time_guard.dir is empty): a restart with the clock set back may re-issue IDs",
			"machine", l.ID())
	}
	cfg.Machine, cfg.Guard = l.ID(), guard
	if cfg.Clock == nil {
		cfg.Clock = l.clock
	}
	gen, err := core.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := l.Attach(gen); err != nil {
		gen.Close()
		return nil, err
	}
	return gen, nil
}
