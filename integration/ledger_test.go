package integration_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
)

// The sorted layout as docs/design/id-layouts.md draws it, decoded here by hand rather
// than with core's Codec, so that a decoder bug cannot hide an encoder bug.
var sortedEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// The default ranges of machine IDs (docs/design/machine-ids.md).
const (
	lastEmbedded  = 923
	firstServer   = 924
	lastServer    = 1023
	maxBorrow     = time.Second // id.max_borrow, the default every scenario keeps
	maxReportRows = 8
)

// fields are an ID's fields in the sorted layout.
type fields struct {
	version, typ, method, machine uint64
	time, seq                     uint64
}

func decode(id core.ID) fields {
	v := uint64(id)
	f := fields{version: v >> 63, typ: v >> 62 & 1}
	seqBits, timeShift := uint(20), uint(32) // max-peak
	if f.typ == 1 {
		seqBits, timeShift = 10, 22 // min-granularity
	}
	f.seq = v & (1<<seqBits - 1)
	f.machine = v >> seqBits & 1023
	f.method = v >> (seqBits + 10) & 3
	f.time = v >> timeShift & (1<<(62-timeShift) - 1)
	return f
}

// key orders the IDs of one machine ID as its generator issues them:
// (time, seq), whatever the method.
func (f fields) key() uint64 {
	if f.typ == 1 {
		return f.time<<10 | f.seq
	}
	return f.time<<20 | f.seq
}

func (f fields) unit() time.Duration {
	if f.typ == 1 {
		return time.Millisecond
	}
	return time.Second
}

// instant is the start of the ID's time unit.
func (f fields) instant() time.Time {
	return sortedEpoch.Add(time.Duration(f.time) * f.unit())
}

func (f fields) String() string {
	return fmt.Sprintf("{type %d method %d machine %d time %d (%s) seq %d}",
		f.typ, f.method, f.machine, f.time, f.instant().Format(time.RFC3339Nano), f.seq)
}

// stream is the IDs one caller got, in the order it got them. It belongs
// to one goroutine until the ledger is checked.
type stream struct {
	name string
	// ordered: the IDs come from sequential calls, each issued after the
	// previous one returned, so per machine ID they strictly increase —
	// across restarts and re-keying too, since a generator continues above
	// its time guard's mark. Streams fed from a prefetch buffer are not
	// ordered: a refill may be reserved before a direct call and handed out
	// after it.
	ordered bool
	methods []core.Method // the methods its IDs may carry
	ids     []core.ID
}

func (s *stream) add(ids ...core.ID) { s.ids = append(s.ids, ids...) }

// ledger holds every ID of a scenario.
type ledger struct {
	typ   core.Type // the ID type every issuer uses
	start time.Time

	mu      sync.Mutex
	streams []*stream
}

func newLedger(typ core.Type) *ledger {
	return &ledger{typ: typ, start: time.Now()}
}

// stream adds a stream of IDs carrying one of methods.
func (l *ledger) stream(name string, ordered bool, methods ...core.Method) *stream {
	s := &stream{name: name, ordered: ordered, methods: methods}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streams = append(l.streams, s)
	return s
}

// total counts the IDs of every stream; call it once the writers stopped.
func (l *ledger) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.streams {
		n += len(s.ids)
	}
	return n
}

// byMethod counts the IDs per method over the streams whose name has
// prefix.
func (l *ledger) byMethod(prefix string) map[core.Method]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[core.Method]int{}
	for _, s := range l.streams {
		if strings.HasPrefix(s.name, prefix) {
			for _, id := range s.ids {
				out[core.Method(decode(id).method)]++
			}
		}
	}
	return out
}

// check fails t on a duplicate, on an ID a stream's issuer may not make
// (method, machine range, version, type, a time before the scenario or
// more than max_borrow ahead of the clock), and on an ordered stream that
// goes back for a machine ID. Call it once the writers stopped.
func (l *ledger) check(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	n := 0
	for _, s := range l.streams {
		n += len(s.ids)
	}
	all := make([]core.ID, 0, n)
	var bad, backwards []string
	unit := l.typ.Unit()
	lo := uint64(l.start.Sub(sortedEpoch)/unit) - 1
	hi := uint64(now.Add(maxBorrow).Sub(sortedEpoch) / unit)
	for _, s := range l.streams {
		all = append(all, s.ids...)
		if s.fine(uint64(l.typ), lo, hi) {
			continue
		}
		var last [1024]uint64 // per machine: the last key + 1; 0 is none yet
		for i, id := range s.ids {
			f := decode(id)
			if msg := l.invalid(s, f, now); msg != "" && len(bad) < maxReportRows {
				bad = append(bad, fmt.Sprintf("%s[%d] = %d %v: %s", s.name, i, id, f, msg))
			}
			if !s.ordered {
				continue
			}
			k := f.key()
			if prev := last[f.machine]; prev != 0 && k < prev && len(backwards) < maxReportRows {
				backwards = append(backwards, fmt.Sprintf("%s[%d] = %d %v after (time %d, seq %d) of the same machine",
					s.name, i, id, f, (prev-1)>>seqBitsOf(f), (prev-1)&(1<<seqBitsOf(f)-1)))
			}
			last[f.machine] = k + 1
		}
	}
	if len(bad) > 0 {
		t.Errorf("IDs their issuers may not make:\n%s", strings.Join(bad, "\n"))
	}
	if len(backwards) > 0 {
		t.Errorf("IDs of sequential calls not strictly increasing per machine ID:\n%s", strings.Join(backwards, "\n"))
	}
	dups := duplicates(all)
	if len(dups) > 0 {
		t.Errorf("%d distinct IDs issued more than once among %d; the first:\n%s", len(dups), len(all), l.whereLocked(dups[:min(len(dups), maxReportRows)]))
	}
	t.Logf("ledger: %d IDs in %d streams, no duplicate: %v", len(all), len(l.streams), len(dups) == 0)
}

