package ledger_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/nemesis/ledger"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

func open(t testing.TB, shards int) (*ledger.Ledger, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	l, err := ledger.OpenShards(dir, shards)
	if err != nil {
		t.Fatal(err)
	}
	return l, dir
}

func mustCheck(t testing.TB, l *ledger.Ledger, opt ledger.Options) ledger.Result {
	t.Helper()
	r, err := l.Check(opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Many writers of distinct values: no repeat, every value counted and
// visited once, with its writer's source.
func TestConcurrentWritersNoRepeat(t *testing.T) {
	const writers = 8
	per := 100_000
	if testing.Short() {
		per = 20_000
	}
	for _, shards := range []int{1, 7, ledger.DefaultShards} {
		t.Run(fmt.Sprint(shards, "shards"), func(t *testing.T) {
			l, _ := open(t, shards)
			tag := l.Tag("orders")
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for g := range writers {
				src := l.Source(fmt.Sprint("client-", g))
				wg.Go(func() {
					w := l.Writer(src)
					vals := make([]uint64, 0, 100)
					for i := range per {
						vals = append(vals, uint64(g*per+i))
						if len(vals) == cap(vals) {
							if err := w.Add(ledger.IDs, t0, vals...); err != nil {
								errs[g] = err
								return
							}
							// Tag numbers overlap the IDs' values on purpose.
							if err := w.Add(tag, t0, vals[0]); err != nil {
								errs[g] = err
								return
							}
							vals = vals[:0]
						}
					}
					errs[g] = errors.Join(w.Add(ledger.IDs, t0, vals...), w.Flush())
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			seen := make([]bool, writers*per)
			r := mustCheck(t, l, ledger.Options{Visit: func(e ledger.Entry) {
				if e.Space != ledger.IDs {
					return
				}
				if seen[e.Value] {
					t.Errorf("value %d visited twice", e.Value)
				}
				seen[e.Value] = true
				if want := fmt.Sprint("client-", int(e.Value)/per); l.SourceName(e.Source) != want {
					t.Errorf("value %d from %q, want %q", e.Value, l.SourceName(e.Source), want)
				}
				if !e.At.Equal(t0) {
					t.Errorf("value %d at %v, want %v", e.Value, e.At, t0)
				}
			}})
			if r.RepeatCount != 0 || len(r.Repeats) != 0 {
				t.Errorf("repeats %d %v, want none", r.RepeatCount, r.Repeats)
			}
			nums := int64(writers * per / 100)
			if r.IDs != int64(writers*per) || r.Numbers != nums || r.PerSpace[tag] != nums {
				t.Errorf("counted %d IDs, %d numbers (%v), want %d, %d", r.IDs, r.Numbers, r.PerSpace, writers*per, nums)
			}
			for v, ok := range seen {
				if !ok {
					t.Fatalf("value %d not visited", v)
				}
			}
		})
	}
}

// A value handed to two sources by two writers is found, with both
// entries in recorded-time order whatever order they were written in.
func TestPlantedRepeat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tag   string // "" for IDs
		value uint64
	}{
		{"id", "", 1 << 40},
		{"tag number", "orders", 7},
		{"zero", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := open(t, ledger.DefaultShards)
			sp := ledger.IDs
			if tc.tag != "" {
				sp = l.Tag(tc.tag)
			}
			a, b := l.Source("client-1 via A"), l.Source("client-2 via B")
			wa, wb := l.Writer(a), l.Writer(b)
			late, early := t0.Add(time.Second), t0
			for i := range uint64(1000) {
				if err := wa.Add(sp, t0, tc.value+1+2*i); err != nil {
					t.Fatal(err)
				}
				if err := wb.Add(sp, t0, tc.value+2+2*i); err != nil {
					t.Fatal(err)
				}
			}
			if err := wa.Add(sp, late, tc.value); err != nil {
				t.Fatal(err)
			}
			if err := wb.Add(sp, early, tc.value); err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(wa.Flush(), wb.Flush(), l.Close()); err != nil {
				t.Fatal(err)
			}
			r := mustCheck(t, l, ledger.Options{})
			want := []ledger.Repeat{{Space: sp, Value: tc.value, Entries: []ledger.Entry{
				{Space: sp, Value: tc.value, Source: b, At: early},
				{Space: sp, Value: tc.value, Source: a, At: late},
			}}}
			if r.RepeatCount != 1 || !equalRepeats(r.Repeats, want) {
				t.Fatalf("found %d: %v, want %v", r.RepeatCount, r.Repeats, want)
			}
			if got := l.SourceName(r.Repeats[0].Entries[0].Source); got != "client-2 via B" {
				t.Errorf("first source %q", got)
			}
		})
	}
}

// equalRepeats compares times by instant, as reflect cannot.
func equalRepeats(got, want []ledger.Repeat) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Space != w.Space || g.Value != w.Value || len(g.Entries) != len(w.Entries) {
			return false
		}
		for j := range g.Entries {
			ge, we := g.Entries[j], w.Entries[j]
			if ge.Space != we.Space || ge.Value != we.Value || ge.Source != we.Source || !ge.At.Equal(we.At) {
				return false
			}
		}
	}
	return true
}

