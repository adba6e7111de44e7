// Command benchcompare is make bench-compare: it measures today's tree
// against an earlier revision and against the anchors a user would pick
// instead, interleaved in one run, and prints every figure as a ratio
// within each round (min–max over the rounds), as markdown tables that
// BENCHMARKS.md takes whole.
//
//	make bench-compare                       # against the last tag, or main~1
//	make bench-compare ARGS='-rev v1.2.0 -rounds 5 -duration 5s'
//	make bench-compare ARGS='-smoke'         # about 10 s of measuring, what CI runs
//
// It builds, for today's working tree and for the revision (checked out
// with git worktree into a temporary directory, removed at the end), the
// server (cmd/vesta), the load generator (tools/vesta-bench) and the peer
// benchmarks' test binary (tools/peerbench). The load generator and the
// benchmarks are today's sources built against each tree's packages, so
// both sides are measured by the same code; when today's do not build
// against the revision, the revision's own are used, and the output says
// so.
//
// Three groups, each interleaved (odd rounds in one order, even rounds in
// the other):
//
//   - embedded: tools/peerbench's BenchmarkCost (NextID on one goroutine
//     and on GOMAXPROCS goroutines) and BenchmarkBatch (NextIDs(1000) per
//     ID), beside bwmarrin/snowflake, sonyflake and a loop filling a
//     reused slice;
//   - central: 'vesta serve' of each tree as its own process, driven by
//     vesta-bench's client target (package client's defaults) at 64
//     callers and at 1, beside Redis INCR (Debian's redis-server on a free
//     port) through rueidis (auto-pipelining) and through go-redis's pool;
//   - rest: the same servers' REST listeners, with their defaults (the
//     Host allow-list, the cross-site checks, no-store, the listener
//     policy, metrics), driven by wrk -t2 -c32 on /genid, /v1/id and
//     /v1/ids?count=100, beside vesta-bench's trivial echo handlers (its
//     own process), which answer each route as the REST server does (the
//     same text and JSON) with a counter's next values, as long as real
//     IDs (from 2^58, 18 digits). The servers borrow
//     up to a day (VESTA_ID_MAX_BORROW=24h), so that a batch measures its
//     cost, not the sequence's ceiling.
//
// Bad flags are refused, naming the flag. It needs git, go, redis-server
// and wrk (scripts/deps.sh installs the last two). The machine's load
// average is printed at the start and the end: timing on a shared machine
// is noisy, which is why every figure is a ratio within a round.
package main
