package capacity_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/capacity"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// nearEnd is an epoch that leaves a min-granularity time field (40 bits of
// milliseconds, about 34.8 years) a year past t0.
func nearEnd(t *testing.T) time.Time {
	c, err := core.NewCodec(core.Sorted, time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	end, _ := c.End(core.MinGranularity)
	span := end.Sub(time.UnixMilli(0))
	return t0.Add(capacity.Year - span).Truncate(time.Millisecond)
}

// TestTimeField: a layout whose epoch leaves a year is critical, and says
// the end; its default epoch's is far off.
func TestTimeField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		epoch  time.Time
		years  float64
		status string
	}{
		{"a year left", nearEnd(t), 1, capacity.Critical},
		{"the sorted layout's own epoch", time.Time{}, 33.4, capacity.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gen, clk := gentest.Manual(t, core.Config{Type: core.MinGranularity, Epoch: tc.epoch}, t0)
			tr := capacity.New(capacity.Config{Gen: gen, Now: clk.Now, Interval: time.Hour})
			t.Cleanup(tr.Close)
			r := tr.Report(context.Background())
			if math.Abs(r.Time.Years-tc.years) > 0.05 || r.Time.Status != tc.status || r.Status != tc.status {
				t.Fatalf("years %.3f, status %s (report %s); want about %.1f, %s", r.Time.Years, r.Time.Status, r.Status, tc.years, tc.status)
			}
			if end, _ := gen.Codec().End(core.MinGranularity); !r.Time.End.Equal(end) {
				t.Fatalf("end %s; want %s", r.Time.End, end)
			}
			_, _, warn := capacity.TimeLeft(gen.Codec(), gen.Type(), t0)
			if warn != (tc.status != capacity.OK) {
				t.Fatalf("TimeLeft warns %t", warn)
			}
		})
	}
}

// TestSequenceShare: units that ran out between two samples are the share
// of the window spent at the ceiling; the borrowing in use is Ahead over
// MaxBorrow.
func TestSequenceShare(t *testing.T) {
	gen, clk := gentest.Manual(t, core.Config{Type: core.MinGranularity, MaxBorrow: 10 * time.Millisecond}, t0)
	tr := capacity.New(capacity.Config{Gen: gen, Now: clk.Now, Interval: time.Hour, Window: time.Second})
	t.Cleanup(tr.Close)
	if r := tr.Report(context.Background()); r.Sequence.Share != -1 || r.Sequence.PerUnit != 1024 {
		t.Fatalf("before a second sample: share %v, per unit %d; want -1 (unknown), 1024", r.Sequence.Share, r.Sequence.PerUnit)
	}
	// 100 ms pass; in them 5 units run out (5.5 units of IDs at once,
	// borrowed ahead of the clock).
	clk.Advance(100 * time.Millisecond)
	if _, err := gen.NextIDs(context.Background(), core.Central, 5*1024+512); err != nil {
		t.Fatal(err)
	}
	r := tr.Report(context.Background())
	if r.Sequence.Exhausted != 5 || math.Abs(r.Sequence.Share-0.05) > 1e-9 {
		t.Fatalf("exhausted %d, share %v; want 5 units of 1ms over 100ms: 0.05", r.Sequence.Exhausted, r.Sequence.Share)
	}
	if math.Abs(r.Sequence.BorrowShare-0.5) > 1e-9 || r.Sequence.Status != capacity.OK {
		t.Fatalf("borrow in use %v (ahead %vs of %vs), status %s; want 0.5, ok", r.Sequence.BorrowShare, r.Sequence.Ahead, r.Sequence.MaxBorrow, r.Sequence.Status)
	}
}

// fakeSeqs are sequences whose tags the test moves.
type fakeSeqs struct {
	mu   sync.Mutex
	tags map[string]capacity.TagCounters
}

