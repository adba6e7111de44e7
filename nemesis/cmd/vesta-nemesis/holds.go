package main

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// What a server's log says about its machine IDs, read back after the run
// (and, for the handovers the schedule waits for, while it runs).
//
// A run of `vesta serve` claims a machine ID ("leased a machine ID"),
// issues under it, is fenced ("issuing fenced", with the deadline the
// generator was held to), may resume under the same hold ("lease renewed
// after its deadline", then "issuing resumed") or claim again ("re-acquired
// a lease; re-keying", then "issuing resumed" once the generator moved),
// and ends (exit, or "released the lease"). Each stretch between a resume
// and the next fence is a window: the only time its generator may issue.
// An ID's time field then says which windows could have issued it.

// evKind is what a log record says.
type evKind uint8

const (
	evLeased     evKind = iota + 1 // the run's first claim: machine
	evReacquired                   // a claim again: to
	evFenced                       // machine, deadline
	evRenewLate                    // a renewal after the deadline: the hold was never lost
	evResumed                      // machine
	evReleased                     // a clean stop
	evOffset                       // the nemesis clock hook's offset now
	evServing                      // the run serves
)

// logEvent is one record of a server's log that matters here.
type logEvent struct {
	at time.Time // the record's time: the wall clock, when it was logged
	// drift is how far the wall clock had moved beyond the run's issuing
	// clock when the record came: core's system clock reads the wall clock
	// once, at the start, and then follows the monotonic clock, so a step
	// of the machine's wall clock since puts the two apart. The issuing
	// clock at the record is at - drift (+ the hook's offset).
	drift    time.Duration
	kind     evKind
	machine  int
	deadline time.Time // evFenced: on the server's clock; zero if the record has none
	offset   time.Duration
}

// machineEvents are the messages of a server's log about its machine ID,
// by what they say; each names the machine in its "machine" field, except
// a re-acquisition, which names it in "to".
var machineEvents = map[string]evKind{
	"machineid: leased a machine ID":                                 evLeased,
	"machineid: re-acquired a lease; re-keying":                      evReacquired,
	"machineid: issuing fenced":                                      evFenced,
	"machineid: lease renewed after its deadline; it was never lost": evRenewLate,
	"machineid: issuing resumed":                                     evResumed,
	"machineid: released the lease":                                  evReleased,
	"serving":                                                        evServing,
}

// parseEvent reads one JSON log line of vesta serve; ok is false for a
// record that says nothing here.
func parseEvent(line []byte) (ev logEvent, ok bool) {
	var rec struct {
		Time     time.Time `json:"time"`
		Msg      string    `json:"msg"`
		Machine  *float64  `json:"machine"`
		To       *float64  `json:"to"`
		Deadline string    `json:"deadline"`
	}
	if json.Unmarshal(line, &rec) != nil || rec.Time.IsZero() {
		return ev, false
	}
	ev.at = rec.Time
	num := func(p *float64) int {
		if p == nil {
			return -1
		}
		return int(*p)
	}
	if kind, ok := machineEvents[rec.Msg]; ok {
		ev.kind, ev.machine = kind, num(rec.Machine)
		switch kind {
		case evReacquired:
			ev.machine = num(rec.To)
		case evFenced:
			if d, err := time.Parse(time.RFC3339Nano, rec.Deadline); err == nil {
				ev.deadline = d
			}
		}
		return ev, true
	}
	offset, ok := strings.CutPrefix(rec.Msg, "nemesis clock: offset now ")
	if !ok {
		return ev, false
	}
	d, err := time.ParseDuration(offset)
	if err != nil {
		return ev, false
	}
	ev.kind, ev.offset = evOffset, d
	return ev, true
}

// runLog is one run (process) of a server, as its log tells.
type runLog struct {
	server string
	n      int           // the server's run number, from 1
	borrow time.Duration // its id.max_borrow
	start  time.Time
	exit   time.Time // zero while it runs
	// exitDrift is the drift (logEvent.drift) at the exit.
	exitDrift time.Duration
	code      int // the exit code
	// ended says how the nemesis ended the run ("killed", "stopped"), ""
	// when it did not.
	ended  string
	events []logEvent
}

