// Package machineid decides which machine ID an issuer uses, and keeps two
// issuers from ever using the same one at the same time.
//
// The 1024 machine IDs are split into two disjoint ranges, and an issuer's
// publish method (core.Method, the ID's method bits) chooses which one its
// machine ID comes from (Config.Range): core.Embedded (package embed and
// the client's fallback) the embedded range (default 0-923), core.Central
// and core.REST (the servers of `vesta serve`) the server range (default
// 924-1023). Providers pick an ID of that range, tried in the order of
// Config.Providers:
//
//   - static: Config.Static. There is no default: with Static unset the
//     provider refuses (ErrNoMachineID), since two hosts left on one
//     default would issue the same IDs.
//   - iptable: Config.IPTable, matched against every address of every
//     interface of the host (not "the last private one"); addresses that
//     match entries with different IDs are an error (ErrAmbiguous).
//   - k8s: the StatefulSet ordinal of the hostname ("vesta-3") plus
//     Config.K8sOffset.
//   - redis: a lease on a free ID of the range in Redis (a single server,
//     or the master of a Sentinel group; Redis Cluster is refused),
//     renewed while the process runs.
//   - etcd: a lease in etcd, for fleets that must survive network
//     partitions (Raft never loses an acknowledged write).
//
// The two leasing providers' stores, with their client libraries, live in
// packages of their own that a program links by importing them for their
// effect: import _ "github.com/vesta-go/vesta/machineid/redislease" (or
// machineid/etcdlease). This package links neither, so a program on a
// fixed ID pays for no Redis, etcd or gRPC client; a Config that lists a
// provider the program does not link is refused (ErrConfig), naming the
// import. The lease schedule, the quarantine and the fleet record stay
// here, whichever store is linked.
//
// A provider that cannot work on this host (Redis or etcd unreachable, no
// ordinal, no address in the table) wraps ErrUnavailable and the chain
// tries the next; any other error (a bad configuration, an ID outside the
// method's range, every leasable ID taken, a clock too far from Redis's)
// stops it. A chain lists redis or etcd, not both.
//
// Fixed IDs (static, iptable, k8s) never come from the IDs leases hand
// out: each range's lease range (Config.EmbeddedLeaseRange,
// ServerLeaseRange; by default the whole range when redis or etcd is
// listed, none otherwise) must not hold any of them, checked by Validate
// and again by Acquire for the k8s ordinal and the matched address. So a
// chain [redis, static] is refused on the default ranges (the static ID of
// a host that cannot reach Redis at start could be leased to a host that
// can), and accepted once the lease range is narrowed and the static ID
// taken from the rest.
//
// # Leases and fencing
//
// A lease is a key per machine ID holding the holder's token, claimed only
// if absent from a random point of the range (so that a fleet starting
// together spreads out) and renewed every third of its TTL: in Redis "SET
// {prefix:machine:N}:lease token NX PX ttl" and a compare-and-extend
// script; in etcd a transaction creating prefix/machine/N/lease attached
// to an etcd lease, then keepalives, each followed by a linearizable read
// of the key. The token is fresh for every claim.
//
// If no renewal succeeds for the TTL minus a safety margin (measured on
// the lease's clock from when the last successful renewal was sent, so
// before the store could expire the key), the attached generator is fenced
// with ErrLeaseLost: every call fails with core.ErrFenced, which the
// servers report as lease_lost (RPC) and 503 (REST), and their readiness
// turns false. A renewal that finds the key not ours fences at once, and
// so does etcd's watch of the key. The lease then claims again, the same
// ID first, moves the generator to what it got with core.Control.Rekey,
// and unfences.
//
// The time guard's high-water mark of each ID lives beside its lease,
// written only while the writer's lease is still in the store, so
// whoever takes an ID next starts after everything ever issued with it.
// The shape of the generator that wrote it (layout, type, epoch, version)
// is kept beside it. Under Redis Sentinel a claim or renewal counts only
// when a majority of the Sentinel group names the master it went to at the
// claim's config epoch, so a master cut off with its clients cannot keep a
// holder alive while a replica is promoted (sentinel.go).
//
// # Redis losing data
//
// Redis may lose the lease and the mark (FLUSHALL, a restart empty or from
// older data, a failover to a replica behind). A claim that cannot rule
// that out is quarantined: its guard's Load never returns less than
// (the claim, or when claims first saw this Redis instance) +
// MaxRedisReach (plus this host's clock error), above anything a holder
// whose key Redis lost can still issue before its deadline, whatever that
// holder's settings: every host's lease TTL + MaxClockSkew + MaxBorrow is
// held to MaxRedisReach at validation. Prepare waits until then. A claim
// starts at once when the mark was written by this very Redis instance
// (run_id and replid, read inside the scripts), when the ID was never
// claimed on an instance claims have seen for longer than a quarantine,
// or after a release on the same instance (whose record gives the exact
// end of the previous hold, or the floor it would have started at when it
// issued nothing). MinReplicas adds WAIT to every write. MaxClockSkew,
// round trip included, is checked at every renewal too, and under Sentinel
// against every Sentinel that counts towards a majority.
//
// # The fleet record
//
// The first host to prepare a generator under a key prefix records the
// fleet's shape in the store; a host that differs is refused with
// ErrFleet, naming each setting and both values (fleet.go). A lost lease
// is re-claimed only under the record as it is then.
//
// # Member records
//
// Beside its lease each holder in a store keeps a member record: its
// machine ID, state, version, host, advertised listeners (Advertise) and
// lease times, written at the claim and after each renewal, expiring with
// the lease, deleted by Close. Fleet lists them, for an operator's view of
// the fleet. They are information only: nothing here reads them for a
// safety decision, and a failed write changes nothing but the record
// (member.go).
//
// # Order of operations
//
// For `vesta serve` (core.Central: its central and REST servers share one
// generator and one lease), embed.Open and the client's fallback
// (core.Embedded; the client acquires at client.New and prepares in the
// background):
//
//	lease, err := machineid.Acquire(ctx, cfg, core.Central) // the ID; a lease is renewed from here on
//	guard, err := lease.TimeGuard(dataDir)                  // the store's mark, or a core.FileGuard in dataDir
//	err = lease.Prepare(ctx, gcfg)                          // the fleet record; a quarantine, if any
//	gen, err := core.New(ctx, gcfg)                         // gcfg.Machine = lease.ID(), gcfg.Guard = guard
//	err = lease.Attach(gen)                                 // fence, re-acquire and re-key gen from now on
//	... issue ...
//	gen.Close()                                             // saves the final mark while the lease is held
//	lease.Close(ctx)                                        // releases the ID at once; closes the file guard
//
// Lease.NewGenerator does the middle three. On an error after Acquire,
// close the lease all the same. Pass the same Clock (or none) to the lease
// and the generator.
//
// # Metrics
//
// Lease.Stats is what a lease measured (its Status, the renewals'
// latencies, the clock skew, the quarantine left), read when asked: this
// package imports no metrics library. Package prommetrics (RegisterLease)
// exports it as the vesta_machine_* series.
package machineid
