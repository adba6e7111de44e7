package client

import (
	"context"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
)

// prefetch keeps up to size central IDs ready (Leaf's double buffer): when
// fewer than low remain, one background goroutine fetches the difference
// while callers keep taking from what is left. Every ID leaves the buffer
// exactly once, under mu, so none is handed out twice.
//
// The buffer is a queue of segments, one per piece a refill brought (one
// server's answer), each in increasing order. Callers copy out of them
// with no work per ID beyond the copy, and a refill appends a segment in
// constant time, so mu is never held for long; only a batch that spans two
// segments compares their ends, and is sorted in the rare case that pieces
// of several servers arrived out of order.
type prefetch struct {
	size, low int
	// fill fetches n central IDs (never the fallback), handing each piece
	// to put as it comes.
	fill  func(ctx context.Context, n int, put func([]core.ID)) error
	gauge prometheus.Gauge

	kick chan struct{} // wakes the refiller; one slot

	mu      sync.Mutex
	segs    [][]core.ID   // ready IDs, taken from the front of segs[0]
	n       int           // IDs in segs
	filling bool          // a refill is asked for or running
	changed chan struct{} // closed when IDs arrive or a refill ends
	rounds  uint64        // refills ended
	failed  error         // why the last refill fell short, if it did
	stopped bool
}

func newPrefetch(size int, fill func(context.Context, int, func([]core.ID)) error, gauge prometheus.Gauge) *prefetch {
	return &prefetch{
		size: size, low: max(1, size/2), fill: fill, gauge: gauge,
		kick: make(chan struct{}, 1), changed: make(chan struct{}),
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
		want := p.size - p.n
		p.mu.Unlock()
		var err error
		if want > 0 {
			err = p.fill(ctx, want, p.put) // on error, keep what came
		}
		p.mu.Lock()
		p.failed = err
		p.filling = false
		p.rounds++
		p.signalLocked()
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
	p.segs = append(p.segs, ids)
	p.n += len(ids)
	p.gauge.Set(float64(p.n))
	p.signalLocked()
}

// signalLocked wakes the callers waiting for IDs.
func (p *prefetch) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// stop drops the buffer and releases waiters.
func (p *prefetch) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	p.segs, p.n = nil, 0
	p.gauge.Set(0)
	p.signalLocked()
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

// take returns a buffered ID. When the buffer is empty it waits until IDs
// arrive, asking for refills as needed, as long as they succeed: at the
// ceiling the refill waits for the servers and the callers wait with it,
// rather than each asking a server itself (one call in flight instead of
// one per caller). Once a refill ended short of IDs with an error after
// this caller began waiting (no server could give any: see ErrUnavailable),
// it reports ok=false with that error, and the caller issues elsewhere
// (the fallback), so a failing refill blocks no one longer than one round
// (itself bounded by the call timeouts). ctx and Close end the wait.
func (p *prefetch) take(ctx context.Context) (id core.ID, ok bool, err error) {
	p.mu.Lock()
	round := p.rounds
	for p.n == 0 {
		if p.stopped || (p.rounds > round && p.failed != nil) {
			err := p.failed
			p.mu.Unlock()
			return 0, false, err
		}
		changed := p.changed
		p.askLocked()
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
		p.mu.Lock()
	}
	seg := p.segs[0]
	id = seg[0]
	if len(seg) == 1 {
		p.popLocked()
	} else {
		p.segs[0] = seg[1:]
	}
	p.n--
	if p.n < p.low {
		p.askLocked()
	}
	p.gauge.Set(float64(p.n))
	p.mu.Unlock()
	return id, true, nil
}

// popLocked drops the first segment, which is used up.
func (p *prefetch) popLocked() {
	p.segs[0] = nil
	p.segs = p.segs[1:]
	if len(p.segs) == 0 {
		p.segs = p.segs[:0:0] // let the spent array go
	}
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
	if p.n < n {
		if p.n < p.low {
			p.askLocked()
		}
		p.mu.Unlock()
		return dst, false
	}
	start := len(dst)
	sorted := true
	if seg := p.segs[0]; len(seg) >= n {
		if dst == nil {
			dst = seg[:n:n]
		} else {
			dst = append(dst, seg[:n]...)
		}
		if len(seg) == n {
			p.popLocked()
		} else {
			p.segs[0] = seg[n:]
		}
	} else {
		dst = slices.Grow(dst, n)
		for left := n; left > 0; {
			seg := p.segs[0]
			k := min(len(seg), left)
			if len(dst) > start && seg[0] < dst[len(dst)-1] {
				sorted = false
			}
			dst = append(dst, seg[:k]...)
			left -= k
			if k == len(seg) {
				p.popLocked()
			} else {
				p.segs[0] = seg[k:]
			}
		}
	}
	p.n -= n
	if p.n < p.low {
		p.askLocked()
	}
	p.gauge.Set(float64(p.n))
	p.mu.Unlock()
	if !sorted {
		slices.Sort(dst[start:])
	}
	return dst, true
}
