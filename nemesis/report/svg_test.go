package report_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/nemesis/report"
)

var update = flag.Bool("update", false, "rewrite the sample report under testdata")

// marks parses svg as XML, every token, and counts the elements of each
// class.
func marks(t *testing.T, svg []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	n := map[string]int{}
	root := true
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root && (se.Name.Local != "svg" || se.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root %v, want svg", se.Name)
			}
			root = false
			n[se.Name.Local]++
			for _, a := range se.Attr {
				if a.Name.Local == "class" {
					n["."+a.Value]++
				}
			}
		}
	}
	return n
}

func TestSVG(t *testing.T) {
	kinds := []string{"client", "rest", "rpc"}
	r := shares(30*time.Second, kinds, func(k string, t time.Duration) float64 {
		if k == "rpc" && t >= 10*time.Second && t < 12*time.Second {
			return 0
		}
		return 1
	})
	r.Name = `a <run> & "more"`
	r.Faults = []report.Fault{
		{Kind: "kill", Target: "server <A>", Start: at(10 * time.Second), End: at(10 * time.Second)},
		{Kind: "pause", Target: "server B & C", Start: at(15 * time.Second), End: at(18 * time.Second)},
		{Kind: "partition", Detail: `"etcd" from all`, Start: at(22 * time.Second), End: at(25 * time.Second)},
	}
	r.Handovers = []report.Handover{{At: at(16 * time.Second), Machine: 925, From: "B (run 1)", To: "S1 <run 4>", Fault: "pause"},
		{At: at(23 * time.Second), Machine: 924, From: "A (run 1)", To: "S2 (run 2)"}}
	tests := []struct {
		name                             string
		run                              report.Run
		faults, kinds, errors, handovers int
	}{
		{"a run", r, 3, 3, 1, 2},
		{"an empty run", report.Run{Name: "empty", Start: t0, End: at(time.Minute), Step: time.Second}, 0, 0, 1, 0},
		{"no step nor end", report.Run{Name: "bare", Start: t0, Buckets: []report.Bucket{{At: at(2 * time.Second), Kind: "rest", OK: 5}}}, 0, 1, 1, 0},
		{"more buckets than pixels", shares(10*time.Minute, kinds, func(string, time.Duration) float64 { return 0.5 }), 0, 3, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := report.SVG(&b, tt.run); err != nil {
				t.Fatal(err)
			}
			n := marks(t, b.Bytes())
			if n[".fault"] != tt.faults || n[".kind"] != tt.kinds || n[".errors"] != tt.errors || n[".handover"] != tt.handovers {
				t.Errorf("%d faults, %d kinds, %d error lines, %d handovers; want %d, %d, %d, %d", n[".fault"], n[".kind"], n[".errors"], n[".handover"],
					tt.faults, tt.kinds, tt.errors, tt.handovers)
			}
			if n["script"] > 0 || n["image"] > 0 || n["style"] > 0 || bytes.Contains(b.Bytes(), []byte("href")) {
				t.Error("not self-contained")
			}
			// A line has at most a point per pixel of the plot's width.
			if strings.Count(b.String(), ",") > 4*1200 {
				t.Errorf("%d bytes: too many points", b.Len())
			}
		})
	}
}

func TestSVGWriteError(t *testing.T) {
	if err := report.SVG(failWriter{}, steady("x")); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("error %v, want the writer's", err)
	}
}

