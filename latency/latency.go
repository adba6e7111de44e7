package latency

import (
	"slices"
	"sync/atomic"
	"time"
)

// Histogram counts durations in buckets with fixed upper bounds. Observe
// is safe for concurrent use and takes no lock: an atomic add to the
// bucket, one to the sum.
type Histogram struct {
	bounds []time.Duration
	counts []atomic.Uint64 // per bucket; the last is above every bound
	sum    atomic.Int64    // nanoseconds
}

// New returns a histogram whose buckets end at bounds (increasing), with
// a last bucket above them.
func New(bounds ...time.Duration) *Histogram {
	if !slices.IsSorted(bounds) {
		panic("latency: bounds not increasing")
	}
	return &Histogram{bounds: slices.Clone(bounds), counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe counts d in the first bucket whose bound is at least d.
func (h *Histogram) Observe(d time.Duration) {
	i, _ := slices.BinarySearch(h.bounds, d)
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Snapshot reads the histogram. Observations that run meanwhile may show
// in some buckets and not yet in others or in the sum.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{Bounds: h.bounds, Counts: make([]uint64, len(h.counts)), Sum: time.Duration(h.sum.Load())}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	return s
}

// Snapshot is a histogram's counts at one time.
type Snapshot struct {
	// Bounds are the buckets' upper bounds, increasing (shared: do not
	// modify).
	Bounds []time.Duration
	// Counts are the observations per bucket (not cumulative), one more
	// than Bounds: the last counts those above every bound.
	Counts []uint64
	// Sum is the observations' total.
	Sum time.Duration
}

// Count is the number of observations.
func (s Snapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Add returns the sum of s and o, which have the same bounds; the zero
// Snapshot adds to any.
func (s Snapshot) Add(o Snapshot) Snapshot {
	switch {
	case s.Counts == nil:
		return o
	case o.Counts == nil:
		return s
	case !slices.Equal(s.Bounds, o.Bounds):
		panic("latency: adding snapshots of different bounds")
	}
	out := Snapshot{Bounds: s.Bounds, Counts: slices.Clone(s.Counts), Sum: s.Sum + o.Sum}
	for i, c := range o.Counts {
		out.Counts[i] += c
	}
	return out
}

// CeilingBounds are the bounds of the histograms of waits at the
// sequence's ceiling, from a fraction of a millisecond (a paced batch) to
// a few seconds (a unit of max-peak and its borrowing): the servers' and
// the client's alike, so that one registry adds them up
// (vesta_ceiling_wait_seconds).
var CeilingBounds = []time.Duration{
	100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2500 * time.Millisecond, 5 * time.Second,
}
