package client

import (
	"slices"
	"testing"
)

// A queue of pieces (the per-tag sequence buffer, the ID prefetch) hands
// out every value of its pieces once, in the order they came, whatever
// the sizes taken, across piece boundaries.
func TestPiecesTake(t *testing.T) {
	parts := [][]int64{{1, 2, 3}, {10, 11}, {20}, {30, 31, 32, 33}}
	var all []int64
	for _, p := range parts {
		all = append(all, p...)
	}
	for _, sizes := range [][]int{{1}, {2}, {3}, {4}, {10}, {1, 4, 2}, {5, 1}} {
		var b pieces[int64]
		for _, p := range parts {
			b.push(slices.Clone(p))
		}
		var got []int64
		for i := 0; b.n > 0; i++ {
			k := sizes[i%len(sizes)]
			want := min(k, b.n)
			var out []int64
			for len(out) < want { // as takeSeqN and prefetch.takeN do
				out = append(out, b.take(want-len(out))...)
			}
			got = append(got, out...)
		}
		if !slices.Equal(got, all) || len(b.queue) != 0 {
			t.Errorf("taking %v at a time: %v, %d pieces left; want %v and none", sizes, got, len(b.queue), all)
		}
	}
}
