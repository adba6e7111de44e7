// Package etcdtest starts real etcd servers for tests: a cluster of one
// member (Start) or of n (StartCluster, three typically), each member on a
// client and a peer port of 127.0.0.1 found free (never etcd's defaults
// 2379 and 2380), with a data directory in t.TempDir(), stopped when the
// test ends. Tests can kill (SIGKILL, as a crash), stop and restart a
// member on the same ports from its data directory, stall it (Pause,
// SIGSTOP) and continue it, find the leader a quorum follows (Leader,
// WaitLeader), replace a member whose data is gone (Replace: removed,
// emptied, added again, rejoined), and make the whole cluster lose its
// data (Wipe), to see a client through elections, crashes and data loss.
//
// Options put each member elsewhere: on a test host's address in a network
// namespace (package netnstest), run through the host's Wrap and reached
// through its Dial, so that a test cuts members off from each other for
// real (Host.Drop) while it keeps talking to every one of them. Config and
// Client give a go.etcd.io/etcd/client/v3 client dialling each member that
// way, ClientOf one of some members only (Others: all but one).
//
// The members run with etcd's own timings (a heartbeat every 100 ms, an
// election after 1 s without one), as a cluster on a LAN would: a failover
// takes as long in a test as in production (one to two seconds), and the
// timings leave room on a loaded CI machine, where shorter ones would make
// elections nobody caused. Pre-vote is on, as in etcd 3.5 and later, so a
// member cut off and healed does not depose a leader that served all
// along.
//
// The processes are package proctest's: each stopped in t.Cleanup, Stop,
// Kill and Restart idempotent and waiting.
//
// etcd must be on PATH; scripts/deps.sh installs it (Debian's
// etcd-server). A missing binary fails the test rather than skipping it, so
// a CI run that lacks it cannot pass unnoticed. Under go test -short (package testkit's inner
// loop) every test on it skips.
package etcdtest
