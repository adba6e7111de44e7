package segment_test

import (
	"context"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/segment"
)

func TestValidTag(t *testing.T) {
	for _, tc := range []struct {
		tag string
		ok  bool
	}{
		{"a", true},
		{"leaf-segment-test", true},
		{"order.v2:eu_west-1", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{"has space", false},
		{"a/b", false},
		{"é", false},
		{"tag\x00", false},
		{"%", false},
	} {
		err := segment.ValidTag(tc.tag)
		if (err == nil) != tc.ok {
			t.Errorf("ValidTag(%q) = %v, want ok=%v", tc.tag, err, tc.ok)
		}
		if err != nil && !errors.Is(err, segment.ErrInvalidTag) {
			t.Errorf("ValidTag(%q) = %v, not ErrInvalidTag", tc.tag, err)
		}
	}
}

var tagRe = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// The validator agrees with the rule written as a regular expression.
func FuzzValidTag(f *testing.F) {
	for _, s := range []string{"a", "", "leaf-segment-test", "a b", "é", strings.Repeat("z", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := segment.ValidTag(s)
		if want := tagRe.MatchString(s); (err == nil) != want {
			t.Fatalf("ValidTag(%q) = %v; the rule says ok=%v", s, err, want)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   func(*segment.Config)
		field string
	}{
		{"threshold NaN", func(c *segment.Config) { c.Threshold = math.NaN() }, "Threshold"},
		{"threshold negative", func(c *segment.Config) { c.Threshold = -0.1 }, "Threshold"},
		{"threshold above 1", func(c *segment.Config) { c.Threshold = 1.5 }, "Threshold"},
		{"target negative", func(c *segment.Config) { c.TargetDuration = -time.Second }, "TargetDuration"},
		{"target below 1s", func(c *segment.Config) { c.TargetDuration = time.Millisecond }, "TargetDuration: 1ms; want 0 (meaning 15m) or 1s to 24h"},
		{"target above 24h", func(c *segment.Config) { c.TargetDuration = 25 * time.Hour }, "TargetDuration"},
		{"refresh below 1s", func(c *segment.Config) { c.RefreshTags = time.Millisecond }, "RefreshTags: 1ms; want 0 (meaning 1m), negative (never) or 1s to 24h"},
		{"refresh above 24h", func(c *segment.Config) { c.RefreshTags = 25 * time.Hour }, "RefreshTags"},
		{"max step negative", func(c *segment.Config) { c.MaxStep = -1 }, "MaxStep"},
		{"max step huge", func(c *segment.Config) { c.MaxStep = 1 << 40 }, "MaxStep"},
		{"timeout negative", func(c *segment.Config) { c.StoreTimeout = -1 }, "StoreTimeout"},
		{"backoff negative", func(c *segment.Config) { c.RetryBackoff = -1 }, "RetryBackoff"},
		{"preload invalid", func(c *segment.Config) { c.Preload = []string{"ok", "not ok"} }, "Preload[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := segment.DefaultConfig()
			tc.mod(&cfg)
			err := cfg.Validate()
			if !errtest.Wraps(err, segment.ErrConfig, tc.field) {
				t.Fatalf("Validate() = %v; want ErrConfig naming %s", err, tc.field)
			}
			if _, err := segment.Open(context.Background(), segment.NewMemStore(), cfg); !errors.Is(err, segment.ErrConfig) {
				t.Fatalf("Open = %v; want ErrConfig", err)
			}
		})
	}
	if err := (segment.Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	if err := (segment.Config{RefreshTags: -time.Nanosecond}).Validate(); err != nil {
		t.Fatalf("RefreshTags negative (never): %v", err)
	}
	if err := segment.DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
}

func TestTagInfoValidate(t *testing.T) {
	ok := segment.TagInfo{Tag: "t", MaxID: 1, Step: 1000}
	for _, tc := range []struct {
		name  string
		mod   func(*segment.TagInfo)
		field string
		is    error
	}{
		{"bad tag", func(i *segment.TagInfo) { i.Tag = "a b" }, "a b", segment.ErrInvalidTag},
		{"start 0", func(i *segment.TagInfo) { i.MaxID = 0 }, "MaxID", segment.ErrConfig},
		{"start negative", func(i *segment.TagInfo) { i.MaxID = -5 }, "MaxID", segment.ErrConfig},
		{"start at the top", func(i *segment.TagInfo) { i.MaxID = math.MaxInt64 }, "MaxID", segment.ErrConfig},
		{"step 0", func(i *segment.TagInfo) { i.Step = 0 }, "Step", segment.ErrConfig},
		{"step above int(11)", func(i *segment.TagInfo) { i.Step = math.MaxInt32 + 1 }, "Step", segment.ErrConfig},
		{"long description", func(i *segment.TagInfo) { i.Description = strings.Repeat("d", 257) }, "Description", segment.ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := ok
			tc.mod(&i)
			err := i.Validate()
			if !errtest.Wraps(err, tc.is, tc.field) {
				t.Fatalf("Validate() = %v; want %v naming %s", err, tc.is, tc.field)
			}
			if err := segment.NewMemStore().Create(context.Background(), i); !errors.Is(err, tc.is) {
				t.Fatalf("Create = %v; want %v", err, tc.is)
			}
		})
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Leaf's arithmetic: a tag created with max_id 1 and step 2000 issues
// 1...2000 from its first range and leaves max_id at 2001.
func TestLeafRanges(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, 2000, "leaf-segment-test")
	r, err := st.Next(ctx, "leaf-segment-test", 0)
	if err != nil || r != (segment.Range{First: 1, Last: 2000, Step: 2000}) {
		t.Fatalf("Next = %+v, %v", r, err)
	}
	r, err = st.Next(ctx, "leaf-segment-test", 500)
	if err != nil || r != (segment.Range{First: 2001, Last: 2500, Step: 2000}) {
		t.Fatalf("Next(500) = %+v, %v", r, err)
	}
	tags, _ := st.Tags(ctx)
	if len(tags) != 1 || tags[0].MaxID != 2501 {
		t.Fatalf("Tags = %+v", tags)
	}
	if _, err := st.Next(ctx, "nope", 0); !errors.Is(err, segment.ErrUnknownTag) {
		t.Fatalf("unknown tag: %v", err)
	}
	if err := st.Create(ctx, segment.TagInfo{Tag: "leaf-segment-test", MaxID: 1, Step: 1}); !errors.Is(err, segment.ErrTagExists) {
		t.Fatalf("duplicate Create: %v", err)
	}

	is := segtest.Open(t, st, segment.DefaultConfig())
	got, err := is.NextN(ctx, "leaf-segment-test", 3)
	if err != nil || !slices.Equal(got, []int64{2501, 2502, 2503}) {
		t.Fatalf("NextN = %v, %v", got, err)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	is := segtest.Open(t, newStore(t, 10, "a"), segment.DefaultConfig())
	for _, tc := range []struct {
		name string
		call func() error
		is   error
	}{
		{"unknown tag", func() error { _, err := is.Next(ctx, "b"); return err }, segment.ErrUnknownTag},
		{"invalid tag", func() error { _, err := is.Next(ctx, "no/slash"); return err }, segment.ErrInvalidTag},
		{"empty tag", func() error { _, err := is.Next(ctx, ""); return err }, segment.ErrInvalidTag},
		{"long tag", func() error { _, err := is.Next(ctx, strings.Repeat("a", 129)); return err }, segment.ErrInvalidTag},
		{"count 0", func() error { _, err := is.NextN(ctx, "a", 0); return err }, segment.ErrInvalidCount},
		{"count negative", func() error { _, err := is.NextN(ctx, "a", -1); return err }, segment.ErrInvalidCount},
		{"count too big", func() error { _, err := is.NextN(ctx, "a", segment.MaxCount+1); return err }, segment.ErrInvalidCount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want %v", err, tc.is)
			}
		})
	}
	if _, err := segment.Open(ctx, nil, segment.DefaultConfig()); !errors.Is(err, segment.ErrConfig) {
		t.Fatalf("nil store: %v", err)
	}
	cfg := segment.DefaultConfig()
	cfg.Preload = []string{"a", "missing"}
	_, err := segment.Open(ctx, newStore(t, 10, "a"), cfg)
	if !errtest.Wraps(err, segment.ErrUnknownTag, `"missing"`) {
		t.Fatalf("Open with an unknown preload: %v", err)
	}
}

// A tag created while the issuer runs is served on its first request.
func TestTagCreatedWhileRunning(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, 10, "a")
	is := segtest.Open(t, st, segment.DefaultConfig())
	if got := is.Tags(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Tags = %v", got)
	}
	if err := st.Create(ctx, segment.TagInfo{Tag: "b", MaxID: 100, Step: 10}); err != nil {
		t.Fatal(err)
	}
	if n, err := is.Next(ctx, "b"); err != nil || n != 100 {
		t.Fatalf("Next(b) = %d, %v", n, err)
	}
	if got := is.Tags(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Tags = %v", got)
	}
}

// The next range is fetched once Threshold of the current one is issued,
// and callers never wait for it while the current range lasts.
func TestDoubleBuffer(t *testing.T) {
	ctx := context.Background()
	gate := newGate(newStore(t, 100, "t"))
	cfg, _ := fakeConfig()
	cfg.Preload = []string{"t"}
	is := segtest.Open(t, gate, cfg)
	if n := len(gate.stepsAsked()); n != 1 {
		t.Fatalf("%d fetches after preload, want 1", n)
	}
	gate.close()
	// 10 numbers (10%) fetch nothing; the 11th starts the fetch.
	for want := int64(1); want <= 11; want++ {
		if n, err := is.Next(ctx, "t"); err != nil || n != want {
			t.Fatalf("Next = %d, %v; want %d", n, err, want)
		}
		if want == 10 {
			if n := len(gate.stepsAsked()); n != 1 {
				t.Fatalf("fetch started after 10 numbers")
			}
		}
	}
	<-gate.started // the fetch waits in the store
	// The rest of the range is issued while the store hangs.
	for want := int64(12); want <= 100; want++ {
		if n, err := is.Next(ctx, "t"); err != nil || n != want {
			t.Fatalf("Next = %d, %v; want %d", n, err, want)
		}
	}
	st, _ := is.Stats("t")
	// One wait: the preload's first fetch; none while issuing.
	if st.Remaining != 0 || st.Issued != 100 || st.RangesFetched != 1 || st.Waits != 1 || st.Step != 100 {
		t.Fatalf("Stats = %+v", st)
	}
	// The 101st waits for the fetch; a short context gives up.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := is.Next(short, "t"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with the store hanging = %v", err)
	}
	if st, _ := is.Stats("t"); st.Waits != 2 {
		t.Fatalf("Waits = %d, want 2 (preload, the timed-out call)", st.Waits)
	}
	gate.open()
	if n, err := is.Next(ctx, "t"); err != nil || n != 101 {
		t.Fatalf("Next after release = %d, %v", n, err)
	}
	if n := len(gate.stepsAsked()); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	// Once the gate is open the fetch may land before the next call, which
	// then has nothing to wait for: whether it waited is timing, not
	// behaviour, so both counts are right.
	if st, _ := is.Stats("t"); st.Waits != 2 && st.Waits != 3 {
		t.Fatalf("Waits = %d, want 2 or 3 (preload, the timed-out call, perhaps the released one)", st.Waits)
	}
}

