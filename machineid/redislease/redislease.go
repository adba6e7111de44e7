package redislease

import (
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
	"github.com/vesta-go/vesta/machineid/internal/redisstore"
)

func init() { leasestore.Register(machineid.ProviderRedis, redisstore.Provider) }

// Keys returns the Redis keys of machine id under prefix: the lease (its
// value is the holder's token, "<128 random bits>/<host>/<pid>", with the
// lease's TTL) and the time guard's mark (unix milliseconds, no TTL, only
// ever raised while held).
func Keys(prefix string, id core.MachineID) (lease, mark string) { return redisstore.Keys(prefix, id) }

// ShapeKey is the key beside the mark that says what the mark's instants
// mean: JSON {"layout","type","epoch_ms","version"} of the generator that
// last wrote it. A mark without it (written by earlier versions) is read
// as the loading generator's own shape.
func ShapeKey(prefix string, id core.MachineID) string { return redisstore.ShapeKey(prefix, id) }

// ReleasedKey is the clean-release record of machine id: a hash written by
// the release of a lease (final_ms: the exact end of what its holder
// issued; token; run_id and replid: the Redis instance it was written on)
// and deleted by the next claim, which trusts it only on that same
// instance.
func ReleasedKey(prefix string, id core.MachineID) string { return redisstore.ReleasedKey(prefix, id) }

// InstanceKey is the identity ("run_id/replid") of the Redis instance that
// last wrote machine id's mark. A claim that finds it equal to the
// instance's own knows the mark is intact since (no restart, no failover,
// no FLUSHALL: it would have gone too), and starts from it at once.
func InstanceKey(prefix string, id core.MachineID) string { return redisstore.InstanceKey(prefix, id) }

// MemberKey is the member record of machine id's holder: JSON of its
// machine ID, version, host, listener addresses and lease times, written
// with the lease key's remaining TTL after every claim and renewal, deleted
// at release. It is information only (machineid.Lease.Fleet); nothing
// reads it for a safety decision.
func MemberKey(prefix string, id core.MachineID) string { return redisstore.MemberKey(prefix, id) }

// HoldsKey is the hold history of machine id (machineid.Lease.History): a
// hash from each hold's name (the first 16 characters of its token) to
// its entry's JSON, written by the holder while it holds the lease.
// HoldsOrderKey is the sorted set of the same names, scored by each
// entry's last instant (unix milliseconds), which orders and bounds it.
// Both expire the history's MaxAge after the last write. Information
// only; nothing reads them for a safety decision.
func HoldsKey(prefix string, id core.MachineID) string { return redisstore.HoldsKey(prefix, id) }

// HoldsOrderKey: see HoldsKey.
func HoldsOrderKey(prefix string, id core.MachineID) string {
	return redisstore.HoldsOrderKey(prefix, id)
}

// StoreKey is the hash that remembers since when (since_ms, Redis TIME)
// claims have seen this Redis instance (run_id, replid). Whatever the
// instance lost, it lost before then, so a quarantine need not reach
// further back.
func StoreKey(prefix string) string { return redisstore.StoreKey(prefix) }

// FleetKey is the fleet record under prefix (see machineid.Lease.Prepare):
// JSON of the shape every issuer under prefix shares.
func FleetKey(prefix string) string { return redisstore.FleetKey(prefix) }
