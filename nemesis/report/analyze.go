package report

import (
	"math"
	"slices"
	"time"
)

// The thresholds of the fault figures. They are fractions of calls
// answered in one bucket, per caller kind.
const (
	// DownBelow: a kind answering fewer than this share of its calls in
	// a bucket is down for it.
	DownBelow = 0.5
	// UpFrom: a kind answering at least this share is back up.
	UpFrom = 0.99
	// StableFor is how long every affected kind must stay up for the
	// fault to count as recovered, so one lucky bucket is no recovery.
	StableFor = time.Second
	// Tail is how long after a fault's heal its window may run on when
	// no later fault starts first.
	Tail = 60 * time.Second
)

// Analysis is what Analyze makes of a Run.
type Analysis struct {
	Step     time.Duration // the bucket width used
	Duration time.Duration // End - Start
	// Kinds has one entry per caller kind seen in the run, by name;
	// Overall sums them (its Kind is "all").
	Kinds   []KindStats
	Overall KindStats
	// Faults has one entry per fault, in the run's order.
	Faults []FaultStats
	// Unrecovered counts the faults that did not recover.
	Unrecovered int
}

// KindStats is one caller kind's totals over the run.
type KindStats struct {
	Kind            string
	OK, Err, Values int64
}

// Availability is the share of calls answered, OK/(OK+Err); NaN when
// there were no calls.
func (k KindStats) Availability() float64 {
	if k.OK+k.Err == 0 {
		return math.NaN()
	}
	return float64(k.OK) / float64(k.OK+k.Err)
}

// Throughput is values per second over d.
func (k KindStats) Throughput(d time.Duration) float64 {
	if d <= 0 {
		return math.NaN()
	}
	return float64(k.Values) / d.Seconds()
}

// FaultStats is one fault as the callers saw it.
//
// Both figures are measured on the run's buckets, so their resolution is
// one Step. A kind's answered share in a bucket is OK/(OK+Err); a bucket
// in which a kind made no call at all (none returned, as when its server
// is paused) counts as 0% answered for it, since its callers got nothing.
type FaultStats struct {
	Fault Fault
	// Since is Start - Run.Start.
	Since time.Duration
	// Kinds are the affected caller kinds present in the run, but the
	// Run's Spare ones: the fault's Kinds, or every kind when those are
	// empty. Measured is
	// false when none of them ran; the figures are then zero.
	Kinds    []string
	Measured bool
	// Window is the unavailability window seen by callers: the total
	// width of the buckets, from the one containing Fault.Start up to
	// (not including) those starting at or after the limit, in which at
	// least one affected kind answered fewer than DownBelow of its calls.
	// The limit is the earliest of the next fault's start (the next
	// fault in Start order starting strictly later), Fault.End + Tail,
	// and the run's End. The buckets need not be contiguous.
	Window time.Duration
	// Recovery is the time to recover: from Fault.End to the start of
	// the first run of consecutive buckets lasting at least StableFor in
	// which every affected kind answered at least UpFrom of its calls,
	// searching from the bucket containing Fault.End; zero when that
	// bucket already begins such a run. Recovered is false, and
	// Recovery zero, when no such run completes before the run's End:
	// the fault did not recover by itself.
	Recovery  time.Duration
	Recovered bool
	// Overlapped is true when the next fault started before this one
	// recovered (or it never did), so Recovery mixes the two.
	Overlapped bool
}

// grid is a run's buckets laid out by kind and bucket index.
type grid struct {
	start time.Time
	step  time.Duration
	n     int // buckets in [start, end)
	kinds []string
	ok    map[string][]int64
	err   map[string][]int64
	vals  map[string][]int64
}

