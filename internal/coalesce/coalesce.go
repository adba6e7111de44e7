// Package coalesce shares slow reads among their callers: one read per key
// at a time, its answer (or its error) reused while fresh, the other
// callers waiting for it or for their own context. The operator's views
// (the fleet, a machine ID's hold history, the capacity) read the lease
// and segment stores that the renewals and the issuers use: callers in a
// loop must not turn into reads of those stores.
package coalesce

import (
	"context"
	"sync"
	"time"
)

// Cache coalesces the reads of one kind of answer, by key. Its zero value
// is not ready: set Fresh (and the other fields) before the first Get,
// and never change them after.
type Cache[K comparable, V any] struct {
	// Fresh is how long one read's answer serves every caller of its key.
	Fresh time.Duration
	// Keys bounds the answers kept; zero is one. Past it, the oldest
	// answer not being read is dropped.
	Keys int
	// Reads bounds the reads under way at once, over every key; zero
	// leaves them unbounded (one per key).
	Reads int
	// Now reads the clock; nil is time.Now.
	Now func() time.Time

	mu    sync.Mutex
	m     map[K]*entry[V]
	slots chan struct{} // Reads' semaphore, made at the first Get
}

type entry[V any] struct {
	at       time.Time // of the last read's end; zero before any
	v        V
	err      error
	inflight chan struct{} // closed when the read under way ends
}

// Get returns key's answer as read within Fresh, reading it with read if
// need be. The read is detached from ctx's cancellation (other callers may
// wait for it) and bounded by timeout; a caller whose ctx ends stops
// waiting with ctx's error.
func (c *Cache[K, V]) Get(ctx context.Context, key K, timeout time.Duration, read func(context.Context) (V, error)) (V, error) {
	var zero V
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]*entry[V]{}
		if c.Reads > 0 {
			c.slots = make(chan struct{}, c.Reads)
		}
	}
	var e *entry[V]
	for {
		e = c.m[key]
		if e == nil {
			c.trim(max(c.Keys, 1) - 1)
			e = &entry[V]{}
			c.m[key] = e
		}
		if !e.at.IsZero() && now().Sub(e.at) < c.Fresh {
			v, err := e.v, e.err
			c.mu.Unlock()
			return v, err
		}
		ch := e.inflight
		if ch == nil {
			break
		}
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		c.mu.Lock()
	}
	ch := make(chan struct{})
	e.inflight = ch
	c.mu.Unlock()

	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			// Not read: the answer stays as it was, and a caller waiting
			// for this read looks again (and reads, if it still may).
			c.mu.Lock()
			e.inflight = nil
			c.mu.Unlock()
			close(ch)
			return zero, ctx.Err()
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	v, err := read(rctx)
	cancel()
	if c.slots != nil {
		<-c.slots
	}

	c.mu.Lock()
	e.v, e.err, e.at, e.inflight = v, err, now(), nil
	c.trim(max(c.Keys, 1)) // what reads under way kept above Keys
	c.mu.Unlock()
	close(ch)
	return v, err
}

// trim drops the oldest answers not being read until at most n are kept
// (or every one left is being read).
func (c *Cache[K, V]) trim(n int) {
	for len(c.m) > n {
		var oldest K
		var found bool
		var at time.Time
		for k, e := range c.m {
			if e.inflight == nil && (!found || e.at.Before(at)) {
				oldest, at, found = k, e.at, true
			}
		}
		if !found {
			return // every key is being read: Reads bounds them
		}
		delete(c.m, oldest)
	}
}
