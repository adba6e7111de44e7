package leasestore

import (
	"context"
	crand "crypto/rand"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/vesta-go/vesta/core"
)

// Store is where leases of machine IDs live: Redis (redisstore) or etcd
// (etcdstore). The lease around it (machineid's leased) owns the schedule:
// when to claim, renew, fence, re-acquire and release. A store knows how
// to do each once, and what its answers prove.
type Store interface {
	// Where names the store for messages.
	Where() string
	// Claim leases the first free ID of ids, in order; a nil hold and nil
	// error when every one is held. sent is the lease clock's reading
	// before the first write that could start the lease's TTL: the lease
	// lives at least until sent + TTL.
	Claim(ctx context.Context, ids []core.MachineID) (h *Hold, sent time.Time, err error)
	// Renew extends h's lease. An error wrapping ErrLeaseLost means the
	// lease is not h's any more (claim again); any other error is a
	// failed renewal (retry). sent is as for Claim.
	Renew(ctx context.Context, h *Hold) (sent time.Time, err error)
	// Release gives h's ID back if h still holds it. With exact, final is
	// the exact end of what h issued, for the next holder to start from.
	Release(ctx context.Context, h *Hold, final time.Time, exact bool) error
	// Fleet records f as the fleet's settings when none are recorded, and
	// otherwise refuses (ErrFleet) settings that differ.
	Fleet(ctx context.Context, f Fleet) error
	// PutMember writes rec as h's member record, expiring with h's
	// lease, if h still holds it; DropMember deletes it while h holds it
	// (information only, never read for a safety decision).
	PutMember(ctx context.Context, h *Hold, rec string) error
	DropMember(ctx context.Context, h *Hold) error
	// Members reads every member record under the key prefix, bounded
	// in count and size.
	Members(ctx context.Context) ([]RawMember, error)
	// HoldName names h among its machine ID's holds in the hold history
	// (unique per claim), and its lease for operators. PutHold writes
	// rec, named name, in h's machine ID's history if h still holds its
	// lease, keeping the keep.Holds latest entries and none whose last
	// instant is before cutMs (name's own always); lastMs is rec's last
	// instant. Holds reads machine id's history, at most MaxHistoryHolds
	// entries, the latest, each bounded by MaxHoldBytes. Information
	// only, never read for a safety decision.
	HoldName(h *Hold) (name, lease string)
	PutHold(ctx context.Context, h *Hold, name, rec string, lastMs int64, keep Keep, cutMs int64) error
	Holds(ctx context.Context, id core.MachineID) ([]RawHold, error)
	// Prefix is the key prefix, for Lease.Fleet.
	Prefix() string
	// Close releases the store's connections.
	Close() error
}

// Hold is one claimed lease: an ID, its time guard and what the store needs
// to prove it still holds it.
type Hold struct {
	ID    core.MachineID
	Key   string // the lease's key, for messages
	Guard *Guard
	// Lost, when not nil, is closed as soon as the store sees the lease go
	// (etcd's watch); Redis is asked at every renewal instead.
	Lost <-chan struct{}
	// Of is the store's own part: the token, the connection, the epoch.
	Of any
}

// PlantedBugs are known bugs that machineid's lease simulation must find,
// planted only by its tests: the product's zero value plants none.
type PlantedBugs struct {
	// NoDeadlineFence: neither the watchdog nor the generator's
	// FenceAfter fences at the deadline.
	NoDeadlineFence bool
	// OwnTiming: an untrusted Redis claim's quarantine reckons with this
	// host's own lease TTL and max_clock_skew instead of MaxRedisReach,
	// as it did when a fleet record, which Redis can lose, bound them.
	OwnTiming bool
}

// Base is what a store is opened with: machineid's resolved settings of
// its provider and what the lease shares with it.
type Base struct {
	Clock core.Clock
	Log   *slog.Logger
	// Reach is machineid.MaxRedisReach (lowered by machineid's tests):
	// the bound an untrusted Redis claim's quarantine waits for.
	Reach time.Duration
	// ObserveSkew records the local clock minus the store's, measured
	// at a claim and at every renewal, for the lease's Stats.
	ObserveSkew func(time.Duration)
	Plant       PlantedBugs
	Redis       RedisSettings
	Etcd        EtcdSettings
}

// RedisSettings are machineid.RedisConfig's fields, validated and with
// their defaults filled in; machineid converts the one into the other, so
// the compiler keeps the two alike. RedisConfig documents each.
type RedisSettings struct {
	Addrs        []string
	MasterName   string
	Username     string
	Password     string
	DB           int
	TLS          any // a *tls.Config, or nil
	KeyPrefix    string
	LeaseTTL     time.Duration
	SafetyMargin time.Duration
	MaxClockSkew time.Duration
	MinReplicas  int
}

// EtcdSettings are machineid.EtcdConfig's fields, validated and with
// their defaults filled in, as RedisSettings are RedisConfig's.
type EtcdSettings struct {
	Endpoints    []string
	Username     string
	Password     string
	TLS          any // a *tls.Config, or nil
	KeyPrefix    string
	LeaseTTL     time.Duration
	SafetyMargin time.Duration
}

// Provider is a leasing provider's store, as its package links it.
type Provider struct {
	// Open opens the store for one lease.
	Open func(ctx context.Context, b Base) (Store, error)
	// Check judges what only the store's package can (b's settings hold
	// the types of its client library, as TLS): machineid's Validate calls
	// it. Its error names the field (Redis.TLS).
	Check func(b Base) error
}

var registry sync.Map // provider name -> Provider

// Register links the store of provider into this program: a provider
// package's init calls it (machineid/redislease, machineid/etcdlease).
func Register(provider string, p Provider) { registry.Store(provider, p) }

// Lookup returns the Provider of provider, if its package is linked.
func Lookup(provider string) (Provider, bool) {
	v, ok := registry.Load(provider)
	if !ok {
		return Provider{}, false
	}
	return v.(Provider), true
}

// CommandTimeout follows the lease's TTL so that a dead store is noticed
// well before the deadline.
func CommandTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/4, 50*time.Millisecond), 3*time.Second)
}

// Bounded bounds one request: a store's client may retry until its
// context ends, and a dead store must be noticed well before a lease's
// deadline.
func Bounded(ctx context.Context, ttl time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, CommandTimeout(ttl))
}

// Latest is the later of two instants.
func Latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Earliest is the earlier of two instants.
func Earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// NewToken is a lease's value: 128 random bits, then the host and the pid
// for operators reading the store. A fresh token for every claim is what
// lets a successful renewal prove that nobody held the ID in between.
func NewToken() string {
	host, _ := os.Hostname()
	return crand.Text() + "/" + host + "/" + strconv.Itoa(os.Getpid())
}
