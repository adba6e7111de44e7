// Package etcdstore is the etcd provider's store (leasestore.Store): a
// lease per machine ID attached to an etcd lease, with the time guard's
// mark beside it, written only in transactions that find the hold's key.
// Its transactions, its keys (keys.go) and its reading of etcd's answers
// are the lease protocol on etcd; the schedule that calls it is
// machineid's.
//
// Programs link it with machineid/etcdlease, which registers Open;
// machineid's lease simulation opens it with New on a client whose KV,
// Lease and Watcher are a model of etcd.
package etcdstore
