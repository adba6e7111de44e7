package report_test

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/nemesis/report"
)

func steady(name string) report.Run {
	r := shares(10*time.Second, []string{"rest"}, func(_ string, t time.Duration) float64 {
		if t >= 5*time.Second && t < 6*time.Second {
			return 0
		}
		return 1
	})
	r.Name = name
	r.IDs = 1000
	r.Faults = []report.Fault{{Kind: "kill", Target: "server A", Start: at(5 * time.Second), End: at(5 * time.Second)}}
	return r
}

func TestMarkdown(t *testing.T) {
	repeat := steady("etcd")
	repeat.Repeats = []report.Repeat{{Space: "ids", Value: "4242424242", Entries: []string{"rest B at 12:00:01.5", "rpc A at 12:00:07.2"}}}
	repeat.Repeated = 3
	broken := steady("redis|sentinel")
	broken.Faults[0].Kind = "flushall"
	broken.Buckets = broken.Buckets[:50] // nothing answers after the fault
	pic := steady("pictured")
	pic.Picture = "pictured run.svg"
	pic.Notes = []string{"servers: 3", "store: <mariadb>"}
	fenced := steady("fenced")
	fenced.FenceChecked, fenced.AfterFence = 900, 2
	fenced.AfterFenceList = []string{"ID 1 of machine 924 from rest via A"}
	busy := steady("busy")
	busy.Handovers = []report.Handover{{At: at(2 * time.Second), Machine: 925, From: "A", To: "S1", Fault: "pause"}, {At: at(3 * time.Second), Machine: 926, From: "B", To: "S2"}}
	busy.NotSurvived = []report.NotSurvived{{Class: "older time-guard copy", Faults: 1, Repeats: 7,
		Examples: []report.Repeat{{Space: "ids", Value: "5", Entries: []string{"rest via G at 1", "rest via G at 2"}}}}}
	busy.Failed = []report.Fault{{Kind: "store-clock", Target: "redis m1", Failed: "no faketime", Start: at(4 * time.Second), End: at(4 * time.Second)}}

	tests := []struct {
		name string
		run  report.Run
		// want must appear in this order; absent must not appear.
		want, absent []string
	}{{
		name: "a repeat comes first",
		run:  repeat,
		want: []string{"**REPEATS: run etcd issued 3 values twice.**", "## Run etcd", "### Repeats", "3 values issued twice (1 listed)",
			"- ids `4242424242`", "  - rest B at 12:00:01.5", "  - rpc A at 12:00:07.2", "| run | seed |", "| etcd | 1 | 10s | 1000 | 0 | 1 | 0 | 0 | **3** | 0 | 90.00% |"},
		absent: []string{"No value issued twice", "none"},
	}, {
		name: "no recovery is loud",
		run:  broken,
		want: []string{"**DID NOT RECOVER: run redis\\|sentinel, 1 of 1 faults", "| redis\\|sentinel |", "| 1 | 5.0 | flushall |", "| 5s | **DID NOT RECOVER** |"},
	}, {
		name: "a clean run",
		run:  pic,
		want: []string{"No value issued twice; no ID issued after a fence; every fault recovered.", "| pictured | 1 |", "### Repeats\n\nnone", "![calls per second of run pictured](pictured%20run.svg)",
			"| rest | 10000 | 9000 | 1000 | 90.00% | 9000 | 900.0 |", "| all | 10000 | 9000 | 1000 | 90.00% | 9000 | 900.0 |",
			"| 1 | 5.0 | kill | server A |  | 0s | all | 1s | 1s |", "### Notes\n\n- servers: 3\n- store: &lt;mariadb&gt;\n"},
		absent: []string{"REPEATS", "DID NOT RECOVER"},
	}, {
		name: "an ID after a fence is loud",
		run:  fenced,
		want: []string{"**IDs AFTER A FENCE: run fenced, 2 IDs issued after their issuer was fenced.**", "| fenced | 1 | 10s | 1000 | 0 | 1 | 0 | 0 | 0 | **2** |",
			"### IDs after a fence", "2 of 900 IDs checked were issued after their issuer was fenced (1 listed):", "- ID 1 of machine 924 from rest via A"},
		absent: []string{"No value issued twice"},
	}, {
		name: "handovers, cases not survived and failed injections each have their place",
		run:  busy,
		want: []string{"| busy | 1 | 10s | 1000 | 0 | 1 | 2 |", "### Handovers", "2 machine IDs claimed",
			"| (no fault) | 1 |", "| pause | 1 |", "| 2.0 | 925 | A | S1 | pause |", "| 3.0 | 926 | B | S2 | — |",
			"### Not survived by design", "- not survived: older time-guard copy — 1 faults, 7 repeats, expected", "  - ids `5`: rest via G at 1; rest via G at 2",
			"### Injections that failed", "| 4.0 | store-clock | redis m1 |  | no faketime |"},
		absent: []string{"REPEATS"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := report.Markdown(&b, tt.run); err != nil {
				t.Fatal(err)
			}
			md := b.String()
			rest := md
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("missing, or out of order: %q\n%s", w, md)
				}
				rest = rest[i+len(w):]
			}
			for _, a := range tt.absent {
				if strings.Contains(md, a) {
					t.Errorf("has %q\n%s", a, md)
				}
			}
		})
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

