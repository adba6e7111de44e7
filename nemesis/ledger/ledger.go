package ledger

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Space 0 holds IDs; every segment tag gets a space of its own.
const IDs Space = 0

// DefaultShards is the shard count Open uses: at 24 bytes a record, 100 M
// records make shards of about 9 MiB, which Check sorts one at a time.
const DefaultShards = 256

// recordSize is the on-disk size of a record: space uint32, value uint64,
// source uint32, unix-nano int64, little endian.
const recordSize = 4 + 8 + 4 + 8

// writerBuf is how many bytes a Writer gathers for one shard before it
// writes them: large enough that a write is rare, small enough that a
// Writer's buffers (one per shard) stay around a megabyte.
const writerBuf = 170 * recordSize

// namesFile holds what Reopen needs besides the shards.
const namesFile = "names.json"

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
	// MaxRepeats bounds Result.Repeats; zero is 100, negative lists none.
	MaxRepeats int
	// Visit, if set, is called with every entry, shard by shard (within a
	// shard by space, value and time), so that a caller can check each
	// value (e.g. that an ID decodes to its issuer) without a second pass.
	Visit func(Entry)
}

// Errors.
var (
	// ErrClosed: a write after Close, or to a reopened ledger.
	ErrClosed = errors.New("ledger: closed")
	// ErrNotEmpty: Open on a directory that already holds files, which
	// would mix two runs' records.
	ErrNotEmpty = errors.New("ledger: directory not empty")
	// ErrCorrupt: a shard or the names file is not what a ledger writes.
	ErrCorrupt = errors.New("ledger: corrupt")
)

// Ledger is an on-disk, append-only record of values. Its methods are
// safe for concurrent use; a Writer is not.
type Ledger struct {
	dir    string
	shards []shard
	closed atomic.Bool

	mu      sync.Mutex // guards sources, spaces and Close
	sources []string
	spaces  []string // index = Space; spaces[0] = "ids"
}

// shard is one file of records; its file is created on the first write,
// so that a small ledger holds few descriptors.
type shard struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	closed bool
}

// names is the content of namesFile.
type names struct {
	Shards  int      `json:"shards"`
	Sources []string `json:"sources"`
	Spaces  []string `json:"spaces"`
}

// Open makes a ledger of DefaultShards shards in dir, which must be empty
// or absent.
func Open(dir string) (*Ledger, error) { return OpenShards(dir, DefaultShards) }

// OpenShards is Open with n shards: more shards, less memory for Check.
func OpenShards(dir string, n int) (*Ledger, error) {
	if n < 1 {
		return nil, fmt.Errorf("ledger: open %s: %d shards", dir, n)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ledger: open: %w", err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ledger: open: %w", err)
	}
	if len(des) > 0 {
		return nil, fmt.Errorf("open %s (holds %s): %w", dir, des[0].Name(), ErrNotEmpty)
	}
	return newLedger(dir, n, []string{"ids"}, nil), nil
}

// Reopen loads a ledger that a Close wrote to dir, for Check only.
func Reopen(dir string) (*Ledger, error) {
	path := filepath.Join(dir, namesFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: reopen: %w", err)
	}
	var nm names
	if err := json.Unmarshal(b, &nm); err != nil {
		return nil, fmt.Errorf("reopen %s: %w: %v", path, ErrCorrupt, err)
	}
	if nm.Shards < 1 || len(nm.Spaces) < 1 {
		return nil, fmt.Errorf("reopen %s: %w: %d shards, %d spaces", path, ErrCorrupt, nm.Shards, len(nm.Spaces))
	}
	l := newLedger(dir, nm.Shards, nm.Spaces, nm.Sources)
	l.closed.Store(true)
	for i := range l.shards {
		l.shards[i].closed = true
	}
	return l, nil
}

func newLedger(dir string, n int, spaces, sources []string) *Ledger {
	l := &Ledger{dir: dir, shards: make([]shard, n), spaces: spaces, sources: sources}
	for i := range l.shards {
		l.shards[i].path = filepath.Join(dir, fmt.Sprintf("shard-%04d.bin", i))
	}
	return l
}

// Source registers a source by name and returns its number; the same
// name gives the same number. Names registered after Close are not saved.
func (l *Ledger) Source(name string) Source { return Source(l.register(&l.sources, name, 0)) }

