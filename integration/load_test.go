package integration_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/latencytest"
)

// load runs workers, each making one call after another until stop, and
// keeps every call's latency and error per phase. A call gets its own
// context with the load's per-call deadline, never one that stop cancels:
// stopping lets calls in flight finish, so no error is an artefact of it.
type load struct {
	deadline time.Duration // of each call

	stopping atomic.Bool
	phase    atomic.Int32
	ids      atomic.Int64 // IDs issued so far
	calls    atomic.Int64
	wg       sync.WaitGroup

	mu      sync.Mutex
	hists   map[int]*latencytest.Recorder // phase -> latency
	errs    map[int]int                   // phase -> failed calls
	samples []string                      // the first errors
}

func newLoad(deadline time.Duration) *load {
	return &load{deadline: deadline, hists: map[int]*latencytest.Recorder{}, errs: map[int]int{}}
}

// setPhase makes the calls started from now on count in phase p.
func (l *load) setPhase(p int) { l.phase.Store(int32(p)) }

// worker runs call until stop. call gets the phase the call starts in and
// returns how many IDs it got.
func (l *load) worker(name string, call func(ctx context.Context, phase int) (int, error)) {
	l.wg.Go(func() {
		local := map[int]*latencytest.Recorder{}
		defer func() {
			l.mu.Lock()
			for p, h := range local {
				if l.hists[p] == nil {
					l.hists[p] = &latencytest.Recorder{}
				}
				l.hists[p].Merge(h)
			}
			l.mu.Unlock()
		}()
		for !l.stopping.Load() {
			p := int(l.phase.Load())
			ctx, cancel := context.WithTimeout(context.Background(), l.deadline)
			t0 := time.Now()
			n, err := call(ctx, p)
			d := time.Since(t0)
			cancel()
			h := local[p]
			if h == nil {
				h = &latencytest.Recorder{}
				local[p] = h
			}
			h.Record(d)
			l.calls.Add(1)
			l.ids.Add(int64(n))
			if err != nil {
				l.failed(name, p, d, err)
			}
		}
	})
}

func (l *load) failed(name string, phase int, d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[phase]++
	if len(l.samples) < maxReportRows {
		l.samples = append(l.samples, fmt.Sprintf("%s (phase %d) after %v: %v", name, phase, d.Round(time.Microsecond), err))
	}
}

// stop lets every call in flight finish and waits for the workers.
func (l *load) stop() {
	l.stopping.Store(true)
	l.wg.Wait()
}

// waitIDs waits until at least n IDs were issued and min has passed, or
// max has passed; it returns the time it waited.
func (l *load) waitIDs(n int64, lo, hi time.Duration) time.Duration {
	start := time.Now()
	for {
		el := time.Since(start)
		if (l.ids.Load() >= n && el >= lo) || el >= hi {
			return el
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errors returns the failed calls of every phase and the first messages.
func (l *load) errors() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.errs {
		n += e
	}
	return n, append([]string(nil), l.samples...)
}

// requireNoErrors fails t when any call failed.
func (l *load) requireNoErrors(t testing.TB) {
	t.Helper()
	if n, samples := l.errors(); n > 0 {
		t.Errorf("%d calls failed; the first:\n%s", n, strings.Join(samples, "\n"))
	}
}

// latency returns the histogram of a phase (merged once stopped).
func (l *load) latency(phase int) *latencytest.Recorder {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.hists[phase]; h != nil {
		return h
	}
	return &latencytest.Recorder{}
}

// report logs each phase's calls, errors and latency percentiles.
func (l *load) report(t testing.TB, names ...string) {
	t.Helper()
	for p, name := range names {
		h := l.latency(p)
		l.mu.Lock()
		errs := l.errs[p]
		l.mu.Unlock()
		t.Logf("phase %d (%s): %d calls, %d failed; latency p50 %v p99 %v p99.9 %v max %v", p, name,
			h.Count(), errs, h.Quantile(50), h.Quantile(99), h.Quantile(99.9), h.Max())
	}
}

// pacer holds a worker to about rate IDs a second, so that issuers that
// cost the test process little (embedded ones) leave the CPU to the rest.
type pacer struct {
	rate  float64
	start time.Time
	n     int
}

func newPacer(rate float64) *pacer { return &pacer{rate: rate} }

// took records n IDs and sleeps until the rate allows more.
func (p *pacer) took(n int) {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	p.n += n
	due := p.start.Add(time.Duration(float64(p.n) / p.rate * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	}
}