func TestMarkdownWriteError(t *testing.T) {
	if err := report.Markdown(failWriter{}, steady("x")); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("error %v, want the writer's", err)
	}
}

func ExampleMarkdown() {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := report.Run{Name: "etcd", Seed: 7, Start: start, End: start.Add(4 * time.Second), Step: time.Second, IDs: 390}
	for i, ok := range []int64{100, 0, 90, 100} {
		r.Buckets = append(r.Buckets, report.Bucket{At: start.Add(time.Duration(i) * time.Second), Kind: "rpc", OK: ok, Err: 100 - ok, Values: ok})
	}
	r.Faults = []report.Fault{{Kind: "pause", Target: "server B", Detail: "SIGSTOP", Start: start.Add(time.Second), End: start.Add(2 * time.Second)}}
	r.Handovers = []report.Handover{{At: start.Add(1500 * time.Millisecond), Machine: 924, From: "B", To: "S1", Fault: "pause"}}
	r.FenceChecked = 390
	if err := report.Markdown(os.Stdout, r); err != nil {
		panic(err)
	}
	// Output:
	// # vesta-nemesis report
	//
	// No value issued twice; no ID issued after a fence; every fault recovered.
	//
	// ## Run etcd
	//
	// | run | seed | duration | IDs | numbers | faults | handovers | unrecovered | repeats | after a fence | availability |
	// |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
	// | etcd | 7 | 4s | 390 | 0 | 1 | 1 | 0 | 0 | 0 | 72.50% |
	//
	// ### Repeats
	//
	// none
	//
	// ### IDs after a fence
	//
	// none of 390 IDs of leased machine IDs checked against their issuers' holds and fences
	//
	// ### Handovers
	//
	// 1 machine IDs claimed by a new holder while the previous holder's process was still alive.
	//
	// | fault kind | handovers |
	// |---|--:|
	// | pause | 1 |
	//
	// | at (s) | machine | from | to | fault |
	// |--:|--:|---|---|---|
	// | 1.5 | 924 | B | S1 | pause |
	//
	// ### Callers
	//
	// | kind | calls | answered | failed | availability | values | values/s |
	// |---|--:|--:|--:|--:|--:|--:|
	// | rpc | 400 | 290 | 110 | 72.50% | 290 | 72.5 |
	// | all | 400 | 290 | 110 | 72.50% | 290 | 72.5 |
	//
	// ### Faults
	//
	// | # | at (s) | kind | target | detail | lasted | affects | window | recovery |
	// |--:|--:|---|---|---|--:|---|--:|---|
	// | 1 | 1.0 | pause | server B | SIGSTOP | 1s | all | 1s | 1s |
	//
	// Window: time, from the fault to the next one or 1m0s after its heal, in 1s buckets where an affected kind answered under 50% of its calls. Recovery: from the heal until every affected kind answered at least 99% of its calls for 1s on end.
	//
	// ### Faults by kind
	//
	// | kind | faults | window median | window max | recovery median | recovery max | overlapped | unrecovered |
	// |---|--:|--:|--:|--:|--:|--:|--:|
	// | pause | 1 | 1s | 1s | 1s | 1s | 0 | 0 |
	//
	// Overlapped: faults the next one began beside before they recovered; their recovery, counted in, is an upper bound on their own.
}
