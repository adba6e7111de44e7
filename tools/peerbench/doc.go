// Package peers puts vesta's embedded generator beside two other Go
// Snowflake-style generators, github.com/bwmarrin/snowflake and
// github.com/sony/sonyflake/v2, in one benchmark run. It is a module of its
// own so that the main module never depends on them; it holds benchmarks
// and one measurement:
//
//	cd tools/peerbench && go test -run '^$' -bench . -count 1
//
// Two things are measured apart, because each generator has a ceiling (IDs
// per time unit per node) that would otherwise hide its cost:
//
//   - BenchmarkCost: CPU cost per ID, serial and with b.RunParallel, with
//     every generator configured so that its ceiling is never reached
//     (vesta: a 24h MaxBorrow; bwmarrin: 20 step bits instead of 12;
//     sonyflake: 21 sequence bits and a 1ms unit instead of 8 bits per
//     10ms). Only the widths change: the code path per ID is the default
//     one.
//   - BenchmarkSustained: IDs per second per node with each generator's
//     default configuration, flat out from 4 goroutines, as a percentage
//     of that generator's own ceiling (vesta max-peak: 1,048,576/s;
//     bwmarrin: 4096/ms = 4,096,000/s; sonyflake: 256 per 10ms =
//     25,600/s), and the CPU the process burnt meanwhile (cpu-cores: 1.0
//     is one core busy), since a generator may reach its ceiling by
//     spinning. vesta is measured after its 1s of borrowing credit is
//     spent, so the figure is the clock-bound rate, not the credit.
//   - BenchmarkBatch: the cost per ID of vesta's NextIDs(1000), a new
//     slice each call, beside a loop appending 1000 uint64 to a new slice
//     (fill-new), and of AppendIDs(1000) into a reused slice beside the
//     same loop into a reused slice (fill): each beside its floor.
//
// TestProgramSizes (a test, not a benchmark: go test -run TestProgramSizes
// -v) builds the first program of each, in a module of its own, and
// prints what it links: size, packages and go.sum lines.
//
// BENCHMARKS.md at the repository root has the figures and the commands.
package peers
