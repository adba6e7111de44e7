package coalesce_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/coalesce"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// clock is a settable clock for a Cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestCoalesced: callers of one key at once share one read, and its
// answer serves for Fresh on the cache's clock; past it, the next caller
// reads again. A waiter whose own context ends stops waiting.
func TestCoalesced(t *testing.T) {
	var reads atomic.Int32
	gate := make(chan struct{})
	read := func(ctx context.Context) (int, error) {
		reads.Add(1)
		<-gate
		return 7, nil
	}
	clk := &clock{now: time.Unix(1e9, 0)}
	c := &coalesce.Cache[string, int]{Fresh: time.Second, Now: clk.Now}

	const callers = 20
	var wg sync.WaitGroup
	got := make([]int, callers)
	for i := range callers {
		wg.Go(func() { got[i], _ = c.Get(context.Background(), "k", time.Second, read) })
	}
	waittest.Until(t, "the first read", func() bool { return reads.Load() > 0 })
	close(gate)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d callers at once: %d reads; want 1", callers, n)
	}
	for i, v := range got {
		if v != 7 {
			t.Fatalf("caller %d: %d; want the one read's answer", i, v)
		}
	}
	if c.Get(context.Background(), "k", time.Second, read); reads.Load() != 1 {
		t.Fatalf("a caller within Fresh read again")
	}
	clk.add(time.Second)
	if c.Get(context.Background(), "k", time.Second, read); reads.Load() != 2 {
		t.Fatalf("a caller past Fresh: %d reads; want 2", reads.Load())
	}

	clk.add(time.Second)
	block := make(chan struct{})
	slow := func(ctx context.Context) (int, error) { <-block; return 0, nil }
	started := make(chan struct{})
	go func() { close(started); c.Get(context.Background(), "k", time.Second, slow) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	waittest.Until(t, "a waiter with its context ended returns", func() bool {
		_, err := c.Get(ctx, "k", time.Second, slow)
		return errors.Is(err, context.Canceled)
	})
	close(block)
}

// TestKeysAndReads: keys are read apart, at most Keys answers are kept,
// and at most Reads reads run at once; a caller that gave up waiting for
// a slot leaves no answer behind.
func TestKeysAndReads(t *testing.T) {
	var running, most atomic.Int32
	gate := make(chan struct{})
	read := func(k int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			<-gate
			running.Add(-1)
			return k * 10, nil
		}
	}
	c := &coalesce.Cache[int, int]{Fresh: time.Hour, Keys: 3, Reads: 2}
	var wg sync.WaitGroup
	for k := range 5 {
		wg.Go(func() {
			if v, err := c.Get(context.Background(), k, time.Second, read(k)); err != nil || v != k*10 {
				t.Errorf("key %d: %d, %v", k, v, err)
			}
		})
	}
	waittest.Until(t, "two reads under way", func() bool { return running.Load() == 2 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Get(ctx, 9, time.Second, read(9)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller with no slot and its context ended: %v", err)
	}
	close(gate)
	wg.Wait()
	if m := most.Load(); m != 2 {
		t.Fatalf("%d reads at once; want Reads, 2", m)
	}
	// Key 9 was never read: its next caller reads it.
	if v, err := c.Get(context.Background(), 9, time.Second, read(9)); err != nil || v != 90 {
		t.Fatalf("key 9 after its caller gave up: %d, %v", v, err)
	}
	var again atomic.Int32
	for k := range 5 {
		c.Get(context.Background(), k, time.Second, func(context.Context) (int, error) { again.Add(1); return k * 10, nil })
	}
	if n := again.Load(); n < 2 {
		t.Fatalf("with Keys 3, %d of 5 keys read again; want the dropped ones (at least 2)", n)
	}
}
