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
