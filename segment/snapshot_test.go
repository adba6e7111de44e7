package segment_test

import (
	"context"
	"errors"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/segment"
)

// Buffers shows Leaf's double buffer as leaf-server's /cache page does
// (LeafMonitorController.getCache reads SegmentBuffer's initOk,
// currentPos, nextReady and both Segments' value, max, step): ranges fill
// the slots in turn, value is the next number, max is exclusive.
func TestBuffers(t *testing.T) {
	ctx := context.Background()
	cfg, _ := fakeConfig()
	is := segtest.Open(t, newStore(t, 100, "a", "b"), cfg)
	get := func(tag string) segment.BufferState {
		t.Helper()
		for _, b := range is.Buffers() {
			if b.Tag == tag {
				return b
			}
		}
		t.Fatalf("Buffers has no %q", tag)
		return segment.BufferState{}
	}
	next := func(n int) {
		t.Helper()
		for range n {
			if _, err := is.Next(ctx, "a"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := is.Buffers(); len(got) != 2 || got[0].Tag != "a" || got[1].Tag != "b" {
		t.Fatalf("Buffers = %+v, want a and b in order", got)
	}
	// Before the first call: Leaf's fresh SegmentBuffer, all zero.
	if got := get("a"); got != (segment.BufferState{Tag: "a"}) {
		t.Fatalf("before use: %+v", got)
	}
	type slots = [2]segment.SegmentState
	for _, step := range []struct {
		what     string
		numbers  int
		awaitNew bool // wait for the next range's fetch
		want     segment.BufferState
	}{
		{"after 1 number", 1, false, segment.BufferState{InitOK: true, Segments: slots{{Value: 2, Max: 101, Step: 100}}}},
		// The 11th number starts the fetch of the next range, into slot 1.
		{"next range fetched", 10, true, segment.BufferState{InitOK: true, NextReady: true,
			Segments: slots{{Value: 12, Max: 101, Step: 100}, {Value: 101, Max: 201, Step: 100}}}},
		// Past the first range: slot 1 is current, slot 0 empty until the
		// third range (a doubled step, the clock not having moved) lands there.
		{"after the switch", 90, false, segment.BufferState{InitOK: true, Pos: 1, Segments: slots{1: {Value: 102, Max: 201, Step: 100}}}},
		{"third range fetched", 10, true, segment.BufferState{InitOK: true, Pos: 1, NextReady: true,
			Segments: slots{{Value: 201, Max: 401, Step: 200}, {Value: 112, Max: 201, Step: 100}}}},
	} {
		next(step.numbers)
		if step.awaitNew {
			waittest.Until(t, step.what, func() bool { return get("a").NextReady })
		}
		step.want.Tag = "a"
		if got := get("a"); got != step.want {
			t.Fatalf("%s:\n got %+v\nwant %+v", step.what, got, step.want)
		}
	}
	// A used-up range with no next one shows max as its value.
	next(89 + 200)
	if got := get("a").Segments[0]; got.Value != 401 || got.Max != 401 {
		t.Fatalf("slot 0 used up: %+v", got)
	}
}

// Rows reads the store each time (Leaf's getAllLeafAllocs); a failing
// store is ErrUnavailable, a closed issuer ErrClosed.
func TestRows(t *testing.T) {
	ctx := context.Background()
	cfg, _ := fakeConfig()
	store := newStore(t, 10, "a", "b")
	is := segtest.Open(t, store, cfg)
	if err := store.Create(ctx, segment.TagInfo{Tag: "c", MaxID: 5, Step: 7, Description: "new"}); err != nil {
		t.Fatal(err)
	}
	rows, err := is.Rows(ctx)
	if err != nil || len(rows) != 3 || rows[2].Tag != "c" || rows[2].MaxID != 5 || rows[2].Step != 7 || rows[2].Description != "new" {
		t.Fatalf("Rows = %+v, %v", rows, err)
	}
	errDown := errors.New("connection refused")
	store.Fail(errDown)
	if _, err := is.Rows(ctx); !errors.Is(err, segment.ErrUnavailable) || !errors.Is(err, errDown) {
		t.Fatalf("Rows with the store down: %v", err)
	}
	store.Fail(nil)
	is.Close()
	if _, err := is.Rows(ctx); !errors.Is(err, segment.ErrClosed) {
		t.Fatalf("Rows after Close: %v", err)
	}
}
