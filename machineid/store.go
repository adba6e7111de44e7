package machineid

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/vesta-go/vesta/core"
)

// store is where leases of machine IDs live: Redis (redisStore) or etcd
// (etcdStore). The lease around it (leased) owns the schedule: when to
// claim, renew, fence, re-acquire and release. A store knows how to do each
// once, and what its answers prove.
type store interface {
	// where names the store for messages.
	where() string
	// claim leases the first free ID of ids, in order; a nil hold and nil
	// error when every one is held. sent is the lease clock's reading
	// before the first write that could start the lease's TTL: the lease
	// lives at least until sent + TTL.
	claim(ctx context.Context, ids []core.MachineID) (h *hold, sent time.Time, err error)
	// renew extends h's lease. An error wrapping ErrLeaseLost means the
	// lease is not h's any more (claim again); any other error is a
	// failed renewal (retry). sent is as for claim.
	renew(ctx context.Context, h *hold) (sent time.Time, err error)
	// release gives h's ID back if h still holds it. With exact, final is
	// the exact end of what h issued, for the next holder to start from.
	release(ctx context.Context, h *hold, final time.Time, exact bool) error
	// fleet records f as the fleet's settings when none are recorded, and
	// otherwise refuses (ErrFleet) settings that differ.
	fleet(ctx context.Context, f fleet) error
	// putMember writes rec as h's member record, expiring with h's
	// lease, if h still holds it; dropMember deletes it while h holds it
	// (member.go: information only, never read for a safety decision).
	putMember(ctx context.Context, h *hold, rec string) error
	dropMember(ctx context.Context, h *hold) error
	// members reads every member record under the key prefix, bounded
	// in count and size.
	members(ctx context.Context) ([]rawMember, error)
	// prefix is the key prefix, for Lease.Fleet.
	prefix() string
	// close releases the store's connections.
	close() error
}

// hold is one claimed lease: an ID, its time guard and what the store needs
// to prove it still holds it.
type hold struct {
	id    core.MachineID
	key   string // the lease's key, for messages
	guard *leaseGuard
	// lost, when not nil, is closed as soon as the store sees the lease go
	// (etcd's watch); Redis is asked at every renewal instead.
	lost <-chan struct{}
	// of is the store's own part: the token, the connection, the epoch.
	of any
}

// claimOrder is the order a claim tries the IDs of rng: prefer first (when
// it lies in rng), then every other ID from a random point, so that a fleet
// starting together spreads out instead of fighting over the first ID.
func claimOrder(rng Range, prefer core.MachineID, hasPrefer bool) []core.MachineID {
	n := int(rng.Count)
	out := make([]core.MachineID, 0, n)
	hasPrefer = hasPrefer && rng.Contains(prefer)
	if hasPrefer {
		out = append(out, prefer)
	}
	start := rand.IntN(n)
	for i := range n {
		id := rng.First + core.MachineID((start+i)%n)
		if !hasPrefer || id != prefer {
			out = append(out, id)
		}
	}
	return out
}
