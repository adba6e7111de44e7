package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The picture's layout, in SVG user units (pixels at 100%).
const (
	svgW, svgH = 1200, 500
	plotX0     = 70
	plotX1     = svgW - 20
	plotY0     = 62
	plotY1     = svgH - 45
)

// Line colours of the caller kinds, by name order; red is kept for errors.
var palette = []string{"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#e377c2", "#bcbd22", "#7f7f7f"}

const errColour = "#d62728"

// SVG writes the picture of one run: calls answered per second, one line
// per caller kind group (see Group), errors per second of all kinds in red, and each fault
// as a shaded span from its start to its heal (a line for an instant
// one) labelled with its number in the report and its kind, and each
// handover as a triangle on the time axis. Lines are averaged over groups
// of buckets when there are more buckets than pixels. Every mark has a
// class ("kind", "errors", "fault", "handover") and a <title> a viewer
// shows on hover.
func SVG(w io.Writer, r Run) error {
	g := groupGrid(newGrid(r))
	a := Analyze(r)
	// One point per pixel at most, so a long run stays a small file.
	per := max(1, (g.n+plotX1-plotX0-1)/(plotX1-plotX0))
	points := (g.n + per - 1) / per
	rate := func(s []int64, p int) float64 {
		var sum int64
		lo, hi := p*per, min(g.n, (p+1)*per)
		for i := lo; i < hi; i++ {
			sum += s[i]
		}
		return float64(sum) / (float64(hi-lo) * g.step.Seconds())
	}
	errs := make([]int64, g.n)
	for _, k := range g.kinds {
		for i, e := range g.err[k] {
			errs[i] += e
		}
	}
	ymax := 0.0
	for p := range points {
		for _, k := range g.kinds {
			ymax = max(ymax, rate(g.ok[k], p))
		}
		ymax = max(ymax, rate(errs, p))
	}
	yStep := niceStep(ymax, 6)
	ymax = math.Max(yStep, math.Ceil(ymax/yStep)*yStep)
	span := a.Duration.Seconds()
	if span <= 0 {
		span = 1
	}
	xOf := func(sec float64) float64 { return plotX0 + (plotX1-plotX0)*math.Min(math.Max(sec/span, 0), 1) }
	yOf := func(v float64) float64 { return plotY1 - (plotY1-plotY0)*v/ymax }
	sinceStart := func(t time.Time) float64 { return t.Sub(r.Start).Seconds() }

	var b bytes.Buffer
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	f(`<rect width="%d" height="%d" fill="#fff"/>`+"\n", svgW, svgH)
	f(`<text x="%d" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", plotX0,
		esc(fmt.Sprintf("Run %s, seed %d: calls answered per second", r.Name, r.Seed)))

	// Faults first, so the lines draw over their shading.
	for i, fs := range a.Faults {
		x0, x1 := xOf(sinceStart(fs.Fault.Start)), xOf(sinceStart(fs.Fault.End))
		tip := esc(faultTip(i, fs))
		if x1-x0 < 1 {
			f(`<line class="fault" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555" stroke-dasharray="4 3"><title>%s</title></line>`+"\n", x0, plotY0, x0, plotY1, tip)
		} else {
			f(`<rect class="fault" x="%.1f" y="%d" width="%.1f" height="%d" fill="#777" fill-opacity="0.18"><title>%s</title></rect>`+"\n", x0, plotY0, x1-x0, plotY1-plotY0, tip)
		}
	}

	// Axes and grid.
	f(`<g stroke="#ddd">` + "\n")
	yTicks := int(math.Round(ymax / yStep))
	for i := 0; i <= yTicks; i++ {
		v := float64(i) * yStep
		f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", plotX0, yOf(v), plotX1, yOf(v))
	}
	f("</g>\n")
	f(`<g font-size="11" text-anchor="end">` + "\n")
	for i := 0; i <= yTicks; i++ {
		v := float64(i) * yStep
		f(`<text x="%d" y="%.1f">%s</text>`+"\n", plotX0-6, yOf(v)+4, esc(number(v)))
	}
	f("</g>\n")
	xStep := niceStep(span, 10)
	f(`<g font-size="11" text-anchor="middle">` + "\n")
	for i := 0; float64(i)*xStep <= span*(1+1e-9); i++ {
		s := float64(i) * xStep
		f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000"/>`, xOf(s), plotY1, xOf(s), plotY1+5)
		f(`<text x="%.1f" y="%d">%s</text>`+"\n", xOf(s), plotY1+18, esc(number(s)))
	}
	f("</g>\n")
	f(`<path d="M%d %d V%d H%d" fill="none" stroke="#000"/>`+"\n", plotX0, plotY0, plotY1, plotX1)
	f(`<text x="%d" y="%d" text-anchor="middle">seconds since start</text>`+"\n", (plotX0+plotX1)/2, svgH-8)
	f(`<text transform="translate(16,%d) rotate(-90)" text-anchor="middle">calls/s</text>`+"\n", (plotY0+plotY1)/2)

	// The lines.
	line := func(class, name, colour string, s []int64) {
		f(`<polyline class="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-linejoin="round" points="`, class, colour)
		for p := range points {
			mid := (float64(p*per) + float64(min(g.n, (p+1)*per)-p*per)/2) * g.step.Seconds()
			if p > 0 {
				b.WriteByte(' ')
			}
			f("%.1f,%.1f", xOf(mid), yOf(rate(s, p)))
		}
		f(`"><title>%s</title></polyline>`+"\n", esc(name))
	}
	for i, k := range g.kinds {
		line("kind", k, palette[i%len(palette)], g.ok[k])
	}
	line("errors", "errors, all kinds", errColour, errs)

	// Handovers: a triangle on the time axis each.
	for _, h := range r.Handovers {
		x := xOf(sinceStart(h.At))
		f(`<path class="handover" d="M%.1f %d l-5 -9 h10 z" fill="#000"><title>%s</title></path>`+"\n", x, plotY1, esc(handoverTip(h)))
	}

	// Fault labels last, haloed, so no line hides them.
	for i, fs := range a.Faults {
		x0 := xOf(sinceStart(fs.Fault.Start))
		colour := "#333"
		if fs.Measured && !fs.Recovered {
			colour = errColour
		}
		// Vertical, so that faults close together keep their labels apart;
		// rotated text hangs left of its baseline, hence right of the mark.
		f(`<text transform="translate(%.1f,%d) rotate(90)" font-size="10" fill="%s" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text>`+"\n", x0+13, plotY0+4, colour, esc(faultLabel(i, fs)))
	}

	// The legend, in a row above the plot.
	x := float64(plotX0)
	item := func(label string, swatch string) {
		f(`<g transform="translate(%.0f,40)">%s<text x="22" y="4">%s</text></g>`+"\n", x, swatch, esc(label))
		x += 40 + 7.5*float64(len(label))
	}
	for i, k := range g.kinds {
		item(k, fmt.Sprintf(`<line x1="0" y1="0" x2="16" y2="0" stroke="%s" stroke-width="3"/>`, palette[i%len(palette)]))
	}
	item("errors", fmt.Sprintf(`<line x1="0" y1="0" x2="16" y2="0" stroke="%s" stroke-width="3"/>`, errColour))
	item("fault (start to heal)", `<rect x="0" y="-6" width="16" height="12" fill="#777" fill-opacity="0.18" stroke="#777"/>`)
	item("instant fault", `<line x1="8" y1="-7" x2="8" y2="7" stroke="#555" stroke-dasharray="4 3"/>`)
	if len(r.Handovers) > 0 {
		item("handover", `<path d="M8 5 l-5 -9 h10 z" fill="#000"/>`)
	}
	f("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func faultLabel(i int, fs FaultStats) string {
	l := fmt.Sprintf("%d %s", i+1, fs.Fault.Kind)
	if fs.Measured && !fs.Recovered {
		l += " — did not recover"
	}
	return l
}