// drift is how far the wall clock moved beyond the monotonic one from
// the run's start to now (both read by this process, on the machine the
// run shares): what a run whose clock read the wall clock at its start
// lags it by now.
func (r *runLog) drift(now time.Time) time.Duration {
	return now.Round(0).Sub(r.start.Round(0)) - now.Sub(r.start)
}

// alive says whether the run's process was alive at t.
func (r *runLog) alive(t time.Time) bool {
	return !t.Before(r.start) && (r.exit.IsZero() || t.Before(r.exit))
}

// offsetAt is the clock hook's offset at t, and offsetRange its least and
// greatest over [a, b].
func (r *runLog) offsetAt(t time.Time) time.Duration {
	var off time.Duration
	for _, e := range r.events {
		if e.kind == evOffset && !e.at.After(t) {
			off = e.offset
		}
	}
	return off
}

func (r *runLog) offsetRange(a, b time.Time) (lo, hi time.Duration) {
	lo = r.offsetAt(a)
	hi = lo
	for _, e := range r.events {
		if e.kind == evOffset && e.at.After(a) && !e.at.After(b) {
			lo, hi = min(lo, e.offset), max(hi, e.offset)
		}
	}
	return lo, hi
}

// window is a stretch of a run during which its generator may have issued
// under machine: from when it was let issue to when it was fenced, both
// in real time; deadline, when set, is the fence's deadline on the
// server's clock.
type window struct {
	machine int
	open    time.Time
	close   time.Time // zero: open at the end of the log
	// openDrift and closeDrift are the drifts at open and close.
	openDrift, closeDrift time.Duration
	deadline              time.Time
	borrow                time.Duration
	run                   *runLog
	openLate              bool // open is the resume's own record (no earlier one to bound it)
	closeSeen             bool // closed by a fence, a release or the exit
}

// windows are the run's windows, in order.
func (r *runLog) windows() []window {
	var out []window
	cur := window{run: r, borrow: r.borrow}
	issuing := false
	var marker logEvent // the record that comes before a resume: a claim, a late renewal
	end := func(at time.Time, drift time.Duration, deadline time.Time) {
		if issuing {
			cur.close, cur.closeDrift, cur.deadline, cur.closeSeen = at, drift, deadline, true
			out = append(out, cur)
			issuing = false
		}
	}
	for _, e := range r.events {
		switch e.kind {
		case evLeased:
			if !issuing {
				cur = window{run: r, borrow: r.borrow, machine: e.machine, open: e.at, openDrift: e.drift}
				issuing = true
			}
		case evFenced:
			end(e.at, e.drift, e.deadline)
			marker = logEvent{}
		case evReacquired, evRenewLate:
			marker = e
		case evResumed:
			if issuing {
				continue
			}
			cur = window{run: r, borrow: r.borrow, machine: e.machine, open: marker.at, openDrift: marker.drift}
			if marker.at.IsZero() {
				// Unfenced just before this record was written: a second
				// earlier is surely before.
				cur.open, cur.openDrift, cur.openLate = e.at.Add(-time.Second), e.drift, true
			}
			issuing = true
		case evReleased:
			end(e.at, e.drift, time.Time{})
		}
	}
	if issuing && !r.exit.IsZero() {
		end(r.exit, r.exitDrift, time.Time{})
	}
	if issuing {
		out = append(out, cur) // open at the end
	}
	return out
}

// span is a window on the server's issuing clock (the wall clock at its
// start, then the monotonic one, plus the hook's offset), in nanoseconds
// since 1970: no
// ID of the window has a time field before lo, nor after hi plus the
// borrow (a generator issues at most max_borrow ahead of its clock).
type span struct {
	lo, hi int64 // hi: math.MaxInt64 for a window still open
	borrow time.Duration
	w      *window
}

func (w *window) span() span {
	closeAt := w.close
	if closeAt.IsZero() {
		closeAt = time.Now().Add(24 * time.Hour)
	}
	offLo, offHi := w.run.offsetRange(w.open, closeAt)
	s := span{lo: w.open.Add(offLo - w.openDrift).UnixNano(), hi: math.MaxInt64, borrow: w.borrow, w: w}
	if !w.close.IsZero() {
		s.hi = w.close.Add(offHi - w.closeDrift).UnixNano()
		if !w.deadline.IsZero() {
			s.hi = min(s.hi, w.deadline.UnixNano())
		}
	}
	return s
}

