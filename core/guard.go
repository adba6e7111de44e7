package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// GuardStore keeps a time guard's high-water mark: an instant such that no
// ID was issued at or after it. A generator saves a reservation ahead of its
// clock before issuing into it, so after any crash the next generator for
// the same machine ID starts at or after the mark. Two stores exist: a file
// for one host (FileGuard) and Redis beside the machine-ID lease (package
// machineid), plus MemGuard for tests.
type GuardStore interface {
	// Load returns the stored mark, or the zero Time when there is none.
	Load(ctx context.Context) (time.Time, error)
	// Save stores mark durably before returning. Marks only grow, except
	// that Close saves the exact end of what was issued, which may lie
	// below the last reservation.
	Save(ctx context.Context, mark time.Time) error
}

// ErrGuardLocked: another process holds the file guard of this machine ID.
var ErrGuardLocked = errors.New("core: time guard file is locked by another process")

// Shape is what the time fields of a generator's IDs mean: the layout, the
// type, the epoch and the version. A mark is an instant; which IDs it
// covers depends on the shape it was written with, so stores that can
// record it (ShapedGuard) keep it beside the mark, and a generator with
// another shape starts only where its IDs cannot meet the old ones.
type Shape struct {
	Layout  Layout
	Type    Type
	EpochMs int64 // the epoch in Unix milliseconds (the layout's own when Config.Epoch is zero)
	Version uint8
}

// String describes the shape for messages.
func (s Shape) String() string {
	return fmt.Sprintf("layout %s, type %s, epoch %s, version %d", s.Layout, s.Type,
		time.UnixMilli(s.EpochMs).UTC().Format(time.RFC3339Nano), s.Version)
}

// GuardUse says who loads a mark: the shape a generator issues with and
// how far it may borrow ahead of its clock (a store beside a lease needs
// it to bound what an unknown earlier holder may have issued).
type GuardUse struct {
	Machine   MachineID
	Shape     Shape
	MaxBorrow time.Duration
}

// Mark is a stored high-water mark and the shape it was written with.
type Mark struct {
	// At is the mark; the zero Time when there is none.
	At time.Time
	// Shape is the shape of the generator that wrote it, when HasShape.
	Shape Shape
	// HasShape is false for a mark written before shapes were recorded
	// (read as written by the loading generator's own shape).
	HasShape bool
}

// ShapedGuard is a GuardStore that records the shape of the generator
// writing its mark. The generator calls LoadFor instead of Load when its
// store has it; every later Save then records use.Shape beside the mark.
// FileGuard, MemGuard and the Redis store of package machineid have it; a
// store without it is read as "same shape".
type ShapedGuard interface {
	GuardStore
	LoadFor(ctx context.Context, use GuardUse) (Mark, error)
}

// FileGuard stores the mark of one machine ID in a file of a directory,
// written atomically (temp file, fsync, rename, fsync of the directory). It
// also holds an exclusive lock on the file for as long as it is open, so a
// second process on the host cannot issue with the same machine ID from the
// same directory.
type FileGuard struct {
	path    string
	machine MachineID
	lock    *os.File
	loose   []string // Warnings

	mu     sync.Mutex
	closed bool
	shape  *Shape // recorded by every Save once LoadFor told it
}

// markFile is the stored form: the mark in milliseconds, with a readable
// copy, and the shape of the generator that wrote it. Files written before
// shapes were recorded have no layout field and are read as "same shape".
type markFile struct {
	Machine     MachineID `json:"machine"`
	MarkUnixMs  int64     `json:"mark_unix_ms"`
	Mark        string    `json:"mark"`
	Layout      *string   `json:"layout,omitempty"`
	Type        *uint8    `json:"type,omitempty"` // a number: Type's text form would change the stored format
	EpochUnixMs *int64    `json:"epoch_unix_ms,omitempty"`
	Version     *uint8    `json:"version,omitempty"`
}

