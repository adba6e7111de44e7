// Package report turns a nemesis run into what a person reads: a Markdown
// report (totals, repeats, availability, and per fault the window callers
// saw it and the time to recover) and an SVG picture of calls per second
// and errors over time with the faults marked.
//
// Analyze computes the figures both use; FaultStats defines the window
// and the recovery exactly. The nemesis requires every fault to recover
// by itself, so a fault that does not, like a value issued twice, is
// said at the top of the report. testdata holds a sample report and its
// pictures, made by TestSample with -update.
package report
