package main

import (
	"fmt"
	"io"
	"strings"
)

// row is one line of a table: a measure of today's tree, of the revision,
// and of an anchor (key prefixes: the tree's key or the anchor's is
// appended), with the goal today ÷ anchor must meet.
type row struct {
	what    string
	unit    string
	key     string // prefix of today's and the revision's keys
	anchor  string // the anchor's full key; "" for none
	name    string // the anchor's name
	goal    string // "<= 0.35", ">= 3", or ""
	revGoal string // the goal of today ÷ revision, or ""
}

func printTables(w io.Writer, o options, res results) {
	rev := o.rev
	for _, g := range o.only {
		var rows []row
		var title, note string
		switch g {
		case "embedded":
			title = "Embedded generator: ns per ID (Go benchmarks, tools/peerbench)"
			note = "bwmarrin/snowflake with 20 step bits and sonyflake with 21 sequence bits, vesta with a 24 h max_borrow, so that no ceiling is reached; GOMAXPROCS goroutines in the parallel rows; the floors are a loop appending 1000 uint64 to a new slice each time (as NextIDs(1000) returns one) or to a slice it reuses (as AppendIDs into a reused slice)."
			rows = []row{
				{"NextID, one goroutine", "ns", "emb/Cost/serial/vesta/", "emb/Cost/serial/bwmarrin/today", "bwmarrin", "<= 0.35", ""},
				{"NextID, GOMAXPROCS goroutines", "ns", "emb/Cost/parallel/vesta/", "emb/Cost/parallel/bwmarrin/today", "bwmarrin", "<= 0.5", ""},
				{"NextID, one goroutine", "ns", "emb/Cost/serial/vesta/", "emb/Cost/serial/sonyflake/today", "sonyflake", "", ""},
				{"NextID, GOMAXPROCS goroutines", "ns", "emb/Cost/parallel/vesta/", "emb/Cost/parallel/sonyflake/today", "sonyflake", "", ""},
				{"NextIDs(1000), per ID", "ns", "emb/Batch/vesta/", "emb/Batch/fill-new/today", "fill a new slice", "<= 2", ""},
				{"AppendIDs(1000) into a reused slice, per ID", "ns", "emb/Batch/vesta-append/", "emb/Batch/fill/today", "fill a reused slice", "<= 2", ""},
				{"NextIDs(1000), per ID", "ns", "emb/Batch/vesta/", "emb/Batch/fill/today", "fill a reused slice", "<= 2", ""},
			}
		case "central":
			c := fmt.Sprint(o.callers)
			title = "Client to central server, single-ID calls (vesta-bench client; separate processes)"
			note = "Package client's defaults (2 pipelined connections, no fallback) against each tree's 'vesta serve' (max_borrow 24 h, as below); Redis INCR on Debian's redis-server through rueidis (one client, auto-pipelining) and through go-redis's pool (go-redis's defaults: 10 connections per CPU, no pipelining). Closed loop; calls/s and p99 from vesta-bench --json."
			rows = []row{
				{c + " callers, calls/s", "calls/s", "central/" + c + "/calls/", "central/" + c + "/calls/rueidis", "rueidis", ">= 3", ""},
				{c + " callers, p99", "µs", "central/" + c + "/p99/", "central/" + c + "/p99/rueidis", "rueidis", "<= 0.5", ""},
				{c + " callers, calls/s", "calls/s", "central/" + c + "/calls/", "central/" + c + "/calls/go-redis", "go-redis pool", "", ""},
				{c + " callers, p99", "µs", "central/" + c + "/p99/", "central/" + c + "/p99/go-redis", "go-redis pool", "", ""},
				{"1 caller, calls/s", "calls/s", "central/1/calls/", "central/1/calls/rueidis", "rueidis", "", ">= 0.95"},
				{"1 caller, p99", "µs", "central/1/p99/", "central/1/p99/rueidis", "rueidis", "", "<= 1.05"},
			}
		case "rest":
			title = "REST: requests/s (wrk -t2 -c32; separate processes)"
			note = "Each tree's 'vesta serve' with its defaults (the Host allow-list, the cross-site checks, no-store, the listener policy, metrics) but a max_borrow of 24 h, so that /v1/ids?count=100 measures the server's cost, not the sequence's ceiling (1,048,576 IDs/s: about 10k such requests/s); the anchor is vesta-bench's trivial echo handlers (echo v4 on net/http with the REST server's timeouts), its own process, answering each route as the REST server does (the same text and JSON, 100 values for count=100) with a counter's next values, from 2^58 so that they are as long as real IDs (18 digits)."
			for _, route := range restRoutes {
				rows = append(rows, row{"GET " + route, "req/s", "rest/" + route + "/", "rest/" + route + "/baseline", "echo handler", ">= 0.95", ""})
			}
		}
		fmt.Fprintf(w, "\n### %s\n\n%s\n\n", title, note)
		fmt.Fprintf(w, "| measure | today | %s | anchor | today ÷ anchor | goal | today ÷ %s |\n|---|---|---|---|---|---|---|\n", rev, rev)
		for _, r := range rows {
			today, old, anchor := res[r.key+"today"], res[r.key+"rev"], res[r.anchor]
			fmt.Fprintf(w, "| %s | %s | %s | %s %s | %s | %s | %s |\n", r.what, span(today, r.unit), span(old, r.unit),
				r.name, span(anchor, r.unit), span(ratios(today, anchor), ""), verdict(ratios(today, anchor), r.goal),
				spanGoal(ratios(today, old), r.revGoal))
		}
	}
}

// ratios is a[i] / b[i] for each round.
func ratios(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// span is min–max of xs, formatted for its unit.
func span(xs []float64, unit string) string {
	if len(xs) == 0 {
		return "–"
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	f := func(x float64) string {
		switch {
		case unit == "":
			return fmt.Sprintf("%.2f", x)
		case x >= 10000:
			return fmt.Sprintf("%.1fk", x/1000)
		case x >= 100:
			return fmt.Sprintf("%.0f", x)
		default:
			return fmt.Sprintf("%.2f", x)
		}
	}
	if f(lo) == f(hi) {
		return f(lo)
	}
	return f(lo) + "–" + f(hi)
}

// meets reports whether x meets goal ("<= 0.35", ">= 3").
func meets(x float64, goal string) bool {
	op, v, _ := strings.Cut(goal, " ")
	var g float64
	fmt.Sscan(v, &g)
	if op == "<=" {
		return x <= g
	}
	return x >= g
}

// verdict says whether every round's ratio meets goal.
func verdict(xs []float64, goal string) string {
	if goal == "" {
		return "–"
	}
	if len(xs) == 0 {
		return goal + ": no data"
	}
	n := 0
	for _, x := range xs {
		if meets(x, goal) {
			n++
		}
	}
	switch n {
	case len(xs):
		return goal + ": met"
	case 0:
		return goal + ": **not met**"
	}
	return fmt.Sprintf("%s: met in %d of %d rounds", goal, n, len(xs))
}

// spanGoal is span, with the verdict of goal when there is one.
func spanGoal(xs []float64, goal string) string {
	if goal == "" {
		return span(xs, "")
	}
	return span(xs, "") + " (" + verdict(xs, goal) + ")"
}