func faultTip(i int, fs FaultStats) string {
	parts := []string{fmt.Sprintf("%d %s", i+1, fs.Fault.Kind)}
	for _, s := range []string{fs.Fault.Target, fs.Fault.Detail} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	tip := strings.Join(parts, ", ") + fmt.Sprintf(" at %.1f s", fs.Since.Seconds())
	if fs.Measured {
		rec := "did not recover"
		if fs.Recovered {
			rec = "recovery " + dur(fs.Recovery)
		}
		tip += fmt.Sprintf("; window %s, %s", dur(fs.Window), rec)
	}
	return tip
}

// niceStep is a step of 1, 2 or 5 times a power of ten that cuts span
// into about n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// number is a tick label: short, with k and M for the large rates.
func number(v float64) string {
	v = math.Round(v*1e6) / 1e6
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// Group is the group of a caller kind: the kind without its server
// suffix ("rest-A" is in "rest", "seq-mariadb-C" in "seq-mariadb"); a
// kind of no server is its own group. The picture draws a line per
// group, so that a fleet of many servers keeps a readable legend; the
// tables list every kind.
func Group(kind string) string {
	if i := strings.LastIndexByte(kind, '-'); i > 0 && len(kind)-i == 2 && kind[i+1] >= 'A' && kind[i+1] <= 'Z' {
		return kind[:i]
	}
	return kind
}

// groupGrid sums g's kinds per group.
func groupGrid(g grid) grid {
	out := g
	out.kinds = nil
	out.ok, out.err, out.vals = map[string][]int64{}, map[string][]int64{}, map[string][]int64{}
	for _, k := range g.kinds {
		gk := Group(k)
		if _, seen := out.ok[gk]; !seen {
			out.kinds = append(out.kinds, gk)
			out.ok[gk], out.err[gk], out.vals[gk] = make([]int64, g.n), make([]int64, g.n), make([]int64, g.n)
		}
		for i := range g.n {
			out.ok[gk][i] += g.ok[k][i]
			out.err[gk][i] += g.err[k][i]
			out.vals[gk][i] += g.vals[k][i]
		}
	}
	slices.Sort(out.kinds)
	return out
}

func handoverTip(h Handover) string {
	t := fmt.Sprintf("handover of machine %d: %s to %s", h.Machine, h.From, h.To)
	if h.Fault != "" {
		t += " (" + h.Fault + ")"
	}
	return t
}