// shape returns the recorded shape, if the file has one.
func (m markFile) shape() (Shape, bool, error) {
	if m.Layout == nil && m.Type == nil && m.EpochUnixMs == nil && m.Version == nil {
		return Shape{}, false, nil
	}
	if m.Layout == nil || m.Type == nil || m.EpochUnixMs == nil || m.Version == nil {
		return Shape{}, false, errors.New("the shape is incomplete")
	}
	l, err := ParseLayout(*m.Layout)
	if err != nil {
		return Shape{}, false, err
	}
	if Type(*m.Type) > MinGranularity || *m.Version > 1 {
		return Shape{}, false, fmt.Errorf("type %d or version %d out of range", *m.Type, *m.Version)
	}
	return Shape{Layout: l, Type: Type(*m.Type), EpochMs: *m.EpochUnixMs, Version: *m.Version}, true, nil
}

// Modes of the guard's directory and files. flock takes no notice of how
// a file was opened, so whoever can open the lock file, even read-only,
// can hold a shared lock on it and keep every later OpenFileGuard out:
// only the modes keep other users from it.
const (
	guardDirMode  = 0o700
	guardFileMode = 0o600 // the lock; the mark is written by os.CreateTemp, 0600 too
)

// OpenFileGuard opens (creating dir if needed) the guard of machine in dir
// and locks it. A directory it creates is 0700 and its files 0600; a lock
// file found with a looser mode (made by an older version) is narrowed. A
// directory that already exists keeps its mode: it may be the operator's,
// shared on purpose or not vesta's alone (--data-dir .), so a mode that
// lets every user write in it is reported by Warnings instead.
func OpenFileGuard(dir string, machine MachineID) (*FileGuard, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: time guard dir is empty", ErrConfig)
	}
	if err := os.MkdirAll(dir, guardDirMode); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGuard, err)
	}
	var loose []string
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGuard, err)
	} else if m := st.Mode().Perm(); modesMatter && m&0o002 != 0 {
		// Readable, or writable by a group (a volume shared through its
		// group, as Kubernetes' fsGroup makes it), is the operator's
		// choice; writable by every user lets anyone plant a lock or a
		// mark there.
		loose = append(loose, fmt.Sprintf("time guard directory %s is mode %04o: any user can create files in it, and so lock vesta out or plant a mark; chmod it 0700", dir, m))
	}
	base := "machine-" + strconv.Itoa(int(machine))
	// No symlinks: in a directory others can write, one could point the
	// lock (and the chmod below) at any file.
	lf, err := os.OpenFile(filepath.Join(dir, base+".lock"), os.O_RDWR|os.O_CREATE|noFollow, guardFileMode)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGuard, err)
	}
	if st, err := lf.Stat(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("%w: %w", ErrGuard, err)
	} else if m := st.Mode().Perm(); modesMatter && m&^guardFileMode != 0 {
		if err := lf.Chmod(guardFileMode); err != nil {
			loose = append(loose, fmt.Sprintf("time guard lock %s is mode %04o and cannot be narrowed to 0600 (%v): another user who can read it can lock vesta out", lf.Name(), m, err))
		}
	}
	if err := lockFile(lf); err != nil {
		lf.Close()
		return nil, fmt.Errorf("%w: %s (machine ID %d is in use on this host): %w", ErrGuardLocked, lf.Name(), machine, err)
	}
	return &FileGuard{path: filepath.Join(dir, base+".json"), machine: machine, lock: lf, loose: loose}, nil
}

// Warnings says what of the guard other users may reach, for the caller
// to log: a directory whose mode lets them in, a lock file that could not
// be narrowed. Nil when there is nothing to say.
func (f *FileGuard) Warnings() []string { return f.loose }

// Path is the file holding the mark.
func (f *FileGuard) Path() string { return f.path }

// Load reads the mark; a missing file is no mark, a damaged one an error
// (guessing could re-issue IDs).
func (f *FileGuard) Load(ctx context.Context) (time.Time, error) {
	m, err := f.load()
	return m.At, err
}

// LoadFor is Load with the shape the mark was written with; every later
// Save records use.Shape.
func (f *FileGuard) LoadFor(ctx context.Context, use GuardUse) (Mark, error) {
	m, err := f.load()
	if err != nil {
		return Mark{}, err
	}
	f.mu.Lock()
	f.shape = &use.Shape
	f.mu.Unlock()
	return m, nil
}

