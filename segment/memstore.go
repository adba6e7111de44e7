package segment

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// MemStore is a Store in memory, for tests and examples: one process only,
// lost on exit. Fail makes it answer errors, as a store that went down.
type MemStore struct {
	mu     sync.Mutex
	tags   map[string]*TagInfo
	err    error
	calls  int64
	closed bool
	now    func() time.Time
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{tags: map[string]*TagInfo{}, now: time.Now}
}

// Fail makes every later call answer err (wrapped); nil heals the store.
func (m *MemStore) Fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

// Calls counts Next calls answered, failed or not.
func (m *MemStore) Calls() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// SetMaxID overwrites a tag's max_id, as an operator's UPDATE would (or a
// store losing writes, when set lower).
func (m *MemStore) SetMaxID(tag string, maxID int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tags[tag]
	if t == nil {
		return fmt.Errorf("segment: memstore: tag %q: %w", tag, ErrUnknownTag)
	}
	t.MaxID = maxID
	return nil
}

func (m *MemStore) check(ctx context.Context) error {
	if m.closed {
		return fmt.Errorf("segment: memstore: %w", ErrClosed)
	}
	if m.err != nil {
		return fmt.Errorf("segment: memstore: %w", m.err)
	}
	return ctx.Err()
}

// Next advances tag's max_id by step (0: the stored step), as Leaf's
// transaction.
func (m *MemStore) Next(ctx context.Context, tag string, step int64) (Range, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if err := m.check(ctx); err != nil {
		return Range{}, err
	}
	t := m.tags[tag]
	if t == nil {
		return Range{}, fmt.Errorf("segment: memstore: tag %q: %w", tag, ErrUnknownTag)
	}
	if step < 0 {
		return Range{}, fmt.Errorf("%w: step %d is negative", ErrConfig, step)
	}
	if step == 0 {
		step = t.Step
	}
	if t.MaxID > math.MaxInt64-step {
		return Range{}, fmt.Errorf("segment: memstore: tag %q: max_id %d + step %d overflows int64", tag, t.MaxID, step)
	}
	t.MaxID += step
	t.Updated = m.now()
	return RangeAt(t.MaxID, step, t.Step), nil
}

// Tags lists the tags, sorted by name.
func (m *MemStore) Tags(ctx context.Context) ([]TagInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	out := make([]TagInfo, 0, len(m.tags))
	for _, t := range m.tags {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b TagInfo) int { return cmpString(a.Tag, b.Tag) })
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Create adds a tag; ErrTagExists if present.
func (m *MemStore) Create(ctx context.Context, t TagInfo) error {
	if err := t.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	if m.tags[t.Tag] != nil {
		return fmt.Errorf("segment: memstore: tag %q: %w", t.Tag, ErrTagExists)
	}
	t.Updated = m.now()
	m.tags[t.Tag] = &t
	return nil
}

// Close makes later calls fail with ErrClosed. Idempotent.
func (m *MemStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
