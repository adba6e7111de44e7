package segment

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// BufferState is a read-only snapshot of one tag's double buffer, in the
// terms of Leaf's SegmentBuffer (what leaf-server's /cache page shows).
type BufferState struct {
	// Tag is the tag (Leaf's key).
	Tag string
	// InitOK: a range came from the store (Leaf's initOk).
	InitOK bool
	// Pos is the slot issued from, 0 or 1 (Leaf's currentPos). Leaf fills
	// the slots in turn, so the tag's n-th range (from 0) is in slot n%2.
	Pos int
	// NextReady: the other slot holds the next range (Leaf's nextReady).
	NextReady bool
	// Segments are the two slots. A slot holding no range (before the
	// first fetch, or once its range is used up and no next one came) is
	// zero, as a fresh Leaf Segment is.
	Segments [2]SegmentState
}

// SegmentState is one slot of a BufferState, as Leaf's Segment.
type SegmentState struct {
	// Value is the next number the range hands out; Max once it is used up.
	Value int64
	// Max is one past the range's last number (Leaf's max, exclusive).
	Max int64
	// Step is the range's size.
	Step int64
}

// state is s as a slot; s is not the empty range of a tag not yet fetched.
func (s *seg) state() SegmentState {
	v := s.next.Load()
	if v > s.last+1 || v < s.first { // callers may run the counter past last
		v = s.last + 1
	}
	return SegmentState{Value: v, Max: s.last + 1, Step: s.last - s.first + 1}
}

// Buffers is a snapshot of every tag's buffers, sorted by tag. It takes
// each tag's lock briefly, as Stats does, and calls no store.
func (is *Sequencer) Buffers() []BufferState {
	m := *is.tags.Load()
	out := make([]BufferState, 0, len(m))
	for tag, b := range m {
		st := BufferState{Tag: tag}
		b.mu.Lock()
		cur, next := b.cur.Load(), b.next
		st.InitOK = b.fetches > 0
		b.mu.Unlock()
		if cur.ord >= 0 {
			st.Pos = int(cur.ord % 2)
			st.Segments[st.Pos] = cur.state()
		}
		if next != nil {
			// Before the first switch cur is the empty range and next the
			// first one, in slot 0 as Leaf loads it.
			if cur.ord < 0 {
				st.Pos = int(next.ord % 2)
			} else {
				st.NextReady = true
			}
			st.Segments[next.ord%2] = next.state()
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b BufferState) int { return strings.Compare(a.Tag, b.Tag) })
	return out
}

// Rows reads the store's rows now (Leaf's getAllLeafAllocs), within
// Config.StoreTimeout and ctx: ErrClosed after Close, ErrUnavailable
// wrapping the store's error if it fails.
func (is *Sequencer) Rows(ctx context.Context) ([]TagInfo, error) {
	if is.closed.Load() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, is.cfg.StoreTimeout)
	defer cancel()
	rows, err := is.store.Tags(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the store's rows: %w", ErrUnavailable, err)
	}
	return rows, nil
}
