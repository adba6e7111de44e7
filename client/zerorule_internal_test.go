package client

import (
	"testing"
	"time"
)

// TestZeroIsTheDefault: every zero field of Config runs as DefaultConfig's
// value (sony/gobreaker's rule), and a negative Retries is none.
func TestZeroIsTheDefault(t *testing.T) {
	d := DefaultConfig("h:1").withDefaults()
	z := Config{Servers: []string{"h:1"}}.withDefaults()
	if z.Timeout != d.Timeout || z.Retries != d.Retries || z.ConnsPerServer != d.ConnsPerServer ||
		z.NoFallback != d.NoFallback || z.Prefetch != d.Prefetch || z.SeqPrefetch != d.SeqPrefetch ||
		z.SeqMaxTags != d.SeqMaxTags || z.BreakerFailures != d.BreakerFailures || z.BreakerTimeout != d.BreakerTimeout {
		t.Errorf("zero Config runs as %+v; DefaultConfig as %+v", z, d)
	}
	if d.Retries != 2 || d.Timeout != 200*time.Millisecond || d.NoFallback {
		t.Errorf("DefaultConfig runs as %+v", d)
	}
	for _, r := range []int{-1, -10} {
		if got := (Config{Retries: r}).withDefaults().Retries; got != 0 {
			t.Errorf("Retries %d runs as %d retries; want none", r, got)
		}
	}
}
