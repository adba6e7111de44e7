package etcdlease

import (
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/internal/etcdstore"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

func init() { leasestore.Register(machineid.ProviderEtcd, etcdstore.Provider) }

// Keys returns the etcd keys of machine id under prefix: the lease (the
// holder's token, attached to an etcd lease of the holder's), the time
// guard's mark (unix milliseconds, 20 digits zero-padded so that etcd's
// byte order is the numbers' order; only ever raised while held, set to
// the exact end of the hold by its release) and the shape of the generator
// that last wrote the mark (JSON, as redislease.ShapeKey's).
func Keys(prefix string, id core.MachineID) (lease, mark, shape string) {
	return etcdstore.Keys(prefix, id)
}

// MemberKey is the member record of machine id's holder (see
// redislease.MemberKey), attached to the holder's etcd lease so that both
// go together. The records sit apart from the leases (prefix/member/), so
// that one bounded range reads them all. Information only.
func MemberKey(prefix string, id core.MachineID) string { return etcdstore.MemberKey(prefix, id) }

// HoldsPrefix is where machine id's hold history lies
// (machineid.Lease.History): one plain key per hold, HoldsPrefix + its
// lease key's create revision (20 digits, so that keys sort as the holds
// began), holding the entry's JSON. The keys outlive the holds: each new
// holder of the ID trims them in its first write. Information only.
func HoldsPrefix(prefix string, id core.MachineID) string { return etcdstore.HoldsPrefix(prefix, id) }

// FleetKey is the fleet record under prefix (see machineid.Lease.Prepare).
func FleetKey(prefix string) string { return etcdstore.FleetKey(prefix) }
