// Package floortest holds the floors the batch benchmarks are set beside:
// the least work a call returning n IDs can do, so that a batch's cost
// is read as a ratio to it rather than in nanoseconds of a shared machine.
package floortest

import "testing"

// sink keeps the filled slices alive, so that the compiler drops no
// append; Fill checks the last one.
var sink []uint64

// Fill runs b as the floor of a call returning n IDs: a plain loop
// appending n uint64 to a slice, a new one each time when fresh (the
// floor of any call that returns a slice of its own), or else one it
// reuses (the floor of an append into the caller's). It reports ns/id.
func Fill(b *testing.B, n int, fresh bool) {
	out := make([]uint64, 0, n)
	for b.Loop() {
		if fresh {
			out = make([]uint64, 0, n)
		}
		out = out[:0]
		for i := range uint64(n) {
			out = append(out, i)
		}
		sink = out
	}
	if len(sink) != n {
		b.Fatalf("the floor filled %d of %d", len(sink), n)
	}
	PerID(b, n)
}

// PerID reports b's time per ID, each op being a batch of n, as ns/id.
func PerID(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/id")
}
