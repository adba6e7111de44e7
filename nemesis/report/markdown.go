package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Markdown writes the report of runs: first the alarms (values issued
// twice, faults that did not recover), then per run its repeats when it
// has any, a summary table, the picture when Run.Picture names one, the
// callers' availability and throughput, the faults' figures and the
// runner's notes.
func Markdown(w io.Writer, runs ...Run) error {
	p := &printer{w: w}
	p.f("# vesta-nemesis report\n\n")
	as := make([]Analysis, len(runs))
	alarm := false
	for i, r := range runs {
		as[i] = Analyze(r)
		if n := repeated(r); n > 0 {
			p.f("**REPEATS: run %s issued %d values twice.**\n\n", cell(r.Name), n)
			alarm = true
		}
	}
	for _, r := range runs {
		if r.AfterFence > 0 {
			p.f("**IDs AFTER A FENCE: run %s, %d IDs issued after their issuer was fenced.**\n\n", cell(r.Name), r.AfterFence)
			alarm = true
		}
	}
	for i, r := range runs {
		if a := as[i]; a.Unrecovered > 0 {
			p.f("**DID NOT RECOVER: run %s, %d of %d faults; every fault must recover by itself.**\n\n", cell(r.Name), a.Unrecovered, len(a.Faults))
			alarm = true
		}
	}
	if !alarm && len(runs) > 0 {
		p.f("No value issued twice; no ID issued after a fence; every fault recovered.\n\n")
	}
	for i, r := range runs {
		writeRun(p, r, as[i])
	}
	return p.err
}

func repeated(r Run) int64 { return max(r.Repeated, int64(len(r.Repeats))) }

func writeRun(p *printer, r Run, a Analysis) {
	p.f("## Run %s\n\n", cell(r.Name))
	// A repeat is the one finding that matters most, so it comes before
	// the summary.
	if n := repeated(r); n > 0 {
		p.f("### Repeats\n\n%d values issued twice", n)
		if int64(len(r.Repeats)) < n {
			p.f(" (%d listed)", len(r.Repeats))
		}
		p.f(":\n\n")
		for _, rp := range r.Repeats {
			p.f("- %s `%s`\n", cell(rp.Space), code(rp.Value))
			for _, e := range rp.Entries {
				p.f("  - %s\n", cell(e))
			}
		}
		p.f("\n")
	}
	p.f("| run | seed | duration | IDs | numbers | faults | handovers | unrecovered | repeats | after a fence | availability |\n")
	p.f("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	p.f("| %s | %d | %s | %d | %d | %d | %d | %s | %s | %s | %s |\n\n", cell(r.Name), r.Seed, dur(a.Duration), r.IDs, r.Numbers,
		len(r.Faults), len(r.Handovers), alarmCount(int64(a.Unrecovered)), alarmCount(repeated(r)), alarmCount(r.AfterFence), pct(a.Overall.Availability()))
	if repeated(r) == 0 {
		p.f("### Repeats\n\nnone\n\n")
	}
	writeFence(p, r)
	writeHandovers(p, r)
	writeNotSurvived(p, r)
	if r.Picture != "" {
		p.f("![calls per second of run %s](%s)\n\n", cell(r.Name), strings.ReplaceAll(r.Picture, " ", "%20"))
	}
	p.f("### Callers\n\n")
	p.f("| kind | calls | answered | failed | availability | values | values/s |\n")
	p.f("|---|--:|--:|--:|--:|--:|--:|\n")
	for _, k := range append(a.Kinds, a.Overall) {
		p.f("| %s | %d | %d | %d | %s | %d | %.1f |\n", cell(k.Kind), k.OK+k.Err, k.OK, k.Err, pct(k.Availability()), k.Values, k.Throughput(a.Duration))
	}
	p.f("\n### Faults\n\n")
	if len(a.Faults) == 0 {
		p.f("none\n\n")
	} else {
		p.f("| # | at (s) | kind | target | detail | lasted | affects | window | recovery |\n")
		p.f("|--:|--:|---|---|---|--:|---|--:|---|\n")
		for i, f := range a.Faults {
			affects := "all"
			if len(f.Fault.Kinds) > 0 {
				affects = strings.Join(f.Fault.Kinds, ", ")
			}
			window, recovery := "—", "no caller of its kinds ran"
			if f.Measured {
				window = dur(f.Window)
				switch {
				case !f.Recovered:
					recovery = "**DID NOT RECOVER**"
				case f.Overlapped:
					recovery = dur(f.Recovery) + " (the next fault began first)"
				default:
					recovery = dur(f.Recovery)
				}
			}
			p.f("| %d | %.1f | %s | %s | %s | %s | %s | %s | %s |\n", i+1, f.Since.Seconds(), cell(f.Fault.Kind), cell(f.Fault.Target),
				cell(f.Fault.Detail), dur(f.Fault.End.Sub(f.Fault.Start)), cell(affects), window, recovery)
		}
		p.f("\nWindow: time, from the fault to the next one or %s after its heal, in %s buckets where an affected kind answered under %.0f%% of its calls. "+
			"Recovery: from the heal until every affected kind answered at least %.0f%% of its calls for %s on end.\n\n",
			dur(Tail), dur(a.Step), 100*DownBelow, 100*UpFrom, dur(StableFor))
		writeByKind(p, a)
	}
	if len(r.Failed) > 0 {
		p.f("### Injections that failed\n\nNot counted as faults: the damage may not have been done.\n\n")
		p.f("| at (s) | kind | target | detail | why |\n|--:|---|---|---|---|\n")
		for _, f := range r.Failed {
			p.f("| %.1f | %s | %s | %s | %s |\n", f.Start.Sub(r.Start).Seconds(), cell(f.Kind), cell(f.Target), cell(f.Detail), cell(f.Failed))
		}
		p.f("\n")
	}
	if len(r.Notes) > 0 {
		p.f("### Notes\n\n")
		for _, n := range r.Notes {
			p.f("- %s\n", cell(n))
		}
		p.f("\n")
	}
}

// writeFence says how many IDs were checked against their issuers' holds
// and fences, and lists the first issued outside them.
func writeFence(p *printer, r Run) {
	p.f("### IDs after a fence\n\n")
	switch {
	case r.AfterFence > 0:
		p.f("%d of %d IDs checked were issued after their issuer was fenced", r.AfterFence, r.FenceChecked)
		if int64(len(r.AfterFenceList)) < r.AfterFence {
			p.f(" (%d listed)", len(r.AfterFenceList))
		}
		p.f(":\n\n")
		for _, e := range r.AfterFenceList {
			p.f("- %s\n", cell(e))
		}
		p.f("\n")
	case r.FenceChecked > 0:
		p.f("none of %d IDs of leased machine IDs checked against their issuers' holds and fences\n\n", r.FenceChecked)
	default:
		p.f("no ID of a leased machine ID to check\n\n")
	}
}

// writeHandovers counts the handovers per fault kind and lists them.
func writeHandovers(p *printer, r Run) {
	p.f("### Handovers\n\n")
	if len(r.Handovers) == 0 {
		p.f("no machine ID changed hands while its holder still ran\n\n")
		return
	}
	by := map[string]int{}
	for _, h := range r.Handovers {
		by[cmp.Or(h.Fault, "(no fault)")]++
	}
	kinds := slices.Sorted(maps.Keys(by))
	p.f("%d machine IDs claimed by a new holder while the previous holder's process was still alive.\n\n", len(r.Handovers))
	p.f("| fault kind | handovers |\n|---|--:|\n")
	for _, k := range kinds {
		p.f("| %s | %d |\n", cell(k), by[k])
	}
	p.f("\n| at (s) | machine | from | to | fault |\n|--:|--:|---|---|---|\n")
	for _, h := range r.Handovers {
		p.f("| %.1f | %d | %s | %s | %s |\n", h.At.Sub(r.Start).Seconds(), h.Machine, cell(h.From), cell(h.To), cell(cmp.Or(h.Fault, "—")))
	}
	p.f("\n")
}

// writeNotSurvived lists the repeats of cases not survived by design.
func writeNotSurvived(p *printer, r Run) {
	if len(r.NotSurvived) == 0 {
		return
	}
	p.f("### Not survived by design\n\nCases vesta does not survive by design, run to show what they cost; their repeats are expected and not counted above.\n\n")
	for _, ns := range r.NotSurvived {
		p.f("- not survived: %s — %d faults, %d repeats, expected\n", cell(ns.Class), ns.Faults, ns.Repeats)
		for _, rp := range ns.Examples {
			p.f("  - %s `%s`: %s\n", cell(rp.Space), code(rp.Value), cell(strings.Join(rp.Entries, "; ")))
		}
	}
	p.f("\n")
}

// writeByKind sums the faults up per kind: how many, and the median and
// largest window and recovery of those measured.
func writeByKind(p *printer, a Analysis) {
	type agg struct {
		n, overlapped, unrecovered int
		windows, recoveries        []time.Duration
	}
	var order []string
	by := map[string]*agg{}
	for _, f := range a.Faults {
		g := by[f.Fault.Kind]
		if g == nil {
			g = &agg{}
			by[f.Fault.Kind] = g
			order = append(order, f.Fault.Kind)
		}
		g.n++
		if !f.Measured {
			continue
		}
		g.windows = append(g.windows, f.Window)
		if !f.Recovered {
			g.unrecovered++
			continue
		}
		if f.Overlapped {
			g.overlapped++
		}
		g.recoveries = append(g.recoveries, f.Recovery)
	}
	slices.Sort(order)
	p.f("### Faults by kind\n\n")
	p.f("| kind | faults | window median | window max | recovery median | recovery max | overlapped | unrecovered |\n")
	p.f("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, k := range order {
		g := by[k]
		p.f("| %s | %d | %s | %s | %s | %s | %d | %s |\n", cell(k), g.n, median(g.windows), largest(g.windows),
			median(g.recoveries), largest(g.recoveries), g.overlapped, alarmCount(int64(g.unrecovered)))
	}
	p.f("\nOverlapped: faults the next one began beside before they recovered; their recovery, counted in, is an upper bound on their own.\n\n")
}

func median(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return dur(s[len(s)/2])
}

func largest(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	return dur(slices.Max(ds))
}

// printer keeps the first write error, so the report reads as prose.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// cell makes s safe inside a table cell or a list item: one line, no
// column break, no HTML.
var cellEscaper = strings.NewReplacer("|", `\|`, "\r", " ", "\n", " ", "<", "&lt;", ">", "&gt;", "&", "&amp;")

func cell(s string) string { return cellEscaper.Replace(s) }

// code makes s safe inside a code span.
func code(s string) string { return strings.NewReplacer("`", "'", "\n", " ", "|", `\|`).Replace(s) }

func alarmCount(n int64) string {
	if n > 0 {
		return fmt.Sprintf("**%d**", n)
	}
	return "0"
}

// pct rounds down, so that only a run without a single failure shows 100%.
func pct(f float64) string {
	if math.IsNaN(f) {
		return "—"
	}
	// The epsilon undoes float error (0.95*1e4 is 9499.999...).
	v := math.Floor(f*1e4+1e-6) / 100
	if f < 1 {
		v = min(v, 99.99)
	}
	return fmt.Sprintf("%.2f%%", v)
}

func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