// newGrid lays r's buckets out. Step <= 0 is taken as one second; an End
// not after Start is taken as the end of the last bucket. Buckets
// outside [Start, End) are dropped; two buckets of one kind and index add.
func newGrid(r Run) grid {
	g := grid{start: r.Start, step: r.Step,
		ok: map[string][]int64{}, err: map[string][]int64{}, vals: map[string][]int64{}}
	if g.step <= 0 {
		g.step = time.Second
	}
	end := r.End
	if !end.After(r.Start) {
		end = r.Start
		for _, b := range r.Buckets {
			if e := b.At.Add(g.step); e.After(end) {
				end = e
			}
		}
	}
	g.n = int((end.Sub(r.Start) + g.step - 1) / g.step)
	for _, b := range r.Buckets {
		i := g.index(b.At)
		if i < 0 || i >= g.n {
			continue
		}
		if _, seen := g.ok[b.Kind]; !seen {
			g.kinds = append(g.kinds, b.Kind)
			g.ok[b.Kind] = make([]int64, g.n)
			g.err[b.Kind] = make([]int64, g.n)
			g.vals[b.Kind] = make([]int64, g.n)
		}
		g.ok[b.Kind][i] += b.OK
		g.err[b.Kind][i] += b.Err
		g.vals[b.Kind][i] += b.Values
	}
	slices.Sort(g.kinds)
	return g
}

// index is the bucket containing t; negative before the start.
func (g grid) index(t time.Time) int {
	d := t.Sub(g.start)
	if d < 0 {
		return -1 - int((-d-1)/g.step)
	}
	return int(d / g.step)
}

func (g grid) at(i int) time.Time { return g.start.Add(time.Duration(i) * g.step) }

// share is kind k's answered share in bucket i, 0 with no calls.
func (g grid) share(k string, i int) float64 {
	ok, err := g.ok[k][i], g.err[k][i]
	if ok+err == 0 {
		return 0
	}
	return float64(ok) / float64(ok+err)
}

func (g grid) down(kinds []string, i int) bool {
	for _, k := range kinds {
		if g.share(k, i) < DownBelow {
			return true
		}
	}
	return false
}

func (g grid) up(kinds []string, i int) bool {
	for _, k := range kinds {
		if g.share(k, i) < UpFrom {
			return false
		}
	}
	return true
}

// Analyze computes the availability, throughput and fault figures of r.
func Analyze(r Run) Analysis {
	g := newGrid(r)
	a := Analysis{Step: g.step, Duration: g.at(g.n).Sub(r.Start), Overall: KindStats{Kind: "all"}}
	if r.End.After(r.Start) {
		a.Duration = r.End.Sub(r.Start)
	}
	for _, k := range g.kinds {
		s := KindStats{Kind: k}
		for i := range g.n {
			s.OK += g.ok[k][i]
			s.Err += g.err[k][i]
			s.Values += g.vals[k][i]
		}
		a.Kinds = append(a.Kinds, s)
		a.Overall.OK += s.OK
		a.Overall.Err += s.Err
		a.Overall.Values += s.Values
	}
	stable := max(1, int((StableFor+g.step-1)/g.step))
	for _, f := range r.Faults {
		fs := FaultStats{Fault: f, Since: f.Start.Sub(r.Start)}
		if len(f.Kinds) == 0 {
			for _, k := range g.kinds {
				if !slices.Contains(r.Spare, k) {
					fs.Kinds = append(fs.Kinds, k)
				}
			}
		} else {
			for _, k := range f.Kinds {
				if _, ok := g.ok[k]; ok && !slices.Contains(fs.Kinds, k) && !slices.Contains(r.Spare, k) {
					fs.Kinds = append(fs.Kinds, k)
				}
			}
		}
		fs.Measured = len(fs.Kinds) > 0
		next, hasNext := nextStart(r.Faults, f.Start)
		if fs.Measured {
			limit := f.End.Add(Tail)
			if hasNext && next.Before(limit) {
				limit = next
			}
			for i := max(0, g.index(f.Start)); i < g.n && g.at(i).Before(limit); i++ {
				if g.down(fs.Kinds, i) {
					fs.Window += g.step
				}
			}
			streak := 0
			for i := max(0, g.index(f.End)); i < g.n; i++ {
				if !g.up(fs.Kinds, i) {
					streak = 0
					continue
				}
				if streak++; streak == stable {
					fs.Recovered = true
					fs.Recovery = max(0, g.at(i-stable+1).Sub(f.End))
					break
				}
			}
			if !fs.Recovered {
				a.Unrecovered++
			}
			fs.Overlapped = hasNext && (!fs.Recovered || next.Before(f.End.Add(fs.Recovery)))
		}
		a.Faults = append(a.Faults, fs)
	}
	return a
}

// nextStart is the earliest fault start strictly after t.
func nextStart(faults []Fault, t time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	for _, f := range faults {
		if f.Start.After(t) && (!found || f.Start.Before(next)) {
			next, found = f.Start, true
		}
	}
	return next, found
}