// idTime decodes the time field of a sorted-layout ID (the fleet's) and
// its unit: whole seconds (max-peak) or milliseconds (min-granularity)
// since the layout's epoch.
func idTime(v uint64) (units int64, unit time.Duration) {
	if v>>62&1 == 1 {
		return int64(v >> 22 & (1<<40 - 1)), time.Millisecond
	}
	return int64(v >> 32 & (1<<30 - 1)), time.Second
}

// sortedEpoch is the sorted layout's epoch.
var sortedEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// unitOf is the unit a clock reading (ns since 1970) falls in.
func unitOf(ns int64, unit time.Duration) int64 {
	d := ns - sortedEpoch
	if d < 0 {
		return -1 - (-d-1)/int64(unit)
	}
	return d / int64(unit)
}

// allows says whether a generator running in s could have issued an ID
// of time field u: u from the unit of lo to the unit of hi plus the
// borrow in whole units (core never issues a unit past now + borrow, nor
// one before now).
func (s span) allows(u int64, unit time.Duration) bool {
	if u < unitOf(s.lo, unit) {
		return false
	}
	if s.hi == math.MaxInt64 {
		return true
	}
	return u <= unitOf(s.hi, unit)+int64(s.borrow/unit)
}

// spans is the windows of some runs for one machine ID, each checked on
// its own (their borrows may differ).
type spans []span

// unitSet is the union of spans' allowed time fields in one unit, as
// sorted disjoint intervals: a check is a binary search, so that every ID
// of a long run is checked in time.
type unitSet struct{ lo, hi []int64 }

func (ss spans) units(unit time.Duration) unitSet {
	type iv struct{ lo, hi int64 }
	var ivs []iv
	for _, s := range ss {
		v := iv{lo: unitOf(s.lo, unit), hi: math.MaxInt64}
		if s.hi != math.MaxInt64 {
			v.hi = unitOf(s.hi, unit) + int64(s.borrow/unit)
		}
		if v.hi >= v.lo {
			ivs = append(ivs, v)
		}
	}
	slices.SortFunc(ivs, func(a, b iv) int { return cmp.Compare(a.lo, b.lo) })
	var us unitSet
	for _, v := range ivs {
		if n := len(us.hi); n > 0 && v.lo <= us.hi[n-1] {
			us.hi[n-1] = max(us.hi[n-1], v.hi)
			continue
		}
		us.lo, us.hi = append(us.lo, v.lo), append(us.hi, v.hi)
	}
	return us
}

func (us unitSet) contains(u int64) bool {
	i := sort.Search(len(us.lo), func(i int) bool { return us.hi[i] >= u })
	return i < len(us.lo) && us.lo[i] <= u
}

// claim is a run taking a machine ID.
type claim struct {
	at      time.Time
	machine int
	run     *runLog
}

// claims are every claim of the runs, in time order.
func claims(runs []*runLog) []claim {
	var out []claim
	for _, r := range runs {
		for _, e := range r.events {
			if e.kind == evLeased || e.kind == evReacquired {
				out = append(out, claim{at: e.at, machine: e.machine, run: r})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// handover is a claim of a machine ID whose previous holder's process
// was still alive, and still on that ID (it had claimed none since).
type handover struct {
	claim
	from *runLog
}

func handovers(cs []claim) []handover {
	var out []handover
	last := map[int]claim{}     // per machine ID, its latest claim
	latest := map[*runLog]int{} // per run, the machine ID it claimed last
	for _, c := range cs {
		if p, ok := last[c.machine]; ok && p.run != c.run && p.run.alive(c.at) && latest[p.run] == c.machine {
			out = append(out, handover{claim: c, from: p.run})
		}
		last[c.machine] = c
		latest[c.run] = c.machine
	}
	return out
}

// spansOf gathers the windows of runs by machine ID.
func spansOf(runs []*runLog) map[int]spans {
	out := map[int]spans{}
	for _, r := range runs {
		ws := r.windows()
		for i := range ws {
			w := &ws[i]
			out[w.machine] = append(out[w.machine], w.span())
		}
	}
	for m := range out {
		slices.SortFunc(out[m], func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	}
	return out
}
