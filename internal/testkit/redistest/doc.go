// Package redistest starts a real redis-server for tests: on a free port of
// 127.0.0.1, in a temporary directory, without persistence, stopped when the
// test ends. Tests can stop, kill and restart it (on the same port) to
// simulate Redis lost and recovered while a client runs; flush it
// (FlushAll), kill it and bring it back empty or rolled back to a snapshot
// (KillAndRestart), and start replicas of it (StartReplica) for WAIT.
//
// StartWith runs a server elsewhere: on a test host's address in a network
// namespace (package netnstest), with more arguments; StartReplicaWith a
// replica. StartReplicated runs a master, a replica and three
// redis-sentinel processes; PauseReplication and Failover make Sentinel
// promote a replica that lacks writes the master acknowledged, as
// asynchronous replication allows. StartReplicatedWith runs such a group
// with more replicas, each process where its Group says (a test host of
// its own, so that a test can cut the master off from the Sentinels);
// WaitPromoted waits until a majority of the Sentinels names a replica,
// and Views and ConfigEpoch say what each names. redis-sentinel must be on
// PATH too.
//
// The processes are package proctest's: each stopped in t.Cleanup, Stop,
// Kill and Restart idempotent and waiting.
//
// redis-server must be on PATH; scripts/deps.sh installs it. A missing
// binary fails the test rather than skipping it, so a CI run that lacks it
// cannot pass unnoticed. Under go test -short (package testkit's inner
// loop) every test on it skips.
package redistest
