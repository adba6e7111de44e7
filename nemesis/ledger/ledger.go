package ledger

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Space 0 holds IDs; every segment tag gets a space of its own.
const IDs Space = 0

// Space is the namespace of a value: IDs, or one tag's numbers.
type Space uint32

// Source names who received a value: a caller, with the process that
// issued it (e.g. "client-2 via A").
type Source uint32

// Entry is one record: a value handed to a source at an instant.
type Entry struct {
	Space  Space
	Value  uint64
	Source Source
	At     time.Time
}

// Repeat is a value handed out more than once, with every entry that
// carried it, in the order they were recorded.
type Repeat struct {
	Space   Space
	Value   uint64
	Entries []Entry
}

// Result is what Check found.
type Result struct {
	// IDs and Numbers count the values recorded in space 0 and in all tag
	// spaces.
	IDs, Numbers int64
	// PerSpace counts the values of each space.
	PerSpace map[Space]int64
	// Repeats are the values recorded more than once (at most the
	// Options.MaxRepeats first, by space then value); RepeatCount counts
	// them all.
	Repeats     []Repeat
	RepeatCount int64
}

// Options tune Check.
type Options struct {
	// MaxRepeats bounds Result.Repeats; zero is 100.
	MaxRepeats int
}

// Errors.
var (
	// ErrClosed: a write or a registration after Close.
	ErrClosed = errors.New("ledger: closed")
)

// Ledger is an on-disk, append-only record of values. Its methods are
// safe for concurrent use; a Writer is not.
type Ledger struct {
	dir string

	mu      sync.Mutex
	closed  bool
	sources []string
	spaces  []string // index = Space; spaces[0] = "ids"
	entries []Entry  // placeholder store, replaced by shard files
}

// Open makes a ledger in dir, which must be empty or absent.
func Open(dir string) (*Ledger, error) {
	return &Ledger{dir: dir, spaces: []string{"ids"}}, nil
}

// Source registers a source by name and returns its number; the same
// name gives the same number.
func (l *Ledger) Source(name string) Source {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.sources {
		if s == name {
			return Source(i)
		}
	}
	l.sources = append(l.sources, name)
	return Source(len(l.sources) - 1)
}

// SourceName is the name Source registered.
func (l *Ledger) SourceName(s Source) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int(s) < len(l.sources) {
		return l.sources[s]
	}
	return fmt.Sprintf("source-%d", s)
}

// Tag returns the space of a segment tag's numbers.
func (l *Ledger) Tag(tag string) Space {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.spaces {
		if i > 0 && s == tag {
			return Space(i)
		}
	}
	l.spaces = append(l.spaces, tag)
	return Space(len(l.spaces) - 1)
}

// SpaceName is "ids" for space 0, else the tag.
func (l *Ledger) SpaceName(s Space) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int(s) < len(l.spaces) {
		return l.spaces[s]
	}
	return fmt.Sprintf("space-%d", s)
}

// Writer records values for one goroutine.
type Writer struct {
	l   *Ledger
	src Source
	buf []Entry
}

// Writer returns a writer whose records carry src.
func (l *Ledger) Writer(src Source) *Writer { return &Writer{l: l, src: src} }

// Add records values of space sp received at at.
func (w *Writer) Add(sp Space, at time.Time, values ...uint64) error {
	for _, v := range values {
		w.buf = append(w.buf, Entry{Space: sp, Value: v, Source: w.src, At: at})
	}
	if len(w.buf) >= 4096 {
		return w.Flush()
	}
	return nil
}

// Flush writes what the writer buffered.
func (w *Writer) Flush() error {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	if w.l.closed {
		return ErrClosed
	}
	w.l.entries = append(w.l.entries, w.buf...)
	w.buf = w.buf[:0]
	return nil
}

// Close ends writing; Check may follow. Writers must be flushed first.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}

// Check finds every value recorded more than once in its space.
func (l *Ledger) Check(opt Options) (Result, error) {
	if opt.MaxRepeats == 0 {
		opt.MaxRepeats = 100
	}
	l.mu.Lock()
	es := append([]Entry(nil), l.entries...)
	l.mu.Unlock()
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Space != es[j].Space {
			return es[i].Space < es[j].Space
		}
		return es[i].Value < es[j].Value
	})
	r := Result{PerSpace: map[Space]int64{}}
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && es[j].Space == es[i].Space && es[j].Value == es[i].Value {
			j++
		}
		if j-i > 1 {
			r.RepeatCount++
			if len(r.Repeats) < opt.MaxRepeats {
				r.Repeats = append(r.Repeats, Repeat{Space: es[i].Space, Value: es[i].Value, Entries: es[i:j]})
			}
		}
		i = j
	}
	for _, e := range es {
		r.PerSpace[e.Space]++
		if e.Space == IDs {
			r.IDs++
		} else {
			r.Numbers++
		}
	}
	return r, nil
}
