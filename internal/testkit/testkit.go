// Package testkit is the repository's one test kit: every helper that more
// than one package's tests use lives under internal/testkit, and only
// there (internal/ beside it holds product wiring only). Each subpackage
// keeps the "…test" name it is called by, so that a call site reads
// redistest.Start, not a name that shadows the client library's:
//
//   - proctest runs a real server program (Start, Stop, Kill, Restart) and
//     puts its log into failures; redistest (redis-server, Sentinel),
//     mariadbtest (mariadbd) and etcdtest (etcd members, clusters) are
//     its harnesses; netnstest makes test hosts in network namespaces and
//     partitions between them.
//   - servetest runs `vesta serve` itself (a Run: its environment, its
//     stderr line by line, its exit), for the integration tests' and the
//     nemesis's own wrappers, which keep and read its records.
//   - waittest waits for a condition (the one wait helper), promtest reads
//     metrics back (the one walk of a Gather), logtest collects logs,
//     nettest gives a dead address, serves a server on loopback for the
//     length of a test (the one serve helper) and forwards TCP through a
//     delay (the one slow network), tlstest a throwaway CA,
//     latencytest latency percentiles for benchmarks, errtest the check of
//     an error a test expects (its sentinel and what it names).
//   - gentest starts core generators, embedtest embedded issuers,
//     segtest segment sequencers and the ledger of their numbers, and
//     clienttest opens Go clients of servers a test started: the only
//     kits that import product packages.
//
// Imports only go down, so that no cycle is possible: this package,
// servetest and errtest import the standard library only; every other kit
// may import this package (Closed, Short); nettest imports waittest; redistest,
// mariadbtest and etcdtest import proctest, netnstest and tlstest; gentest
// imports core, embedtest embed, segtest segment and clienttest client (so
// those packages' own tests use them from external test packages); no kit
// imports another product package.
//
// # The inner loop
//
// `go test -short ./...` is the hermetic inner loop: it needs no Redis,
// MariaDB, etcd, browser or root. Every test that needs one, or that runs
// for tens of seconds, skips there through Short or SkipShort, with a
// message naming what it needs; the kits that start real programs
// (proctest.Binary, so every harness) and network namespaces
// (netnstest.New) skip by themselves. `make test` runs without -short and
// skips nothing: a missing program fails the test. With CI=true, -short is
// ignored, so a CI run can never pass by skipping.
package testkit

import (
	"os"
	"testing"
)

// Short reports whether this is the inner loop: a test binary run with
// -short, outside CI (CI=true runs everything). Outside a test binary (the
// nemesis runs the kits from a program of its own) it is false.
func Short() bool {
	return testing.Testing() && testing.Short() && os.Getenv("CI") != "true"
}

// SkipShort skips tb in the inner loop (Short), saying what the test
// needs: "redis-server", "root (network namespaces)".
func SkipShort(tb testing.TB, needs string) {
	tb.Helper()
	if Short() {
		tb.Skipf("needs %s: skipped by go test -short; make test runs it", needs)
	}
}

// Closed returns v, made by a call that returned v and err: it fails tb
// with what the call was and err unless err is nil, and closes v when tb
// ends. One line instead of the check and the cleanup at every call:
//
//	gen, err := core.New(ctx, cfg)
//	return testkit.Closed(tb, "core.New", gen, err)
func Closed[T interface{ Close() error }](tb testing.TB, what string, v T, err error) T {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	tb.Cleanup(func() { v.Close() })
	return v
}
