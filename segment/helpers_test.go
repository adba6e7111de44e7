package segment_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/segment"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newStore is a MemStore holding the given tags (start 1), closed at the
// end of the test.
func newStore(t testing.TB, step int64, tags ...string) *segment.MemStore {
	t.Helper()
	st := segment.NewMemStore()
	t.Cleanup(func() { _ = st.Close() })
	for _, tag := range tags {
		if err := st.Create(context.Background(), segment.TagInfo{Tag: tag, MaxID: 1, Step: step}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// fakeConfig is DefaultConfig on a manual clock with no refresh loop.
func fakeConfig() (segment.Config, *core.ManualClock) {
	clk := core.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := segment.DefaultConfig()
	cfg.Clock = clk
	cfg.RefreshTags = -1
	return cfg, clk
}

// gateStore wraps a Store: it records the steps asked for, and when gated,
// Next waits for a release (or its context).
type gateStore struct {
	segment.Store
	mu      sync.Mutex
	steps   []int64
	gate    chan struct{} // nil: open
	started chan struct{} // receives once per Next that reached the gate
}

func newGate(st segment.Store) *gateStore {
	return &gateStore{Store: st, started: make(chan struct{}, 1000)}
}

func (g *gateStore) Next(ctx context.Context, tag string, step int64) (segment.Range, error) {
	g.mu.Lock()
	g.steps = append(g.steps, step)
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return segment.Range{}, ctx.Err()
		}
	}
	return g.Store.Next(ctx, tag, step)
}

func (g *gateStore) close() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gateStore) open() {
	g.mu.Lock()
	if g.gate != nil {
		close(g.gate)
	}
	g.gate = nil
	g.mu.Unlock()
}

func (g *gateStore) stepsAsked() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int64(nil), g.steps...)
}

var errDown = errors.New("store down (test)")