// fine reports whether every ID of s is of type typ, version 0, of one of
// its methods, in its method's machine range and with a time unit in
// [lo, hi], and, for an ordered stream, increases per machine ID: check's
// tests in plain integers, uninstrumented, so that millions of IDs are
// checked quickly under the race detector; check looks closer only when
// this fails.
//
//go:norace
func (s *stream) fine(typ, lo, hi uint64) bool {
	var methods uint64
	for _, m := range s.methods {
		methods |= 1 << m
	}
	var last [1024]uint64
	for _, id := range s.ids {
		f := decode(id)
		switch {
		case f.version != 0 || f.typ != typ || methods&(1<<f.method) == 0,
			f.method == uint64(core.Embedded) && f.machine > lastEmbedded,
			f.method != uint64(core.Embedded) && f.machine < firstServer,
			f.time < lo || f.time > hi:
			return false
		}
		if s.ordered {
			k := f.key()
			if prev := last[f.machine]; prev != 0 && k < prev {
				return false
			}
			last[f.machine] = k + 1
		}
	}
	return true
}

// duplicates sorts ids and returns those that appear more than once.
// Millions of IDs take a comparison sort seconds under the race detector;
// a radix sort of one goroutine's own slice, uninstrumented, takes little.
//
//go:norace
func duplicates(ids []core.ID) []core.ID {
	tmp := make([]core.ID, len(ids))
	src, dst := ids, tmp
	for shift := uint(0); shift < 64; shift += 16 {
		var count [1 << 16]int
		for _, id := range src {
			count[id>>shift&0xffff]++
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for _, id := range src {
			b := id >> shift & 0xffff
			dst[count[b]] = id
			count[b]++
		}
		src, dst = dst, src
	}
	// Four passes: the sorted IDs are back in ids.
	var dups []core.ID
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] && (len(dups) == 0 || dups[len(dups)-1] != ids[i]) {
			dups = append(dups, ids[i])
		}
	}
	return dups
}

func seqBitsOf(f fields) uint {
	if f.typ == 1 {
		return 10
	}
	return 20
}

// invalid says what is wrong with an ID of s, or "".
func (l *ledger) invalid(s *stream, f fields, now time.Time) string {
	switch {
	case f.version != 0:
		return "version bit set"
	case f.typ != uint64(l.typ):
		return fmt.Sprintf("type %d; want %d", f.typ, l.typ)
	case !slices.Contains(s.methods, core.Method(f.method)):
		return fmt.Sprintf("method %d; want one of %v", f.method, s.methods)
	case core.Method(f.method) == core.Embedded && f.machine > lastEmbedded:
		return "an embedded ID outside the embedded range 0-923"
	case core.Method(f.method) != core.Embedded && (f.machine < firstServer || f.machine > lastServer):
		return "a server's ID outside the server range 924-1023"
	case f.instant().Add(f.unit()).Before(l.start.Add(-f.unit())):
		return fmt.Sprintf("time before the scenario began (%s)", l.start.Format(time.RFC3339Nano))
	case f.instant().After(now.Add(maxBorrow)):
		return fmt.Sprintf("time more than max_borrow (%v) ahead of the clock (%s)", maxBorrow, now.Format(time.RFC3339Nano))
	}
	return ""
}