func (f *FileGuard) load() (Mark, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return Mark{}, nil
	}
	if err != nil {
		return Mark{}, fmt.Errorf("%w: %w", ErrGuard, err)
	}
	var m markFile
	err = json.Unmarshal(b, &m)
	var sh Shape
	var has bool
	if err == nil {
		sh, has, err = m.shape()
	}
	if err != nil || m.MarkUnixMs <= 0 {
		return Mark{}, fmt.Errorf("%w: %s is damaged (%v); remove it only if no ID was issued with this machine ID in the last minutes",
			ErrGuard, f.path, err)
	}
	return Mark{At: time.UnixMilli(m.MarkUnixMs).UTC(), Shape: sh, HasShape: has}, nil
}

// Save writes mark atomically and durably.
func (f *FileGuard) Save(ctx context.Context, mark time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("%w: file guard closed", ErrGuard)
	}
	ms := mark.UnixMilli()
	if mark.Sub(time.UnixMilli(ms)) > 0 {
		ms++ // round up: the mark must not fall below what was issued
	}
	mf := markFile{MarkUnixMs: ms, Mark: time.UnixMilli(ms).UTC().Format(time.RFC3339Nano), Machine: f.machine}
	if sh := f.shape; sh != nil {
		l := sh.Layout.String()
		typ := uint8(sh.Type)
		mf.Layout, mf.Type, mf.EpochUnixMs, mf.Version = &l, &typ, &sh.EpochMs, &sh.Version
	}
	b, _ := json.Marshal(mf)
	if err := writeFileSync(f.path, b); err != nil {
		return fmt.Errorf("%w: %w", ErrGuard, err)
	}
	return nil
}

// Close releases the lock. It is idempotent.
func (f *FileGuard) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	return f.lock.Close() // closing the descriptor drops the lock
}

func writeFileSync(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// MemGuard is an in-memory GuardStore for tests. It can be made to fail or
// to block its saves.
type MemGuard struct {
	mu    sync.Mutex
	mark  time.Time
	shape *Shape // of the mark; nil: none recorded
	use   *Shape // recorded by every Save once LoadFor told it
	saves int
	err   error
	gate  chan struct{} // when non-nil, Save waits for it to close
}

// NewMemGuard returns a MemGuard holding mark (zero: none).
func NewMemGuard(mark time.Time) *MemGuard { return &MemGuard{mark: mark} }

// Load returns the mark.
func (m *MemGuard) Load(ctx context.Context) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return time.Time{}, m.err
	}
	return m.mark, nil
}

// LoadFor returns the mark and its shape; every later Save records
// use.Shape.
func (m *MemGuard) LoadFor(ctx context.Context, use GuardUse) (Mark, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return Mark{}, m.err
	}
	m.use = &use.Shape
	mk := Mark{At: m.mark}
	if m.shape != nil {
		mk.Shape, mk.HasShape = *m.shape, true
	}
	return mk, nil
}

// SetShape stores sh as the shape of the mark, as if a generator of that
// shape had written it.
func (m *MemGuard) SetShape(sh Shape) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.shape = &sh
}

// Shape returns the shape recorded with the mark.
func (m *MemGuard) Shape() (Shape, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shape == nil {
		return Shape{}, false
	}
	return *m.shape, true
}

// Save stores mark, unless failing or blocked.
func (m *MemGuard) Save(ctx context.Context, mark time.Time) error {
	m.mu.Lock()
	gate := m.gate
	m.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.mark = mark
	if m.use != nil {
		m.shape = m.use
	}
	m.saves++
	return nil
}

// Mark returns the stored mark.
func (m *MemGuard) Mark() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mark
}

// Saves returns how many saves succeeded.
func (m *MemGuard) Saves() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}

// Fail makes every later Load and Save return err (nil heals).
func (m *MemGuard) Fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

// Block holds every later Save until the returned function is called.
func (m *MemGuard) Block() (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := make(chan struct{})
	m.gate = g
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			if m.gate == g {
				m.gate = nil
			}
			m.mu.Unlock()
			close(g)
		})
	}
}
