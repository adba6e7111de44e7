package client

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

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
	p := newPrefetch(30, fill, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}))
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
		n := p.n
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
