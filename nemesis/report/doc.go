// Package report turns a nemesis run into what a person reads: a Markdown
// report (totals, repeats, availability, and per fault the window callers
// saw it and the time to recover) and an SVG picture of calls per second
// and errors over time with the faults marked.
package report
