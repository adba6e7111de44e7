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

// FileGuard stores the mark of one machine ID in a file of a directory,
// written atomically (temp file, fsync, rename, fsync of the directory). It
// also holds an exclusive lock on the file for as long as it is open, so a
// second process on the host cannot issue with the same machine ID from the
// same directory.
type FileGuard struct {
	path    string
	machine MachineID
	lock    *os.File

	mu     sync.Mutex
	closed bool
}

// markFile is the stored form: the mark in milliseconds, with a readable copy.
type markFile struct {
	Machine    MachineID `json:"machine"`
	MarkUnixMs int64     `json:"mark_unix_ms"`
	Mark       string    `json:"mark"`
}

// OpenFileGuard opens (creating dir if needed) the guard of machine in dir
// and locks it.
func OpenFileGuard(dir string, machine MachineID) (*FileGuard, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: time guard dir is empty", ErrInvalidConfig)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGuard, err)
	}
	base := "machine-" + strconv.Itoa(int(machine))
	lf, err := os.OpenFile(filepath.Join(dir, base+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGuard, err)
	}
	if err := lockFile(lf); err != nil {
		lf.Close()
		return nil, fmt.Errorf("%w: %s (machine ID %d is in use on this host): %w", ErrGuardLocked, lf.Name(), machine, err)
	}
	return &FileGuard{path: filepath.Join(dir, base+".json"), machine: machine, lock: lf}, nil
}

// Path is the file holding the mark.
func (f *FileGuard) Path() string { return f.path }

// Load reads the mark; a missing file is no mark, a damaged one an error
// (guessing could re-issue IDs).
func (f *FileGuard) Load(ctx context.Context) (time.Time, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", ErrGuard, err)
	}
	var m markFile
	if err := json.Unmarshal(b, &m); err != nil || m.MarkUnixMs <= 0 {
		return time.Time{}, fmt.Errorf("%w: %s is damaged (%v); remove it only if no ID was issued with this machine ID in the last minutes",
			ErrGuard, f.path, err)
	}
	return time.UnixMilli(m.MarkUnixMs).UTC(), nil
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
	b, _ := json.Marshal(markFile{MarkUnixMs: ms, Mark: time.UnixMilli(ms).UTC().Format(time.RFC3339Nano),
		Machine: f.machine})
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
