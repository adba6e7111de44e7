package segment_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/segment"
)

// Store down: issuing goes on from the buffers, then fails at once with
// ErrUnavailable (no number at all, never a repeated one), Ready says why,
// and once the store is back the issuer recovers by itself, with no call
// needed.
func TestStoreDownThenRecovers(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, 100, "t", "idle")
	cfg, clk := fakeConfig()
	cfg.Preload = []string{"t"}
	is := segtest.Open(t, st, cfg)
	seen := map[int64]bool{}
	take := func() (int64, error) {
		n, err := is.Next(ctx, "t")
		if err == nil {
			if seen[n] {
				t.Fatalf("%d issued twice", n)
			}
			seen[n] = true
		}
		return n, err
	}
	// Into the range past the threshold: the next range is fetched.
	for range 20 {
		if _, err := take(); err != nil {
			t.Fatal(err)
		}
	}
	waittest.Until(t, "the prefetch", func() bool { s, _ := is.Stats("t"); return s.RangesFetched == 2 })

	st.Fail(errDown)
	// 180 numbers are buffered: all come out while the store is down.
	for range 100 {
		if _, err := take(); err != nil {
			t.Fatalf("buffered number refused: %v", err)
		}
	}
	// Into the second range: its prefetch failed, but numbers are left.
	waittest.Until(t, "the failed prefetch", func() bool { s, _ := is.Stats("t"); return s.LastError != nil })
	if err := is.Ready(); err != nil {
		t.Fatalf("Ready with numbers left: %v", err)
	}
	for range 80 {
		if _, err := take(); err != nil {
			t.Fatalf("buffered number refused: %v", err)
		}
	}
	// Buffers empty: clean errors, fast.
	for range 5 {
		_, err := take()
		if !errors.Is(err, segment.ErrUnavailable) || !errors.Is(err, errDown) {
			t.Fatalf("Next with the store down and buffers empty = %v", err)
		}
	}
	if err := is.Ready(); !errors.Is(err, segment.ErrUnavailable) {
		t.Fatalf("Ready = %v, want ErrUnavailable", err)
	}
	s, _ := is.Stats("t")
	if s.StoreErrors == 0 || s.Remaining != 0 || !errors.Is(s.LastError, errDown) {
		t.Fatalf("Stats = %+v", s)
	}
	// The background retry runs every RetryBackoff while the store is down.
	// Each wait starts in a goroutine of its own: the clock moves only once
	// it waits, or the retry would wait a backoff past the move.
	asleep, cancel := context.WithTimeout(ctx, waittest.Timeout)
	defer cancel()
	calls := st.Calls()
	for range 3 {
		if err := clk.BlockUntil(asleep, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(cfg.RetryBackoff)
		waittest.Until(t, "a retry", func() bool { return st.Calls() > calls })
		calls = st.Calls()
	}
	st.Fail(nil)
	if err := clk.BlockUntil(asleep, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(cfg.RetryBackoff)
	waittest.Until(t, "recovery", func() bool { return is.Ready() == nil })
	n, err := take()
	if err != nil || n <= 200 {
		t.Fatalf("after recovery: %d, %v", n, err)
	}
}

// A store that goes back (lost writes) is refused: the issuer does not hand
// out numbers it handed out before.
func TestStoreWentBack(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, 10, "t")
	cfg, clk := fakeConfig()
	cfg.Threshold = 1
	is := segtest.Open(t, st, cfg)
	// 9 of the first range [1, 10]: the 10th would start the prefetch,
	// which must not run before the store goes back.
	got, err := is.NextN(ctx, "t", 9)
	if err != nil || got[8] != 9 {
		t.Fatalf("NextN = %v, %v", got, err)
	}
	if err := st.SetMaxID("t", 1); err != nil { // the store forgot everything
		t.Fatal(err)
	}
	if n, err := is.Next(ctx, "t"); err != nil || n != 10 { // starts the prefetch
		t.Fatalf("Next = %d, %v; want 10", n, err)
	}
	waittest.Until(t, "the refused range", func() bool { s, _ := is.Stats("t"); return s.LastError != nil })
	if _, err := is.Next(ctx, "t"); !errors.Is(err, segment.ErrBadRange) || !errors.Is(err, segment.ErrUnavailable) {
		t.Fatalf("Next = %v, want ErrBadRange", err)
	}
	// Each retry takes (and drops) a range; once the store passes what was
	// issued, issuing resumes above it. A retry's fetch runs in the
	// background: a Next meanwhile fails fast, so wait for it rather than
	// count attempts.
	waittest.Until(t, "issuing to resume", func() bool {
		clk.Advance(cfg.RetryBackoff)
		n, err := is.Next(ctx, "t")
		if err != nil {
			return false
		}
		if n <= 10 {
			t.Fatalf("reissued %d", n)
		}
		return true
	})
}

// Rows holding max_id 0 or below (Leaf would hand out 0 and negatives) issue
// from 1.
func TestRangeBelowOne(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, 10, "t")
	if err := st.SetMaxID("t", -15); err != nil {
		t.Fatal(err)
	}
	is := segtest.Open(t, st, segment.DefaultConfig())
	n, err := is.Next(ctx, "t")
	if err != nil || n != 1 {
		t.Fatalf("Next = %d, %v; want 1", n, err)
	}
}

func TestClose(t *testing.T) {
	ctx := context.Background()
	gate := newGate(newStore(t, 10, "t"))
	is, err := segment.Open(ctx, gate, segment.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	gate.close()
	done := make(chan error)
	go func() { _, err := is.Next(ctx, "t"); done <- err }()
	<-gate.started
	// Close cancels the fetch in flight and releases the waiting caller.
	if err := is.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, segment.ErrClosed) {
		t.Fatalf("caller waiting at Close got %v", err)
	}
	if err := is.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := is.Next(ctx, "t"); !errors.Is(err, segment.ErrClosed) {
		t.Fatalf("Next after Close = %v", err)
	}
	if err := is.Ready(); !errors.Is(err, segment.ErrClosed) {
		t.Fatalf("Ready after Close = %v", err)
	}
}

// Several issuers on one store, many tags, 5 M numbers: none twice, and
// each caller's numbers of a tag increase.
func TestLedgerMemStore(t *testing.T) {
	const issuers, tagCount, callers, perCaller = 4, 16, 32, 160_000 // 5.12 M numbers
	tags := make([]string, tagCount)
	for i := range tags {
		tags[i] = fmt.Sprintf("tag-%02d", i)
	}
	st := newStore(t, 1000, tags...)
	iss := make([]*segment.Sequencer, issuers)
	for i := range iss {
		cfg := segment.DefaultConfig()
		cfg.MaxStep = 100_000
		iss[i] = segtest.Open(t, st, cfg)
	}
	n := segtest.Ledger(t, iss, tags, callers, perCaller)
	if n < 5_000_000 {
		t.Fatalf("ledger of %d numbers", n)
	}
	t.Logf("%d numbers, 0 repeats", n)
}
