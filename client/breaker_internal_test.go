package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
)

// TestGuardedTripRule: calls that run past a closed breaker (guarded)
// trip it on the same consecutive failures as calls that go through it;
// a success between failures resets the count, as gobreaker's own would.
func TestGuardedTripRule(t *testing.T) {
	fail := fmt.Errorf("%w: refused", ErrConnection)
	for _, tc := range []struct {
		name     string
		outcomes string // f: a failing call, s: a good one
		want     gobreaker.State
	}{
		{"three failures trip", "fff", gobreaker.StateOpen},
		{"a success resets the count", "ffsff", gobreaker.StateClosed},
		{"successes between them, then three", "fsfsfff", gobreaker.StateOpen},
		{"sporadic failures never trip", "fsfsfsfsfs", gobreaker.StateClosed},
		{"successes only", "sss", gobreaker.StateClosed},
		{"excluded errors do not count", "fxxf", gobreaker.StateClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig("192.0.2.1:7070")
			cfg.NoFallback = true
			cfg.BreakerFailures = 3
			cfg.BreakerTimeout = time.Hour
			c, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			s := c.servers[0]
			for i, o := range tc.outcomes {
				var ran bool
				err := s.guarded(func() error {
					ran = true
					switch o {
					case 'f':
						return fail
					case 'x':
						return errSilent // counted already by the call that timed out
					}
					return nil
				})
				if !ran {
					t.Fatalf("call %d (%c) did not run: %v", i, o, err)
				}
			}
			if got := s.cb.State(); got != tc.want {
				t.Fatalf("after %q the breaker is %v; want %v", tc.outcomes, got, tc.want)
			}
			if tc.want == gobreaker.StateOpen {
				// Open, a call goes through the breaker, which refuses it.
				err := s.guarded(func() error { t.Fatal("a call ran with the breaker open"); return nil })
				if !errors.Is(err, gobreaker.ErrOpenState) {
					t.Fatalf("guarded with the breaker open = %v; want ErrOpenState", err)
				}
			}
		})
	}
}