// sample is a made-up run that looks like a real one: six caller kinds,
// 100 ms buckets, noise, and faults doing what such faults do.
func sample(name string, seed int64, sabotage bool) report.Run {
	const step = 100 * time.Millisecond
	dur := 3 * time.Minute
	rnd := rand.New(rand.NewPCG(uint64(seed), 1))
	rates := map[string]float64{"client": 2000, "rest": 900, "rpc": 1500, "embedded": 3000, "seq-mariadb": 300, "seq-redis": 600}
	kinds := []string{"client", "embedded", "rest", "rpc", "seq-mariadb", "seq-redis"}
	sec := func(s float64) time.Time { return at(time.Duration(s * float64(time.Second))) }
	r := report.Run{Name: name, Seed: seed, Start: t0, End: at(dur), Step: step, Picture: name + ".svg",
		Notes: []string{"3 vesta serve, machine IDs leased from " + name, "segment stores: MariaDB, Redis"}}
	servers := []string{"client", "rest", "rpc"}
	r.Faults = []report.Fault{
		{Kind: "kill", Target: "server A", Detail: "kill -9, restarted at once", Start: sec(20), End: sec(20), Kinds: servers},
		{Kind: "pause", Target: "server B", Detail: "SIGSTOP, SIGCONT 8 s later", Start: sec(40), End: sec(48), Kinds: servers},
		{Kind: "partition", Target: "server C", Detail: "iptables DROP to and from the store", Start: sec(65), End: sec(80)},
		{Kind: "flushall", Target: "redis", Start: sec(100), End: sec(100), Kinds: []string{"seq-redis"}},
		{Kind: "disk-full", Target: "embedded", Detail: "time guard's state file", Start: sec(120), End: sec(130), Kinds: []string{"embedded"}},
		{Kind: "clock-step", Target: "server A", Detail: "-2s", Start: sec(150), End: sec(150), Kinds: servers},
	}
	r.Handovers = []report.Handover{{At: sec(44), Machine: 925, From: "B (run 1)", To: "S1 (run 12)", Fault: "pause"},
		{At: sec(69), Machine: 926, From: "C (run 1)", To: "S2 (run 20)", Fault: "partition"}}
	r.FenceChecked = 123456
	if sabotage {
		r.Faults[3].Detail = "sabotage: the store's copy is not restored"
		r.Handovers, r.FenceChecked = nil, 0
	}
	// share and flow of kind k at s seconds: the answered share of calls,
	// and the calls made as a share of the usual.
	effect := func(k string, s float64) (share, flow float64) {
		share, flow = 1, 1
		server := k == "client" || k == "rest" || k == "rpc"
		switch {
		case server && s >= 20 && s < 21.5: // a third of the servers gone, clients failing over
			share = 0.6 + 0.4*(s-20)/1.5
		case server && s >= 40 && s < 42: // calls to B hang; clients time out
			share, flow = 0.3, 0.5
		case server && s >= 42 && s < 48: // clients failed over, some still try B
			share, flow = 0.8, 0.8
		case server && s >= 48 && s < 49:
			share = 0.95
		case s >= 65 && s < 80: // C loses its lease: its callers get errors
			share = 0.35
			if k == "embedded" || strings.HasPrefix(k, "seq-") {
				share = 1
			}
		case k == "seq-redis" && s >= 100 && (sabotage || s < 103):
			share = 0.02
		case k == "embedded" && s >= 120 && s < 130:
			share = 0
		case k == "embedded" && s >= 130 && s < 131.2:
			share = 0.8
		}
		return share, flow
	}
	for i := range int(dur / step) {
		t := time.Duration(i) * step
		for _, k := range kinds {
			share, flow := effect(k, t.Seconds())
			calls := int64(rates[k] * step.Seconds() * flow * (0.9 + 0.2*rnd.Float64()))
			ok := int64(float64(calls) * share)
			r.Buckets = append(r.Buckets, report.Bucket{At: at(t), Kind: k, OK: ok, Err: calls - ok, Values: ok})
			if strings.HasPrefix(k, "seq-") {
				r.Numbers += ok
			} else {
				r.IDs += ok
			}
		}
	}
	if sabotage {
		r.Repeats = []report.Repeat{{Space: "seq-redis/orders", Value: "1048577", Entries: []string{
			"seq-redis caller 2 at 12:01:39.812", "seq-redis caller 5 at 12:01:40.207"}}}
		r.Repeated = 412
	}
	return r
}

// TestSample compares the sample report under testdata with what the
// code makes now; -update rewrites it.
func TestSample(t *testing.T) {
	runs := []report.Run{sample("etcd", 42, false), sample("sabotage", 43, true)}
	files := map[string]func(io.Writer) error{
		"report.md": func(w io.Writer) error { return report.Markdown(w, runs...) },
	}
	for _, r := range runs {
		files[r.Picture] = func(w io.Writer) error { return report.SVG(w, r) }
	}
	for name, write := range files {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to make it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs from what the code makes now; look, then run with -update", path)
		}
	}
}

func TestGroup(t *testing.T) {
	for k, want := range map[string]string{"rest-A": "rest", "rpc-D": "rpc", "seq-mariadb-C": "seq-mariadb", "seq-redis": "seq-redis", "client": "client", "x-ab": "x-ab"} {
		if got := report.Group(k); got != want {
			t.Errorf("Group(%q) = %q, want %q", k, got, want)
		}
	}
}

func TestSVGGroupsKinds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := report.Run{Name: "g", Start: t0, End: t0.Add(time.Second), Step: 100 * time.Millisecond}
	for i := range 10 {
		for _, k := range []string{"rest-A", "rest-B", "client"} {
			r.Buckets = append(r.Buckets, report.Bucket{At: t0.Add(time.Duration(i) * r.Step), Kind: k, OK: 1})
		}
	}
	var b strings.Builder
	if err := report.SVG(&b, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `class="kind"`); n != 2 {
		t.Errorf("%d kind lines, want 2 (client, rest)", n)
	}
	if strings.Contains(b.String(), "rest-A") {
		t.Error("picture names rest-A; want its group rest")
	}
}
