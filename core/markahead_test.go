package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
)

// TestStatsMarkAhead: MarkAhead is the mark measured against the issuing
// clock (a ManualClock here, far from the wall clock), zero without a guard.
func TestStatsMarkAhead(t *testing.T) {
	clock := core.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g, err := core.New(context.Background(), core.Config{Machine: 1, Clock: clock,
		Guard: core.NewMemGuard(time.Time{}), GuardWindow: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := g.Stats()
	if s.Mark.IsZero() || s.MarkAhead != s.Mark.Sub(clock.Now()) || s.MarkAhead <= 0 || s.MarkAhead > 4*time.Second {
		t.Fatalf("mark %s, MarkAhead %s at %s; want the mark minus the clock, in (0, 4s]", s.Mark, s.MarkAhead, clock.Now())
	}

	plain, err := core.New(context.Background(), core.Config{Machine: 2, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if s := plain.Stats(); !s.Mark.IsZero() || s.MarkAhead != 0 {
		t.Fatalf("without a guard: mark %s, MarkAhead %s; want zero", s.Mark, s.MarkAhead)
	}
}
