// Package machineid decides which machine ID an issuer uses, and keeps two
// issuers from ever using the same one at the same time.
//
// The 1024 machine IDs are split into two disjoint ranges: embedded issuers
// (and the client's fallback) take IDs from the embedded range (Embedded
// mode, default 0-923), central and REST servers from the server range
// (Server mode, default 924-1023). A Range says which IDs a mode may use;
// providers pick one, tried in the order of Config.Providers:
//
//   - static: Config.Static. There is no default: with Static unset the
//     provider refuses (ErrNoMachineID), since two hosts left on one
//     default would issue the same IDs.
//   - iptable: Config.IPTable, matched against every address of every
//     interface of the host (not "the last private one"); addresses that
//     match entries with different IDs are an error (ErrAmbiguous).
//   - k8s: the StatefulSet ordinal of the hostname ("vesta-3") plus
//     Config.K8sOffset.
//   - redis: a lease on a free ID of the range in Redis (single, Sentinel or
//     Cluster), renewed while the process runs.
//
// A provider that cannot work on this host (Redis unreachable, no address
// in the table, no ordinal) wraps ErrUnavailable and the chain tries the
// next; any other error (a bad configuration, an ID outside the mode's
// range, every leasable ID taken, a clock too far from Redis's) stops it.
//
// Fixed IDs (static, iptable, k8s) never come from the IDs Redis leases
// hand out: each mode's lease range (Config.EmbeddedLeaseRange,
// ServerLeaseRange; by default the whole mode range when redis is listed,
// none otherwise) must not hold any of them, checked by Validate and again
// by Acquire for the k8s ordinal and the matched address. So a chain
// [redis, static] is refused on the default ranges (the static ID of a host
// that cannot reach Redis at start could be leased to a host that can), and
// accepted once the lease range is narrowed and the static ID taken from
// the rest. A fleet mixing leasing hosts and fixed IDs sets the lease
// ranges in the configuration every host shares.
//
// # Redis leases and fencing
//
// A lease is "SET {prefix:machine:N}:lease token NX PX ttl", claimed from a
// random point of the range so that a fleet starting together spreads out.
// The token is 128 random bits plus host and pid, fresh for every claim. A
// script extends the lease (compare-and-extend) every third of the TTL, and
// another deletes it (compare-and-delete) on Close. Before leasing, the
// local clock is compared with Redis's TIME (Leaf's check): beyond
// Redis.MaxClockSkew the lease is refused (ErrClockSkew).
//
// If no renewal succeeds for LeaseTTL minus Redis.SafetyMargin (measured on
// the lease's clock from when the last successful renewal was sent, so
// before Redis could expire the key), the attached generator is fenced with
// ErrLeaseLost: every call fails with core.ErrFenced, which the servers
// report as lease_lost (RPC) and 503 (REST), and their readiness turns
// false. A timer fires at the deadline, and the renewer checks it before
// each attempt. A renewal that finds another token (the key expired, or was
// overwritten) fences at once. The lease then claims again, the same ID
// first, and moves the generator to what it got with core.Generator.Rekey,
// then unfences; a renewal that succeeds after the deadline proves the key
// was never lost and unfences at once.
//
// The time guard's high-water mark of each ID lives beside its lease, in
// {prefix:machine:N}:mark (unix milliseconds, no TTL, only ever raised),
// with the shape of the generator that wrote it in {prefix:machine:N}:shape,
// and only the lease's holder can write them (the script checks the token
// first). Whoever takes an ID next starts after everything ever issued with
// it, even on a host whose clock is behind (core.New waits up to
// MaxStartupWait, or refuses). As the core never issues past a durable
// mark, even a holder frozen past its lease (a GC pause, SIGSTOP) cannot
// collide with the next holder: all it can still issue lies below the mark
// the next holder starts from.
//
// # Redis losing data
//
// Redis may lose the lease and the mark (FLUSHALL, a restart empty or from
// older data, a failover to a replica behind). A claim that does not follow
// a clean release on the same Redis instance is therefore quarantined: its
// guard's Load never returns less than claim + LeaseTTL + 2*MaxClockSkew +
// the generator's MaxBorrow, above anything a holder whose key Redis lost
// can still issue before its deadline, and WaitQuarantine (called by
// NewGenerator, and before re-keying) waits until then. Close writes a
// release record ({prefix:machine:N}:released: the exact final mark and
// Redis's run_id and master_replid, read inside the script); the next claim
// consumes it atomically and skips the quarantine only when the identity is
// still the same (no restart, no failover since). MinReplicas adds WAIT to
// every write. MaxClockSkew is checked at every renewal too.
//
// # Order of operations
//
// For `vesta serve` (Server), embed.Open (Embedded) and the client's
// fallback (Embedded, at client.New):
//
//	lease, err := machineid.Acquire(ctx, cfg, machineid.Server) // the ID; a Redis lease is renewed from here on
//	guard, err := lease.TimeGuard(dataDir)                      // Redis store, or a core.FileGuard in dataDir
//	err = lease.WaitQuarantine(ctx, gcfg)                       // a fresh Redis claim: wait out the quarantine
//	gen, err := core.New(ctx, gcfg)                             // gcfg.Machine = lease.ID(), gcfg.Guard = guard
//	err = lease.Attach(gen)                                     // fence, re-acquire and re-key gen from now on
//	... issue ...
//	gen.Close()                                                 // saves the final mark while the lease is held
//	lease.Close(ctx)                                            // releases the ID at once; closes the file guard
//
// On an error after Acquire, close the lease all the same. Pass the same
// Clock (or none) to the lease and the generator.
package machineid
