package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vesta-go/vesta/nemesis/ledger"
	"github.com/vesta-go/vesta/nemesis/report"
)

// checker looks at every ledger entry once (ledger.Options.Visit): it
// sorts the values recorded twice into real repeats and those of a case
// not survived by design, and checks every ID of a leased machine ID
// against the windows its issuer's log allows (holds.go).
type checker struct {
	led *ledger.Ledger
	// via names, per source, the one server it called; absent: a caller
	// over several servers, whose IDs any server of the fleet may have
	// issued.
	via map[ledger.Source]string
	// spans are the windows of every server by machine ID, and all by
	// machine ID across servers; leased are the machine IDs leases hand
	// out (only those have windows).
	spans  map[string]map[int]spans
	all    map[int]spans
	leased map[int]bool
	cache  map[setKey]unitSet
	// guard: the old-guard case ran, so repeats of its machine ID are
	// its; lost: per tag, numbers a lost commit may hand out again.
	guard     bool
	lost      map[string][][2]int64
	guardID   int
	maxListed int

	group []ledger.Entry

	idRepeats, numRepeats int64
	repeats               []report.Repeat
	// bySources counts the real repeats by who received them (their
	// sources' names, sorted, joined): which servers issued them.
	bySources      map[string]int64
	expected       map[string]*report.NotSurvived
	checked, after int64
	afterList      []string
}

type setKey struct {
	server  string // "" all
	machine int
	unit    time.Duration
}

