// Package waittest waits in tests for things that must happen, never to
// judge speed: the timeout is a safety net against hangs, generous enough
// for the race detector on a loaded machine.
package waittest

import (
	"context"
	"testing"
	"time"
)

// Timeout is how long Until waits before failing the test.
const Timeout = 60 * time.Second

// Until polls cond every millisecond until it holds, failing the test
// with what after Timeout.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Blocker is a fake clock that reports its sleepers (core.ManualClock).
type Blocker interface {
	BlockUntil(ctx context.Context, n int) error
}

// Sleepers waits until n callers sleep on clk, the moment a test that
// drives a fake clock may advance it, failing the test after Timeout.
func Sleepers(tb testing.TB, clk Blocker, n int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := clk.BlockUntil(ctx, n); err != nil {
		tb.Fatalf("gave up waiting for %d sleepers on the clock: %v", n, err)
	}
}
