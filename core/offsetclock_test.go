package core

import (
	"testing"
	"time"
)

// A step of the offset moves Now at once, back or forward, and leaves a
// timer already set to its real duration.
func TestOffsetClock(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	base := NewManualClock(t0)
	c := NewOffsetClock(base)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now with no offset: %s; want %s", got, t0)
	}

	timer := c.After(10 * time.Second)
	if old := c.SetShift(-time.Hour); old != 0 {
		t.Fatalf("SetShift returned %s; want 0", old)
	}
	if got, want := c.Now(), t0.Add(-time.Hour); !got.Equal(want) {
		t.Fatalf("Now after a step back of 1h: %s; want %s", got, want)
	}
	if c.Shift() != -time.Hour {
		t.Fatalf("Shift %s; want -1h", c.Shift())
	}
	// The step back does not make the 10s timer wait an extra hour, and
	// a step forward does not fire it early.
	if old := c.SetShift(2 * time.Hour); old != -time.Hour {
		t.Fatalf("SetShift returned %s; want -1h", old)
	}
	if got, want := c.Now(), t0.Add(2*time.Hour); !got.Equal(want) {
		t.Fatalf("Now after a step forward to +2h: %s; want %s", got, want)
	}
	base.Advance(9 * time.Second)
	select {
	case <-timer:
		t.Fatal("After(10s) fired after 9s of base time")
	default:
	}
	base.Advance(time.Second)
	select {
	case <-timer:
	default:
		t.Fatal("After(10s) did not fire after 10s of base time")
	}
	if got, want := c.Now(), t0.Add(2*time.Hour+10*time.Second); !got.Equal(want) {
		t.Fatalf("Now: %s; want %s", got, want)
	}
	// A timer set under an offset waits its real duration too.
	timer = c.After(time.Second)
	c.SetShift(0)
	base.Advance(time.Second)
	select {
	case <-timer:
	default:
		t.Fatal("After(1s) set at +2h did not fire after 1s of base time")
	}
}