func newChecker(led *ledger.Ledger, runs []*runLog, via map[ledger.Source]string, leased map[int]bool) *checker {
	c := &checker{led: led, via: via, leased: leased, spans: map[string]map[int]spans{}, all: map[int]spans{}, cache: map[setKey]unitSet{},
		lost: map[string][][2]int64{}, expected: map[string]*report.NotSurvived{}, guardID: -1, maxListed: 100, bySources: map[string]int64{}}
	byServer := map[string][]*runLog{}
	for _, r := range runs {
		byServer[r.server] = append(byServer[r.server], r)
	}
	for name, rs := range byServer {
		c.spans[name] = spansOf(rs)
		for m, ss := range c.spans[name] {
			c.all[m] = append(c.all[m], ss...)
		}
	}
	for _, ss := range c.all {
		slices.SortFunc(ss, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	}
	return c
}

// visit is ledger.Options.Visit: entries come sorted by space and value,
// so that the entries of one value come one after the other.
func (c *checker) visit(e ledger.Entry) {
	if n := len(c.group); n > 0 && (c.group[0].Space != e.Space || c.group[0].Value != e.Value) {
		c.flush()
	}
	c.group = append(c.group, e)
	if e.Space == ledger.IDs {
		c.checkFence(e)
	}
}

// flush ends a value's entries.
func (c *checker) flush() {
	g := c.group
	c.group = c.group[:0]
	if len(g) < 2 {
		return
	}
	rp := report.Repeat{Space: c.led.SpaceName(g[0].Space), Value: fmt.Sprint(g[0].Value)}
	for _, e := range g {
		rp.Entries = append(rp.Entries, fmt.Sprintf("%s at %s", c.led.SourceName(e.Source), e.At.UTC().Format(time.RFC3339Nano)))
	}
	if class := c.classOf(g[0]); class != "" {
		ns := c.expected[class]
		if ns == nil {
			ns = &report.NotSurvived{Class: class}
			c.expected[class] = ns
		}
		ns.Repeats++
		if len(ns.Examples) < 5 {
			ns.Examples = append(ns.Examples, rp)
		}
		return
	}
	if g[0].Space == ledger.IDs {
		c.idRepeats++
	} else {
		c.numRepeats++
	}
	var who []string
	for _, e := range g {
		if n := c.led.SourceName(e.Source); !slices.Contains(who, n) {
			who = append(who, n)
		}
	}
	slices.Sort(who)
	c.bySources[strings.Join(who, " + ")]++
	if len(c.repeats) < c.maxListed {
		c.repeats = append(c.repeats, rp)
	}
}

// classOf names the case not survived by design a repeated value comes
// from, or "".
func (c *checker) classOf(e ledger.Entry) string {
	if e.Space == ledger.IDs {
		if c.guard && machineOf(e.Value) == c.guardID {
			return classOldGuard
		}
		return ""
	}
	for _, r := range c.lost[c.led.SpaceName(e.Space)] {
		if int64(e.Value) >= r[0] && int64(e.Value) < r[1] {
			return classLostCommit
		}
	}
	return ""
}

// machineOf is the machine ID of a sorted-layout ID.
func machineOf(v uint64) int {
	seqBits := uint(20)
	if v>>62&1 == 1 {
		seqBits = 10
	}
	return int(v >> seqBits & 1023)
}

// checkFence checks an ID of a leased machine ID against the windows of
// the server its caller called (every server's, for a caller over
// several).
func (c *checker) checkFence(e ledger.Entry) {
	m := machineOf(e.Value)
	if !c.leased[m] {
		return
	}
	c.checked++
	u, unit := idTime(e.Value)
	server := c.via[e.Source]
	k := setKey{server: server, machine: m, unit: unit}
	us, ok := c.cache[k]
	if !ok {
		ss := c.all[m]
		if server != "" {
			ss = c.spans[server][m]
		}
		us = ss.units(unit)
		c.cache[k] = us
	}
	if us.contains(u) {
		return
	}
	c.after++
	if len(c.afterList) < 20 {
		c.afterList = append(c.afterList, c.explain(e, server, m, u, unit))
	}
}

// explain says of an ID after a fence what it was and which windows of
// its issuer come nearest.
func (c *checker) explain(e ledger.Entry, server string, m int, u int64, unit time.Duration) string {
	at := time.Unix(0, sortedEpoch+u*int64(unit)).UTC()
	who := "any server"
	ss := c.all[m]
	if server != "" {
		who, ss = server, c.spans[server][m]
	}
	var near []string
	for _, s := range ss {
		hi := "open"
		if s.w.closeSeen {
			hi = time.Unix(0, s.hi).UTC().Format("15:04:05.000")
			if !s.w.deadline.IsZero() {
				hi += " (fence deadline)"
			}
		}
		near = append(near, fmt.Sprintf("%s run %d %s-%s +%v", s.w.run.server, s.w.run.n, time.Unix(0, s.lo).UTC().Format("15:04:05.000"), hi, s.borrow))
	}
	if len(near) > 6 {
		// The windows around the ID's time.
		i, _ := slices.BinarySearchFunc(ss, at.UnixNano(), func(s span, t int64) int { return cmp.Compare(s.lo, t) })
		lo, hi := max(0, i-3), min(len(near), i+3)
		near = near[lo:hi]
	}
	return fmt.Sprintf("ID %d of machine %d (time field %s), received by %s at %s: no window of %s's holds of machine %d allows it; nearest: %s",
		e.Value, m, at.Format("15:04:05.000"), c.led.SourceName(e.Source), e.At.UTC().Format("15:04:05.000"), who, m, strings.Join(near, "; "))
}

// sourceNotes say who received the real repeats, the most common first.
func (c *checker) sourceNotes() []string {
	ks := slices.Collect(maps.Keys(c.bySources))
	slices.SortFunc(ks, func(a, b string) int { return cmp.Or(cmp.Compare(c.bySources[b], c.bySources[a]), cmp.Compare(a, b)) })
	var out []string
	for i, k := range ks {
		if i == 20 {
			out = append(out, fmt.Sprintf("repeats received by %d more sets of callers", len(ks)-i))
			break
		}
		out = append(out, fmt.Sprintf("%d repeats received by %s", c.bySources[k], k))
	}
	return out
}

// notSurvived are the classes, with their faults counted.
func (c *checker) notSurvived(faults map[string]int) []report.NotSurvived {
	var out []report.NotSurvived
	for _, class := range []string{classOldGuard, classLostCommit} {
		n := faults[class]
		ns := c.expected[class]
		if n == 0 && ns == nil {
			continue
		}
		if ns == nil {
			ns = &report.NotSurvived{Class: class}
		}
		ns.Faults = n
		out = append(out, *ns)
	}
	return out
}