func (f *fakeSeqs) counters() []capacity.TagCounters {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []capacity.TagCounters
	for _, c := range f.tags {
		out = append(out, c)
	}
	return out
}
func (f *fakeSeqs) set(tag string, maxID, step, fetched int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tags[tag] = capacity.TagCounters{Tag: tag, MaxID: maxID, Step: step, RangesFetched: fetched}
}

// TestSegmentTags: numbers left below the bound, max_id's advance per day
// over the tags' window, the days left at that rate and the fetches per
// minute; a tag near its bound is critical.
func TestSegmentTags(t *testing.T) {
	gen, clk := gentest.Manual(t, core.Config{}, t0)
	seqs := &fakeSeqs{tags: map[string]capacity.TagCounters{}}
	const bound = 10_000_000
	seqs.set("order", 1000, 1000, 1)
	seqs.set("tiny", bound-50_000, 1000, 1)
	tr := capacity.New(capacity.Config{Gen: gen, Now: clk.Now, Interval: time.Hour, Window: time.Minute, Sequences: seqs.counters, Bound: bound})
	t.Cleanup(tr.Close)
	clk.Advance(10 * time.Minute)
	seqs.set("order", 1000+100_000, 10_000, 11) // 100,000 numbers and 10 fetches in 10 minutes
	r := tr.Report(context.Background())
	if len(r.Segments) != 2 {
		t.Fatalf("%d tags", len(r.Segments))
	}
	var order, tiny capacity.Tag
	for _, tg := range r.Segments {
		switch tg.Tag {
		case "order":
			order = tg
		case "tiny":
			tiny = tg
		}
	}
	if order.Left != bound-101_000+1 || math.Abs(order.PerDay-14_400_000) > 1 || math.Abs(order.StepsPerMinute-1) > 1e-9 {
		t.Fatalf("order: %+v; want %d left, 14.4M a day, 1 step a minute", order, bound-101_000+1)
	}
	if order.DaysLeft == nil || math.Abs(*order.DaysLeft-float64(order.Left)/14_400_000) > 1e-6 || order.Status != capacity.Critical {
		t.Fatalf("order: days left %v, status %s; want under a day: critical", order.DaysLeft, order.Status)
	}
	if tiny.DaysLeft != nil || tiny.Left != 50_001 || tiny.Status != capacity.Critical {
		t.Fatalf("tiny: %+v; want 50,001 left (under 1%% of the bound), no rate: critical", tiny)
	}
	if r.Status != capacity.Critical {
		t.Fatalf("report status %s", r.Status)
	}
}

// TestPools: each pool's status, the read's error kept, and the JSON form
// of a report.
func TestPools(t *testing.T) {
	gen, clk := gentest.Manual(t, core.Config{}, t0)
	var fail error
	reads := 0
	pools := func(ctx context.Context) (capacity.Machine, error) {
		reads++
		held := 50
		if fail != nil {
			held = -1
		}
		return capacity.Machine{Provider: "redis", Pools: []capacity.Pool{
			{Range: "server", IDs: "924-1023", Held: 95, Total: 100},
			{Range: "embedded", IDs: "0-923", Held: held, Total: 924},
		}}, fail
	}
	tr := capacity.New(capacity.Config{Gen: gen, Now: clk.Now, Interval: time.Hour, Pools: pools})
	t.Cleanup(tr.Close)
	r := tr.Report(context.Background())
	if r.Machine.Pools[0].Status != capacity.Warning || r.Machine.Pools[1].Status != capacity.OK || r.Machine.Status != capacity.Warning {
		t.Fatalf("%+v", r.Machine)
	}
	tr.Report(context.Background())
	if reads != 1 {
		t.Fatalf("%d reads of the pools within their freshness; want 1", reads)
	}
	clk.Advance(time.Minute)
	fail = errors.New("redis down")
	r = tr.Report(context.Background())
	if r.Machine.Error != "redis down" || r.Machine.Pools[1].Held != -1 {
		t.Fatalf("a failed read: %+v", r.Machine)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"years_left":`, `"held":-1`, `"segments":null`, `"status":"warning"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}