// SourceName is the name Source registered.
func (l *Ledger) SourceName(s Source) string { return l.name(&l.sources, int(s), "source") }

// Tag returns the space of a segment tag's numbers. Tags registered after
// Close are not saved.
func (l *Ledger) Tag(tag string) Space {
	return Space(l.register(&l.spaces, tag, 1)) // a tag named "ids" is not space 0
}

// SpaceName is "ids" for space 0, else the tag.
func (l *Ledger) SpaceName(s Space) string { return l.name(&l.spaces, int(s), "space") }

// register returns the index of name in *names from index from on,
// appending it when it is not there.
func (l *Ledger) register(names *[]string, name string, from int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index((*names)[from:], name); i >= 0 {
		return from + i
	}
	*names = append(*names, name)
	return len(*names) - 1
}

// name is (*names)[i], or kind-i for an index never registered.
func (l *Ledger) name(names *[]string, i int, kind string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < len(*names) {
		return (*names)[i]
	}
	return fmt.Sprintf("%s-%d", kind, i)
}

// shardOf spreads (space, value) over n shards. It must not depend on the
// process (no seeded hash), since Reopen reads what another one wrote;
// the mixer is splitmix64's finalizer, so that sequential values spread.
func shardOf(sp Space, v uint64, n int) int {
	x := v ^ uint64(sp)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(n))
}

// Writer records values for one goroutine.
type Writer struct {
	l   *Ledger
	src Source
	buf [][]byte // per shard, allocated on first use
}

// Writer returns a writer whose records carry src.
func (l *Ledger) Writer(src Source) *Writer {
	return &Writer{l: l, src: src, buf: make([][]byte, len(l.shards))}
}

