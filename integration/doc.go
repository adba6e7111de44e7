// Package integration holds vesta's end-to-end fault tests: real `vesta
// serve` processes, a real redis-server and clients (package client, package
// embed, raw MessagePack-RPC connections built on package central/wire, and
// plain HTTP), all on 127.0.0.1 with ports chosen by the kernel.
//
// The binary is built once per test run, with -race when the tests run with
// it, so a data race inside a server under fault fails the test that caused
// it. Every server's log is read as JSON (--log-format json); the addresses
// it listens on come from its "serving" record.
//
// Each scenario collects every ID it was given and checks, independently of
// package core's decoder, that no ID appears twice, that every ID carries
// the method and a machine ID of the range its issuer may use, and that IDs
// a single caller got through sequential calls strictly increase per
// machine ID (the generator's order, which a restarted or re-keyed issuer
// must continue above its time guard's mark).
//
// The scenarios:
//
//   - TestFleet: three central servers (one also serving REST), two Go
//     clients with prefetch and two embedded issuers, all leasing machine IDs
//     from one Redis, under sustained load: millions of IDs, no duplicate.
//   - TestFailover: kill -9 of one server, then of all (the clients fall
//     back to embedded issuing), then a restart (they return): no call
//     fails, and each restarted machine ID continues above its mark.
//   - TestTimeGuardBehind: a server whose time guard's mark is ahead of the
//     clock waits for it, or refuses to start naming the gap.
//   - TestRedisOutage: Redis killed under load: leased servers fence before
//     their leases could expire, then recover when Redis comes back empty.
//   - TestHostileClients: garbage, slow, flooding and oversized clients of
//     both protocols beside well-behaved ones, which see no error.
//   - TestGracefulShutdown: SIGTERM under pipelined load: every request
//     sent before the signal is answered before its connection closes.
//   - TestThirdPartyClient: a MessagePack-RPC client in Python, written
//     against the spec with the msgpack package, calls every procedure.
//
// The machine-ID safety scenarios, where a machine ID could be held twice:
//
//   - TestFlushAllTakeover, TestRedisKilledEmptyTakeover,
//     TestSentinelFailoverTakeover: Redis forgets a live holder's lease
//     (FLUSHALL; kill -9 and restart empty; a Sentinel failover to a
//     replica that lacks the latest renewals and marks) and a second server
//     on the same one-ID range takes the ID: the takeover quarantine keeps
//     every ID of the second above every ID of the first.
//   - TestPartition: servers and Redis on test hosts of their own
//     (package netnstest); one server cut off from Redis silently (iptables
//     DROP) or loudly (link down) fences before its lease expires, another
//     takes its ID, the healed one rejoins above it.
//   - TestSentinelSplitBrain: a Sentinel-managed Redis split under a
//     holder, every process on a test host of its own: the holder and the
//     old master cut off from the Sentinels, the promoted replica and a
//     second server, which takes the ID there; the holder, whose writes
//     still reach the old master, must not issue beside it.
//   - TestEtcdPartition: servers on etcd leases and a three-member etcd
//     cluster, every process on a test host: the holder cut off with one
//     member (silently or loudly; both on one host) or its only member
//     killed fences and issues its last ID before its lease key leaves
//     etcd, a second server takes the ID and issues above it, the healed
//     holder (the member restarted from its data dir) issues nothing
//     while the ID is held and rejoins above it; a leader killed under
//     load loses no lease.
//   - TestTwoHostsOnDefaults: `vesta gen --servers DEAD` on two test hosts
//     at once, on defaults: both refuse, or no ID twice.
//   - TestRestartChangedShape: a restart on the same machine ID with a
//     later epoch or the other layout refuses naming both, or issues no ID
//     twice.
//   - TestStartupCost: which starts wait out the takeover quarantine, read
//     from each server's log: the first claim on a fresh Redis does; a
//     never-used ID on a Redis in use, a crash restart on the same Redis
//     instance, a clean restart and every etcd claim do not. A host whose
//     settings differ from the fleet record is refused at start (exit 2).
//     BenchmarkStartupCost times each provider's start-up per scenario.
//   - TestRedisClusterAddrsRefused: several Redis addresses without a
//     master name (a Cluster) are refused at start (exit 2).
//
// The listener policy (package connlimit), each attack beside well-behaved
// callers that must keep getting IDs, with what the server holds (RSS,
// heap, goroutines, descriptors, send queues) logged and bounded:
//
//   - TestIdleFloodLowNofile: under `ulimit -n 256`, idle connections to
//     every port (RPC, REST, metrics) stay within the descriptor budget,
//     shedding the idlest of any port; /readyz answers and the time guard
//     keeps saving.
//   - TestHTTP2SlowStreams: HTTP/2 connections over TLS whose many streams
//     are never read hold no more than the caps; a newcomer sheds one
//     within about a second, and each closes within 1.5 request timeouts.
//   - TestSlowReadFlood: connections that never read large answers hold
//     no more than each peer's share of rest.max_unsent_bytes, and the
//     kernel little (TCP_NOTSENT_LOWAT).
//   - TestHalfSentFloodLowNofile: under `ulimit -n 256`, RPC connections
//     that always hold half a frame, then HTTPS ones that always owe a
//     promised body, redialling what is shed, lock out no one: fresh
//     probes on REST, RPC, /readyz and metrics are answered (9 of 10 at
//     least) throughout each flood.
//   - TestHalfSentFloodAtCaps: the same floods from five addresses at
//     once, against caps of 500 (100 per peer) at a normal limit.
//   - TestMetricsPortAuth: rest.metrics_auth guards metrics.listen too.
//   - TestWrongTokensSpareTheRightOne: behind one address, wrong tokens
//     get 429 past the burst while the right one passes every time, on
//     REST and the metrics listener.
//   - TestLockedRESTWarnsOfOpenRPC: with REST locked, an anonymous RPC
//     caller on the network issues IDs, and vesta warns at start; with
//     mutual TLS it is refused and nothing is said.
//   - TestMetricsListenerLocks: the metrics listener answers REST's Host
//     names only (421 otherwise), speaks HTTPS with metrics.tls, and warns
//     when rest.metrics_auth would send the token in clear.
//   - TestHeaderTooLargeIsJSON: net/http's own 431 goes as the JSON error
//     body, on REST and the metrics listener.
//   - TestIPv6PeerPrefix: many addresses of one IPv6 /64 are one peer
//     under max_conns_per_peer (on a test host).
//
// The partition, split-brain, etcd, two-hosts and IPv6 peer tests need
// root (network namespaces) and iptables; the Sentinel test needs redis-sentinel, the
// etcd test etcd: scripts/deps.sh installs them, and a test fails rather
// than skips without them.
//
// The package holds no code outside its tests; this file is its
// documentation.
package integration
