// Package leasestore is what package machineid's lease schedule and its
// stores share: the Store interface a store implements (Redis and
// Sentinel in machineid/internal/redisstore, etcd in
// machineid/internal/etcdstore), the Hold a claim returns, the time guard
// beside a lease (Guard) with its Quarantine, the fleet record, the raw
// member records, the registry of linked stores, and the errors all of
// them wrap.
//
// It is internal so that none of this is a promise to users: a store's
// safety rests on what the store really promises (docs/design/machine-ids.md, the safety argument), and
// only the stores of this module are argued for. machineid keeps the
// schedule (leased.go: claim, renew, fence, re-acquire, release) and the
// public API; a store package is linked into a program only by the
// program's import of its public package (machineid/redislease,
// machineid/etcdlease), which registers it here.
package leasestore