// Add records values of space sp received at at.
func (w *Writer) Add(sp Space, at time.Time, values ...uint64) error {
	if w.l.closed.Load() {
		return ErrClosed
	}
	ns := at.UnixNano()
	for _, v := range values {
		i := shardOf(sp, v, len(w.buf))
		b := w.buf[i]
		if b == nil {
			b = make([]byte, 0, writerBuf)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(sp))
		b = binary.LittleEndian.AppendUint64(b, v)
		b = binary.LittleEndian.AppendUint32(b, uint32(w.src))
		b = binary.LittleEndian.AppendUint64(b, uint64(ns))
		w.buf[i] = b
		if len(b)+recordSize > cap(b) {
			if err := w.write(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush writes what the writer buffered.
func (w *Writer) Flush() error {
	if w.l.closed.Load() {
		return ErrClosed
	}
	for i := range w.buf {
		if err := w.write(i); err != nil {
			return err
		}
	}
	return nil
}

// write appends shard i's buffer to its file. Whole buffers are written
// under the shard's lock, so a file only ever holds whole records.
func (w *Writer) write(i int) error {
	b := w.buf[i]
	if len(b) == 0 {
		return nil
	}
	s := &w.l.shards[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.f == nil {
		f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		s.f = f
	}
	if _, err := s.f.Write(b); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	w.buf[i] = b[:0]
	return nil
}

// Close ends writing: it syncs and closes the shard files and saves the
// names of sources and spaces for Reopen. Writers must be flushed first;
// what they still buffer is lost. Check may follow. Closing again, or
// closing a reopened ledger, returns ErrClosed.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Swap(true) {
		return ErrClosed
	}
	var errs []error
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		s.closed = true
		if s.f != nil {
			if err := s.f.Sync(); err != nil {
				errs = append(errs, fmt.Errorf("ledger: %w", err))
			}
			if err := s.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("ledger: %w", err))
			}
			s.f = nil
		}
		s.mu.Unlock()
	}
	if err := l.saveNames(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// saveNames writes namesFile through a synced temporary file, so that a
// crash leaves either no names or whole ones. l.mu is held.
func (l *Ledger) saveNames() error {
	b, err := json.MarshalIndent(names{Shards: len(l.shards), Sources: l.sources, Spaces: l.spaces}, "", "\t")
	if err != nil {
		return fmt.Errorf("ledger: names: %w", err)
	}
	path := filepath.Join(l.dir, namesFile)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

// record is an entry as Check sorts it: 24 bytes, where an Entry (with
// its time.Time) takes 48.
type record struct {
	space  uint32
	source uint32
	value  uint64
	at     int64
}

func (r record) entry() Entry {
	return Entry{Space: Space(r.space), Value: r.value, Source: Source(r.source), At: time.Unix(0, r.at)}
}

func cmpRecord(a, b record) int {
	switch {
	case a.space != b.space:
		return cmp.Compare(a.space, b.space)
	case a.value != b.value:
		return cmp.Compare(a.value, b.value)
	case a.at != b.at:
		if a.at < b.at {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.source, b.source)
}

// Check finds every value recorded more than once in its space. It reads
// one shard at a time, so its memory is about one shard's records (plus
// the listed repeats). On a ledger not yet closed it sees what writers
// have flushed.
func (l *Ledger) Check(opt Options) (Result, error) {
	if opt.MaxRepeats == 0 {
		opt.MaxRepeats = 100
	}
	r := Result{PerSpace: map[Space]int64{}}
	var (
		raw  []byte
		recs []record
	)
	for i := range l.shards {
		var err error
		raw, err = l.readShard(i, raw)
		if err != nil {
			return Result{}, err
		}
		// Grown to the shard's size at once, not by appending, so that
		// no outgrown copies add to the peak.
		recs = slices.Grow(recs[:0], len(raw)/recordSize)
		for b := raw; len(b) > 0; b = b[recordSize:] {
			recs = append(recs, record{
				space:  binary.LittleEndian.Uint32(b),
				value:  binary.LittleEndian.Uint64(b[4:]),
				source: binary.LittleEndian.Uint32(b[12:]),
				at:     int64(binary.LittleEndian.Uint64(b[16:])),
			})
		}
		slices.SortFunc(recs, cmpRecord)
		r.checkShard(recs, opt)
	}
	return r, nil
}

// readShard reads shard i's whole records into buf's storage. The size
// is taken under the shard's lock, so that no half-written buffer is read
// from a ledger still being written.
func (l *Ledger) readShard(i int, buf []byte) ([]byte, error) {
	s := &l.shards[i]
	s.mu.Lock()
	f, err := os.Open(s.path)
	var size int64
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			size = fi.Size()
		}
	}
	s.mu.Unlock()
	if errors.Is(err, os.ErrNotExist) {
		return buf[:0], nil // no value fell in this shard
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	if size%recordSize != 0 {
		return nil, fmt.Errorf("%s: %w: %d bytes, not whole records", s.path, ErrCorrupt, size)
	}
	buf = slices.Grow(buf[:0], int(size))[:size]
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("ledger: read %s: %w", s.path, err)
	}
	return buf, nil
}

// checkShard counts a sorted shard's records, finds its runs of equal
// (space, value) and keeps the MaxRepeats lowest of all shards so far.
func (r *Result) checkShard(recs []record, opt Options) {
	var found []Repeat
	for i := 0; i < len(recs); {
		a := recs[i]
		j := i + 1
		for j < len(recs) && recs[j].space == a.space && recs[j].value == a.value {
			j++
		}
		n := int64(j - i)
		r.PerSpace[Space(a.space)] += n
		if a.space == uint32(IDs) {
			r.IDs += n
		} else {
			r.Numbers += n
		}
		if n > 1 {
			r.RepeatCount++
			// The shard is sorted, so its first MaxRepeats are all it
			// can add to the list.
			if len(found) < opt.MaxRepeats {
				rp := Repeat{Space: Space(a.space), Value: a.value, Entries: make([]Entry, 0, n)}
				for _, e := range recs[i:j] {
					rp.Entries = append(rp.Entries, e.entry())
				}
				found = append(found, rp)
			}
		}
		if opt.Visit != nil {
			for _, e := range recs[i:j] {
				opt.Visit(e.entry())
			}
		}
		i = j
	}
	if len(found) == 0 {
		return
	}
	r.Repeats = append(r.Repeats, found...)
	slices.SortFunc(r.Repeats, func(a, b Repeat) int {
		if a.Space != b.Space {
			return cmp.Compare(a.Space, b.Space)
		}
		return cmp.Compare(a.Value, b.Value)
	})
	if len(r.Repeats) > opt.MaxRepeats {
		clear(r.Repeats[opt.MaxRepeats:])
		r.Repeats = r.Repeats[:opt.MaxRepeats]
	}
}
