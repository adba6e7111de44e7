// Package segtest holds test helpers shared by the tests of segment and its
// stores: an issuer closed with the test, and a ledger that runs callers
// over several issuers sharing a store and checks every number handed out.
package segtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/vesta-go/vesta/segment"
)

// Open opens an Issuer on st, closed at the end of the test.
func Open(t testing.TB, st segment.Store, cfg segment.Config) *segment.Sequencer {
	t.Helper()
	is, err := segment.Open(context.Background(), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = is.Close() })
	return is
}

// StoreLedger is the ledger test of a store: 16 tags created with step 500
// through one store, then 4 issuers, each on a store of its own from open
// (its own pool or client) and with MaxStep 20,000 so that reservations
// contend, run Ledger with 32 callers of 160,000 numbers. It returns the
// issuers, the tags and how many numbers were checked.
func StoreLedger(t testing.TB, open func() segment.Store) (iss []*segment.Sequencer, tags []string, n int) {
	t.Helper()
	ctx := context.Background()
	setup := open()
	tags = make([]string, 16)
	for i := range tags {
		tags[i] = fmt.Sprintf("ledger-%02d", i)
		if err := setup.Create(ctx, segment.TagInfo{Tag: tags[i], MaxID: 1, Step: 500}); err != nil {
			t.Fatal(err)
		}
	}
	iss = make([]*segment.Sequencer, 4)
	for i := range iss {
		cfg := segment.DefaultConfig()
		cfg.MaxStep = 20_000
		iss[i] = Open(t, open(), cfg)
	}
	return iss, tags, Ledger(t, iss, tags, 32, 160_000)
}

// Ledger runs callers goroutines, spread over the issuers (which share a
// store), each taking perCaller numbers over tags (a fifth by Next, the
// rest by NextN of 97), and fails the test if a tag's number is issued
// twice or a caller's numbers of a tag do not increase. It returns how
// many numbers it checked.
func Ledger(t testing.TB, issuers []*segment.Sequencer, tags []string, callers, perCaller int) int {
	t.Helper()
	got := Callers(callers, len(tags), func(c int, got [][]int64) {
		ctx := context.Background()
		is := issuers[c%len(issuers)]
		for done := 0; done < perCaller; {
			ti := (c + done/97) % len(tags)
			if done%5 == 0 {
				n, err := is.Next(ctx, tags[ti])
				if err != nil {
					t.Error(err)
					return
				}
				got[ti] = append(got[ti], n)
				done++
				continue
			}
			ns, err := is.NextN(ctx, tags[ti], 97)
			if err != nil {
				t.Error(err)
				return
			}
			got[ti] = append(got[ti], ns...)
			done += len(ns)
		}
	})()
	if t.Failed() {
		t.FailNow()
	}
	return Check(t, got)
}

// Callers runs callers goroutines, each calling body with its number
// and its numbers by tag (tags of them, to append to in the order it
// receives them), and returns a wait for them that returns caller -> tag
// -> numbers, for Check.
func Callers(callers, tags int, body func(c int, got [][]int64)) (wait func() [][][]int64) {
	got := make([][][]int64, callers)
	var wg sync.WaitGroup
	for c := range callers {
		got[c] = make([][]int64, tags)
		wg.Go(func() { body(c, got[c]) })
	}
	return func() [][][]int64 { wg.Wait(); return got }
}

// Check fails the test on a number issued twice within a tag, or a caller's
// numbers of a tag not increasing; got is caller -> tag -> numbers in the
// order the caller received them. Numbers must be positive. It returns how
// many numbers it checked.
func Check(t testing.TB, got [][][]int64) int {
	t.Helper()
	total := 0
	if len(got) == 0 {
		return 0
	}
	for ti := range got[0] {
		seen := newSet()
		for c := range got {
			prev := int64(0)
			for _, n := range got[c][ti] {
				if n <= prev {
					t.Fatalf("tag %d: caller %d got %d after %d", ti, c, n, prev)
				}
				prev = n
				if !seen.add(n) {
					t.Fatalf("tag %d: %d issued twice", ti, n)
				}
				total++
			}
		}
	}
	return total
}

// set is a sparse bitmap: numbers after a loss jump are far apart.
type set map[int64]*[64]uint64 // block of 4096 numbers

func newSet() set { return set{} }

func (s set) add(n int64) bool {
	blk := s[n>>12]
	if blk == nil {
		blk = new([64]uint64)
		s[n>>12] = blk
	}
	i := n & 4095
	if blk[i>>6]&(1<<(i&63)) != 0 {
		return false
	}
	blk[i>>6] |= 1 << (i & 63)
	return true
}
