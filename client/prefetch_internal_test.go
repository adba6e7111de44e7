package client

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/vesta-go/vesta/core"
)

// Pieces of a refill may come out of order (several servers, or a server
// that does not sort): every batch is still in increasing order, and every
// ID leaves the buffer once.
func TestPrefetchSegmentsOutOfOrder(t *testing.T) {
	seq := func(from, n int) []core.ID {
		out := make([]core.ID, n)
		for i := range out {
			out[i] = core.ID(from + i)
		}
		return out
	}
	pieces := [][]core.ID{seq(100, 10), seq(0, 10), {55, 53, 51, 57, 59}, seq(20, 5)}
	var once sync.Once // later refills bring nothing
	fill := func(_ context.Context, n int, put func([]core.ID)) error {
		once.Do(func() {
			for _, p := range pieces {
				put(slices.Clone(p))
			}
		})
		return nil
	}
	p := newPrefetch(30, fill)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	p.mu.Lock()
	p.askLocked()
	p.mu.Unlock()

	id, ok, err := p.take(ctx) // waits for the first piece
	if !ok || err != nil || id != 100 {
		t.Fatalf("take = %d, %v, %v; want 100, the first piece's first", id, ok, err)
	}
	for {
		p.mu.Lock()
		n := p.ready.n
		p.mu.Unlock()
		if n == 29 {
			break
		}
	}
	got := []core.ID{id}
	for _, k := range []int{5, 12, 8} { // within a piece, across two, across three
		batch, ok := p.takeN(nil, k)
		if !ok || len(batch) != k || !slices.IsSorted(batch) {
			t.Fatalf("takeN(%d) = %v, %v; want %d IDs in increasing order", k, batch, ok, k)
		}
		got = append(got, batch...)
	}
	if _, ok := p.takeN(nil, 5); ok {
		t.Fatal("takeN(5) with 4 left succeeded")
	}
	for range 4 {
		id, ok, _ := p.take(ctx)
		if !ok {
			t.Fatal("take found nothing with IDs left")
		}
		got = append(got, id)
	}
	var want []core.ID
	for _, p := range pieces {
		want = append(want, p...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("handed out %v; want each of %v once", got, want)
	}
}

// Callers waiting on an empty buffer are served in the order they came;
// one whose context ends leaves the queue.
func TestPrefetchWaitersInOrder(t *testing.T) {
	pieces := make(chan []core.ID)
	fill := func(ctx context.Context, n int, put func([]core.ID)) error {
		for {
			select {
			case p := <-pieces:
				put(p)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	p := newPrefetch(10, fill)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	queued := func(n int) {
		t.Helper()
		for {
			p.mu.Lock()
			k := len(p.waiters)
			p.mu.Unlock()
			if k == n {
				return
			}
			runtime.Gosched()
		}
	}
	got := make([]chan core.ID, 4)
	wctx, wcancel := context.WithCancel(context.Background())
	for i := range got {
		got[i] = make(chan core.ID, 1)
		c := context.Background()
		if i == 1 {
			c = wctx // leaves before any ID comes
		}
		go func() {
			id, ok, err := p.take(c)
			if !ok {
				id = core.ID(1 << 40)
				if err == nil {
					t.Error("take failed without an error")
				}
			}
			got[i] <- id
		}()
		queued(i + 1)
	}
	wcancel()
	if id := <-got[1]; id != 1<<40 {
		t.Fatalf("the caller whose context ended got %d", id)
	}
	queued(3)
	pieces <- []core.ID{7}
	pieces <- []core.ID{8, 9, 10}
	for i, want := range map[int]core.ID{0: 7, 2: 8, 3: 9} {
		if id := <-got[i]; id != want {
			t.Errorf("waiter %d got %d; want %d (first come, first served)", i, id, want)
		}
	}
	if id, ok, _ := p.take(context.Background()); !ok || id != 10 {
		t.Errorf("take after the waiters = %d, %v; want 10 from the buffer", id, ok)
	}
}
