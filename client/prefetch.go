package client

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
)

// prefetch keeps up to size central IDs ready (Leaf's double buffer): when
// fewer than low remain, one background goroutine fetches the difference
// with Vesta.GenIDs while callers keep taking from what is left. Every ID
// leaves the buffer exactly once, under mu, so none is handed out twice.
type prefetch struct {
	size, low int
	fill      func(ctx context.Context, n int) ([]core.ID, error) // central only, never the fallback
	gauge     prometheus.Gauge

	kick chan struct{} // wakes the refiller; one slot

	mu      sync.Mutex
	ids     []core.ID     // ready IDs, taken from the front
	filling bool          // a refill is asked for or running
	round   chan struct{} // closed when the running refill ends
	failed  error         // why the last refill fell short, if it did
	stopped bool
}

func newPrefetch(size int, fill func(context.Context, int) ([]core.ID, error), gauge prometheus.Gauge) *prefetch {
	return &prefetch{
		size: size, low: max(1, size/2), fill: fill, gauge: gauge,
		kick: make(chan struct{}, 1), round: make(chan struct{}),
		ids: make([]core.ID, 0, size),
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
		want := p.size - len(p.ids)
		p.mu.Unlock()
		var got []core.ID
		var err error
		if want > 0 {
			got, err = p.fill(ctx, want) // on error, keep what came
		}
		p.mu.Lock()
		p.failed = err
		if !p.stopped {
			p.ids = append(p.ids, got...)
			p.gauge.Set(float64(len(p.ids)))
		}
		p.filling = false
		close(p.round)
		p.round = make(chan struct{})
		p.mu.Unlock()
	}
}

// stop drops the buffer and releases waiters.
func (p *prefetch) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	p.ids = nil
	p.gauge.Set(0)
	close(p.round)
	p.round = make(chan struct{})
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

// take returns a buffered ID. When the buffer is empty it waits for one
// refill round; if that brings nothing for this caller it reports ok=false,
// with the refill's error if it failed (or the context's), and the caller
// issues elsewhere, so a failing refill never blocks anyone longer than one
// round (itself bounded by the call timeouts).
func (p *prefetch) take(ctx context.Context) (id core.ID, ok bool, err error) {
	for waited := false; ; waited = true {
		p.mu.Lock()
		if n := len(p.ids); n > 0 {
			id, p.ids = p.ids[0], p.ids[1:]
			if n-1 < p.low {
				p.askLocked()
			}
			p.gauge.Set(float64(n - 1))
			p.mu.Unlock()
			return id, true, nil
		}
		if waited || p.stopped {
			err := p.failed
			p.mu.Unlock()
			return 0, false, err
		}
		round := p.round
		p.askLocked()
		p.mu.Unlock()
		select {
		case <-round:
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
	}
}

// takeN returns n buffered IDs if the buffer holds that many, else none.
func (p *prefetch) takeN(n int) []core.ID {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ids) < n {
		if len(p.ids) < p.low {
			p.askLocked()
		}
		return nil
	}
	out := append([]core.ID(nil), p.ids[:n]...)
	p.ids = p.ids[n:]
	if len(p.ids) < p.low {
		p.askLocked()
	}
	p.gauge.Set(float64(len(p.ids)))
	return out
}
