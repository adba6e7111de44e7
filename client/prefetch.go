package client

import (
	"context"
	"slices"
	"sync"

	"github.com/vesta-go/vesta/core"
)

// prefetch keeps up to size central IDs ready (Leaf's double buffer): when
// fewer than low remain, one background goroutine fetches the difference
// while callers keep taking from what is left. Every ID leaves the buffer
// exactly once, under mu, so none is handed out twice.
//
// The buffer is a queue of pieces (see pieces), one per piece a refill
// brought (one server's answer), each in increasing order. Callers copy out of them
// with no work per ID beyond the copy, and a refill appends a segment in
// constant time, so mu is never held for long; only a batch that spans two
// segments compares their ends, and is sorted in the rare case that pieces
// of several servers arrived out of order.
type prefetch struct {
	size, low int
	// fill fetches n central IDs (never the fallback), handing each piece
	// to put as it comes.
	fill func(ctx context.Context, n int, put func([]core.ID)) error

	kick chan struct{} // wakes the refiller; one slot

	mu      sync.Mutex
	ready   pieces[core.ID] // while it holds IDs, nobody waits
	waiters []*waiter       // callers waiting for an ID, served in order
	filling bool            // a refill is asked for or running
	failed  error           // why the last refill fell short, if it did
	stopped bool
}

// waiter is a caller of take waiting on an empty buffer. Under mu, the
// refiller either hands it an ID (ok) or releases it (with the refill's
// error, or none at Close), then closes ch.
type waiter struct {
	ch  chan struct{}
	id  core.ID
	ok  bool
	err error
}

func newPrefetch(size int, fill func(context.Context, int, func([]core.ID)) error) *prefetch {
	return &prefetch{
		size: size, low: max(1, size/2), fill: fill,
		kick: make(chan struct{}, 1),
	}
}

// run refills the buffer until ctx ends; Client.Close cancels ctx and
// waits for it.
func (p *prefetch) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			p.stop()
			return
		case <-p.kick:
		}
		p.mu.Lock()
		want := p.size - p.ready.n
		p.mu.Unlock()
		var err error
		if want > 0 {
			err = p.fill(ctx, want, p.put) // on error, keep what came
		}
		p.mu.Lock()
		p.failed = err
		p.filling = false
		switch {
		case err != nil: // no server could give more: waiters go elsewhere
			p.releaseLocked(err)
		case len(p.waiters) > 0: // still wanted: at the ceiling, go on
			p.askLocked()
		}
		p.mu.Unlock()
	}
}

// put adds a piece of a refill. Its order is checked here, on the
// refiller's goroutine, so that callers never have to.
func (p *prefetch) put(ids []core.ID) {
	if !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	// Waiters first, in the order they came: at the ceiling, where every
	// piece is snapped up, no caller waits behind later ones.
	i := 0
	for ; i < len(ids) && len(p.waiters) > 0; i++ {
		w := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		w.id, w.ok = ids[i], true
		close(w.ch)
	}
	if i < len(ids) {
		p.ready.push(ids[i:])
	}
}

// releaseLocked sends every waiter away without an ID, with err.
func (p *prefetch) releaseLocked(err error) {
	for _, w := range p.waiters {
		w.err = err
		close(w.ch)
	}
	p.waiters = nil
}

// stop drops the buffer and releases waiters.
func (p *prefetch) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	p.ready = pieces[core.ID]{}
	p.releaseLocked(nil)
}

// buffered is how many IDs the buffer holds, for Stats.
func (p *prefetch) buffered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready.n
}

// askLocked starts a refill unless one is on its way.
func (p *prefetch) askLocked() {
	if p.filling || p.stopped {
		return
	}
	p.filling = true
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// take returns a buffered ID. When the buffer is empty the caller joins
// the queue of waiters, served in order as refills bring IDs: at the
// ceiling the refill waits for the servers and the callers wait with it,
// rather than each asking a server itself (one call in flight instead of
// one per caller), and refills go on while callers wait. When a refill
// ends short of IDs with an error (no server could give any: see
// ErrUnavailable), the waiters are released with it (ok=false) and issue
// elsewhere (the fallback), so a failing refill blocks no one longer than
// one round (itself bounded by the call timeouts). ctx and Close end the
// wait.
func (p *prefetch) take(ctx context.Context) (id core.ID, ok bool, err error) {
	p.mu.Lock()
	if p.ready.n == 0 {
		if p.stopped {
			p.mu.Unlock()
			return 0, false, nil
		}
		w := &waiter{ch: make(chan struct{})}
		p.waiters = append(p.waiters, w)
		p.askLocked()
		p.mu.Unlock()
		select {
		case <-w.ch:
			return w.id, w.ok, w.err
		case <-ctx.Done():
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-w.ch: // served (or released) meanwhile
			return w.id, w.ok, w.err
		default:
		}
		if i := slices.Index(p.waiters, w); i >= 0 {
			p.waiters = slices.Delete(p.waiters, i, i+1)
		}
		return 0, false, ctx.Err()
	}
	id = p.ready.take(1)[0]
	if p.ready.n < p.low {
		p.askLocked()
	}
	p.mu.Unlock()
	return id, true, nil
}

// takeN appends n buffered IDs to dst, in increasing order, if the buffer
// holds that many; else it reports false. With a nil dst and the IDs in one
// segment it copies nothing: it returns that part of the segment, capped at
// n so that the caller's appends copy it, and the rest of the segment goes
// to later callers (disjoint parts of one array: no ID is shared). The
// array lives while any part is used: a caller that keeps its batch keeps
// at most one server reply (max_batch IDs) alive.
func (p *prefetch) takeN(dst []core.ID, n int) ([]core.ID, bool) {
	p.mu.Lock()
	if p.ready.n < n {
		if p.ready.n < p.low {
			p.askLocked()
		}
		p.mu.Unlock()
		return dst, false
	}
	start := len(dst)
	sorted := true
	if p.ready.first() >= n && dst == nil {
		dst = p.ready.take(n)
	} else {
		dst = slices.Grow(dst, n)
		for left := n; left > 0; {
			part := p.ready.take(left)
			if len(dst) > start && part[0] < dst[len(dst)-1] {
				sorted = false
			}
			dst = append(dst, part...)
			left -= len(part)
		}
	}
	if p.ready.n < p.low {
		p.askLocked()
	}
	p.mu.Unlock()
	if !sorted {
		slices.Sort(dst[start:])
	}
	return dst, true
}