// The same number under IDs and three tags (one named "ids") is four
// values, not a repeat.
func TestSpacesAreSeparate(t *testing.T) {
	l, _ := open(t, ledger.DefaultShards)
	w := l.Writer(l.Source("c"))
	spaces := []ledger.Space{ledger.IDs, l.Tag("a"), l.Tag("b"), l.Tag("ids")}
	if l.Tag("a") != spaces[1] || l.SpaceName(spaces[2]) != "b" || l.SpaceName(ledger.IDs) != "ids" || spaces[3] == ledger.IDs {
		t.Fatalf("tags: %v, %q", spaces, l.SpaceName(spaces[2]))
	}
	for _, sp := range spaces {
		if err := w.Add(sp, t0, 1, 2, 3); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(w.Flush(), l.Close()); err != nil {
		t.Fatal(err)
	}
	r := mustCheck(t, l, ledger.Options{})
	if r.RepeatCount != 0 || r.IDs != 3 || r.Numbers != 9 {
		t.Errorf("repeats %d, IDs %d, numbers %d; want 0, 3, 9", r.RepeatCount, r.IDs, r.Numbers)
	}
	for _, sp := range spaces {
		if r.PerSpace[sp] != 3 {
			t.Errorf("space %d: %d values, want 3", sp, r.PerSpace[sp])
		}
	}
}

// MaxRepeats bounds the list to the lowest by space then value, while
// RepeatCount counts them all.
func TestMaxRepeats(t *testing.T) {
	for _, tc := range []struct {
		max, want int
	}{{0, 20}, {3, 3}, {20, 20}, {50, 20}, {-1, 0}} {
		t.Run(fmt.Sprint("max", tc.max), func(t *testing.T) {
			l, _ := open(t, 16)
			tag := l.Tag("t")
			w := l.Writer(l.Source("c"))
			// 10 repeats in each space, from values spread over the shards.
			for _, sp := range []ledger.Space{tag, ledger.IDs} {
				for i := range uint64(10) {
					v := 1000 - 97*i
					if err := w.Add(sp, t0, v, v+1, v); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := errors.Join(w.Flush(), l.Close()); err != nil {
				t.Fatal(err)
			}
			r := mustCheck(t, l, ledger.Options{MaxRepeats: tc.max})
			if r.RepeatCount != 20 || len(r.Repeats) != tc.want {
				t.Fatalf("RepeatCount %d, listed %d; want 20, %d", r.RepeatCount, len(r.Repeats), tc.want)
			}
			for i, rp := range r.Repeats {
				sp, v := ledger.IDs, 1000-97*uint64(9-i)
				if i >= 10 {
					sp, v = tag, 1000-97*uint64(19-i)
				}
				if rp.Space != sp || rp.Value != v || len(rp.Entries) != 2 {
					t.Errorf("repeat %d: space %d value %d (%d entries), want %d %d (2)", i, rp.Space, rp.Value, len(rp.Entries), sp, v)
				}
			}
		})
	}
}

// A ledger reopened from its directory, as another process would, finds
// what the one that wrote it found, and takes no more records.
func TestReopen(t *testing.T) {
	l, dir := open(t, ledger.DefaultShards)
	tag := l.Tag("orders")
	src := []ledger.Source{l.Source("x"), l.Source("y")}
	for i, s := range src {
		w := l.Writer(s)
		for v := range uint64(5000) {
			if err := w.Add(ledger.Space(i)*tag, t0.Add(time.Duration(v)), v, v*3); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := mustCheck(t, l, ledger.Options{MaxRepeats: 5})
	if want.RepeatCount != 2*1667 {
		t.Fatalf("RepeatCount %d, want 2×1667", want.RepeatCount)
	}

	r, err := ledger.Reopen(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := mustCheck(t, r, ledger.Options{MaxRepeats: 5})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reopened: %+v\nwant %+v", got, want)
	}
	if r.SourceName(src[1]) != "y" || r.SpaceName(tag) != "orders" || r.Tag("orders") != tag {
		t.Errorf("names: %q, %q", r.SourceName(src[1]), r.SpaceName(tag))
	}
	if err := r.Writer(src[0]).Add(ledger.IDs, t0, 1); !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("Add to a reopened ledger: %v, want ErrClosed", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Open(dir); !errors.Is(err, ledger.ErrNotEmpty) {
		t.Errorf("Open on a non-empty dir: %v, want ErrNotEmpty", err)
	}
	if _, err := ledger.OpenShards(t.TempDir(), 0); err == nil {
		t.Error("OpenShards with 0 shards: no error")
	}
	if _, err := ledger.Reopen(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Reopen without names: %v, want ErrNotExist", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "names.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Reopen(dir); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Reopen with bad names: %v, want ErrCorrupt", err)
	}
}

// A shard cut short is reported, with its path, rather than misread.
func TestCorruptShard(t *testing.T) {
	l, dir := open(t, 1)
	w := l.Writer(l.Source("c"))
	if err := errors.Join(w.Add(ledger.IDs, t0, 1, 2), w.Flush(), l.Close()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "shard-0000.bin")
	if err := os.Truncate(path, 30); err != nil {
		t.Fatal(err)
	}
	r, err := ledger.Reopen(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Check(ledger.Options{}); !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Errorf("Check of a cut shard: %v, want ErrCorrupt naming %s", err, path)
	}
}

func TestAfterClose(t *testing.T) {
	l, _ := open(t, 4)
	w := l.Writer(l.Source("c"))
	if err := w.Add(ledger.IDs, t0, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Add":   w.Add(ledger.IDs, t0, 2),
		"Flush": w.Flush(),
		"Close": l.Close(),
	} {
		if !errors.Is(err, ledger.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// Check on a ledger still being written sees what was flushed.
func TestCheckWhileOpen(t *testing.T) {
	l, _ := open(t, 8)
	w := l.Writer(l.Source("c"))
	if err := errors.Join(w.Add(ledger.IDs, t0, 5, 6, 5), w.Flush(), w.Add(ledger.IDs, t0, 6)); err != nil {
		t.Fatal(err)
	}
	r := mustCheck(t, l, ledger.Options{})
	if r.IDs != 3 || r.RepeatCount != 1 || r.Repeats[0].Value != 5 {
		t.Errorf("IDs %d, repeats %v; want 3, [5]", r.IDs, r.Repeats)
	}
	if err := errors.Join(w.Flush(), l.Close()); err != nil {
		t.Fatal(err)
	}
	if r := mustCheck(t, l, ledger.Options{}); r.RepeatCount != 2 {
		t.Errorf("after Close: %d repeats, want 2", r.RepeatCount)
	}
}

func Example() {
	dir, err := os.MkdirTemp("", "ledger")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	l, err := ledger.Open(filepath.Join(dir, "run"))
	if err != nil {
		panic(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := l.Writer(l.Source("client-1 via A"))
	b := l.Writer(l.Source("client-2 via B"))
	_ = a.Add(ledger.IDs, at, 10, 11, 12)
	_ = b.Add(ledger.IDs, at.Add(time.Millisecond), 13, 11)
	_ = b.Add(l.Tag("orders"), at, 10) // another space: no repeat
	if err := errors.Join(a.Flush(), b.Flush(), l.Close()); err != nil {
		panic(err)
	}
	r, err := l.Check(ledger.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.IDs, "IDs,", r.Numbers, "numbers,", r.RepeatCount, "repeated")
	for _, rp := range r.Repeats {
		for _, e := range rp.Entries {
			fmt.Printf("%s %d to %s at %s\n", l.SpaceName(rp.Space), rp.Value, l.SourceName(e.Source), e.At.UTC().Format(time.StampMilli))
		}
	}
	// Output:
	// 5 IDs, 1 numbers, 1 repeated
	// ids 11 to client-1 via A at Jan  1 00:00:00.000
	// ids 11 to client-2 via B at Jan  1 00:00:00.001
}

// BenchmarkLedger20M writes 20 M distinct IDs from 8 writers, then checks
// them; run with -bench Ledger20M -benchtime 1x.
func BenchmarkLedger20M(b *testing.B) {
	const writers, per = 8, 2_500_000
	for b.Loop() {
		l, _ := open(b, ledger.DefaultShards)
		start := time.Now()
		var wg sync.WaitGroup
		for g := range writers {
			w := l.Writer(l.Source(fmt.Sprint(g)))
			wg.Go(func() {
				var vals [100]uint64 // divides per
				for i := 0; i < per; i += len(vals) {
					for k := range vals {
						vals[k] = uint64(g*per + i + k)
					}
					if err := w.Add(ledger.IDs, t0, vals[:]...); err != nil {
						b.Error(err)
						return
					}
				}
				if err := w.Flush(); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		written := time.Since(start)

		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		peak := base
		stop, done := make(chan struct{}), make(chan struct{})
		go func() { // sample the heap while Check runs
			defer close(done)
			tk := time.NewTicker(2 * time.Millisecond)
			defer tk.Stop()
			for {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
				select {
				case <-stop:
					return
				case <-tk.C:
				}
			}
		}()
		start = time.Now()
		r, err := l.Check(ledger.Options{})
		checked := time.Since(start)
		close(stop)
		<-done
		if err != nil {
			b.Fatal(err)
		}
		if r.IDs != writers*per || r.RepeatCount != 0 {
			b.Fatalf("IDs %d, repeats %d", r.IDs, r.RepeatCount)
		}
		b.ReportMetric(float64(r.IDs)/written.Seconds(), "written/s")
		b.ReportMetric(float64(r.IDs)/checked.Seconds(), "checked/s")
		b.ReportMetric(checked.Seconds(), "check-s")
		b.ReportMetric(float64(peak-base)/(1<<20), "peak-heap-MiB")
	}
}
