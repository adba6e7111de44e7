// Package etcdlease links the etcd provider of package machineid into a
// program: machine-ID leases in etcd, for fleets that must survive network
// partitions (Raft never loses an acknowledged write). Import it for its
// effect, beside a Config that lists the provider:
//
//	import _ "github.com/vesta-go/vesta/machineid/etcdlease"
//
//	cfg.Machine.Providers = []string{machineid.ProviderEtcd}
//	cfg.Machine.Etcd.Endpoints = []string{"etcd-0.internal:2379"}
//
// machineid.Config.Etcd configures it; machineid holds the lease schedule
// and the fleet record. machineid itself links no etcd client (nor its
// gRPC), so a program on a fixed machine ID does not pay for one; a Config
// listing etcd in a program without this import is refused, naming it.
//
// The functions below name the provider's keys in etcd, for operators and
// tests.
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

// FleetKey is the fleet record under prefix (see machineid.Lease.Prepare).
func FleetKey(prefix string) string { return etcdstore.FleetKey(prefix) }