// whereLocked names the streams and positions of ids.
func (l *ledger) whereLocked(ids []core.ID) string {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%d %v in:", id, decode(id))
		for _, s := range l.streams {
			for i, x := range s.ids {
				if x == id {
					fmt.Fprintf(&b, " %s[%d]", s.name, i)
				}
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// keyRange returns, per machine ID, the lowest and highest key of the IDs
// of the streams whose name has prefix.
func (l *ledger) keyRange(prefix string) (lo, hi map[uint64]uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lo, hi = map[uint64]uint64{}, map[uint64]uint64{}
	for _, s := range l.streams {
		if !strings.HasPrefix(s.name, prefix) {
			continue
		}
		for _, id := range s.ids {
			f := decode(id)
			k := f.key()
			if v, ok := lo[f.machine]; !ok || k < v {
				lo[f.machine] = k
			}
			if v, ok := hi[f.machine]; !ok || k > v {
				hi[f.machine] = k
			}
		}
	}
	return lo, hi
}

// increasing reports whether a batch strictly increases, as NextIDs and
// every batch route promise.
func increasing(ids []core.ID) error {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return fmt.Errorf("batch of %d not strictly increasing at %d: %d %v after %d %v",
				len(ids), i, ids[i], decode(ids[i]), ids[i-1], decode(ids[i-1]))
		}
	}
	return nil
}

// TestDecodeMatchesCore cross-checks the hand decoder with core's Codec on
// IDs of both types, every method and the machine-range edges.
func TestDecodeMatchesCore(t *testing.T) {
	codec, err := core.NewCodec(core.Sorted, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []core.Fields{
		{Type: 0, Method: 0, Machine: 0, Time: 60304350, Seq: 0},
		{Type: 0, Method: 1, Machine: 924, Time: 1<<30 - 1, Seq: 1<<20 - 1},
		{Type: 0, Method: 2, Machine: 1023, Time: 1, Seq: 5},
		{Type: 1, Method: 1, Machine: 923, Time: 60304350123, Seq: 1023},
		{Type: 1, Method: 2, Machine: 1000, Time: 1<<40 - 1, Seq: 0},
	} {
		id, err := codec.Make(f)
		if err != nil {
			t.Fatal(err)
		}
		got, e := decode(id), codec.Explain(id)
		want := e.Fields()
		if got.typ != want.Type || got.method != want.Method || got.machine != want.Machine ||
			got.time != want.Time || got.seq != want.Seq || !got.instant().Equal(e.Instant) {
			t.Errorf("decode(%d) = %v; core explains %+v", id, got, e)
		}
	}
}

func TestDuplicates(t *testing.T) {
	ids := []core.ID{5, 1 << 40, 3, 5, 1<<63 + 7, 0, 1 << 40, 1 << 40, 1<<63 + 7, 2}
	got := duplicates(ids)
	if want := []core.ID{5, 1 << 40, 1<<63 + 7}; !slices.Equal(got, want) {
		t.Errorf("duplicates = %v; want %v", got, want)
	}
	if !slices.IsSorted(ids) {
		t.Errorf("not sorted: %v", ids)
	}
	if got := duplicates([]core.ID{9, 8, 7}); got != nil {
		t.Errorf("duplicates of distinct IDs = %v", got)
	}
}

// recorder is a testing.TB that keeps what check reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// TestLedgerCatches feeds check the faults it exists to find.
func TestLedgerCatches(t *testing.T) {
	codec, err := core.NewCodec(core.Sorted, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	now := uint64(time.Since(sortedEpoch) / time.Second)
	mk := func(method, machine, unit, seq uint64) core.ID {
		id, err := codec.Make(core.Fields{Method: method, Machine: machine, Time: unit, Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, tc := range []struct {
		name    string
		ordered bool
		ids     []core.ID
		want    string // in the report; "" for none
	}{
		{"fine", true, []core.ID{mk(1, 924, now, 1), mk(1, 925, now, 0), mk(1, 924, now, 2)}, ""},
		{"duplicate", false, []core.ID{mk(1, 924, now, 1), mk(1, 925, now, 0), mk(1, 924, now, 1)}, "issued more than once"},
		{"backwards", true, []core.ID{mk(1, 924, now, 2), mk(1, 925, now, 9), mk(1, 924, now, 1)}, "not strictly increasing"},
		{"backwards across units", true, []core.ID{mk(1, 924, now, 0), mk(1, 924, now-1, 5)}, "not strictly increasing"},
		{"unordered stream", false, []core.ID{mk(1, 924, now, 2), mk(1, 924, now, 1)}, ""},
		{"wrong method", false, []core.ID{mk(2, 924, now, 1)}, "method 2"},
		{"server ID in the embedded range", false, []core.ID{mk(1, 923, now, 1)}, "outside the server range"},
		{"from the future", false, []core.ID{mk(1, 924, now+3, 1)}, "ahead of the clock"},
		{"from the past", false, []core.ID{mk(1, 924, now-100, 1)}, "before the scenario began"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(core.MaxPeak)
			s := l.stream("s", tc.ordered, core.Central)
			s.add(tc.ids...)
			r := &recorder{}
			l.check(r)
			got := strings.Join(r.errs, "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("check reported %q; want %q", got, tc.want)
			}
		})
	}
}
