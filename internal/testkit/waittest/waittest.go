// Package waittest waits in tests for things that must happen, never to
// judge speed: the timeout is a safety net against hangs, generous enough
// for the race detector on a loaded machine.
package waittest

import (
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