// OnStore sees every store call, for the latency histogram.
func TestOnStore(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, 10, "t")
	var mu sync.Mutex
	ops := map[string]int{}
	cfg := segment.DefaultConfig()
	cfg.OnStore = func(op, tag string, d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		ops[op+" "+tag]++
		if (err != nil && !errors.Is(err, context.Canceled)) || d < 0 { // Close cancels a prefetch
			t.Errorf("OnStore(%s, %s, %v, %v)", op, tag, d, err)
		}
	}
	is := segtest.Open(t, st, cfg)
	if _, err := is.NextN(ctx, "t", 25); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if ops["tags "] != 1 || ops["next t"] < 3 {
		t.Fatalf("OnStore calls: %v", ops)
	}
}

// The step doubles when ranges last under TargetDuration, up to MaxStep,
// halves when they last over twice it, never below the stored step; the
// first two fetches take the stored step (step 0), as Leaf.
func TestDynamicStep(t *testing.T) {
	ctx := context.Background()
	gate := newGate(newStore(t, 100, "t"))
	cfg, clk := fakeConfig()
	cfg.Threshold = 1 // fetch when a range's last number goes, to make each range's duration exact
	cfg.MaxStep = 400
	is := segtest.Open(t, gate, cfg)
	// Minutes between fetches, and the step each fetch then asks.
	for i, tc := range []struct {
		after time.Duration
		step  int64
	}{
		{0, 0}, {0, 0}, // stored step, twice
		{time.Minute, 200}, {time.Minute, 400}, {time.Minute, 400}, // doubles to the cap
		{20 * time.Minute, 400},                          // between 1x and 2x: kept
		{31 * time.Minute, 200}, {31 * time.Minute, 100}, // halves
		{31 * time.Minute, 100}, // never below the stored step
		{time.Minute, 200},
	} {
		if i > 0 {
			// Use up the current range but its last number.
			for {
				st, _ := is.Stats("t")
				if st.Remaining == 1 {
					break
				}
				if _, err := is.Next(ctx, "t"); err != nil {
					t.Fatal(err)
				}
			}
		}
		clk.Advance(tc.after)
		// The last number starts fetch i+1; the next call waits for it.
		if _, err := is.Next(ctx, "t"); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if _, err := is.Next(ctx, "t"); err != nil {
				t.Fatal(err)
			}
		}
		steps := gate.stepsAsked()
		if len(steps) != i+1 || steps[i] != tc.step {
			t.Fatalf("fetch %d asked step %v, want %d (all: %v)", i+1, steps[len(steps)-1], tc.step, steps)
		}
	}
}
