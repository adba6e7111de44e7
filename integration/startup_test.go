package integration_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/redistest"
)

// startupCost measures what the takeover quarantine costs at start-up:
// the time from starting `vesta serve` to its first ID, on a one-ID range
// of a fresh Redis (a claim without a clean-release record: quarantined),
// then again after that server stopped cleanly (its release record lets
// the claim skip the quarantine).
func startupCost(tb testing.TB, ttl, skew time.Duration) (fresh, released time.Duration) {
	rds := redistest.Start(tb)
	m := fmt.Sprint(takeoverMachine)
	env := serverEnv(tb, rds, fmt.Sprintf("startup-%v", ttl), ttl,
		"VESTA_MACHINE_SERVER_RANGE", m+"-"+m, "VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW", skew.String())
	vestaBinary(tb) // built before the clock starts
	first := func(name string) (*proc, time.Duration) {
		start := time.Now()
		p := serve(tb, name, env)
		conn := dialRaw(tb, p.Central)
		for {
			if _, err := conn.genID(); err == nil {
				return p, time.Since(start)
			}
			if time.Since(start) > startTimeout+ttl {
				tb.Fatalf("%s: no ID %v after start", name, time.Since(start))
			}
			time.Sleep(time.Millisecond)
		}
	}
	p, fresh := first("fresh")
	stopAll(tb, p)
	p, released = first("after-release")
	stopAll(tb, p)
	return fresh, released
}

// TestStartupCost: a server whose claim finds no clean release of the
// previous holder issues its first ID no sooner than lease TTL + 2 *
// max_clock_skew after it started (it cannot know that no holder lives);
// after a clean release it starts without that wait.
func TestStartupCost(t *testing.T) {
	const ttl = 4 * time.Second
	fresh, released := startupCost(t, ttl, takeoverSkew)
	t.Logf("lease_ttl %v, max_clock_skew %v: first ID %v after start on a fresh claim, %v after a clean release",
		ttl, takeoverSkew, fresh.Round(time.Millisecond), released.Round(time.Millisecond))
	if min := ttl + 2*takeoverSkew; fresh < min {
		t.Errorf("first ID %v after start with no clean release; the quarantine is at least %v", fresh, min)
	}
	if released >= fresh {
		t.Errorf("first ID %v after start following a clean release, %v without: the release record did not skip the quarantine", released, fresh)
	}
}

// BenchmarkStartupCost reports the start-up cost at the defaults
// (lease_ttl 15s, max_clock_skew 2s) and short ones (BENCHMARKS.md):
//
//	go test -run '^$' -bench StartupCost -benchtime 1x ./integration/
func BenchmarkStartupCost(b *testing.B) {
	for _, c := range []struct{ ttl, skew time.Duration }{{15 * time.Second, 2 * time.Second}, {2 * time.Second, 200 * time.Millisecond}} {
		b.Run(fmt.Sprintf("lease_ttl=%v/max_clock_skew=%v", c.ttl, c.skew), func(b *testing.B) {
			var fresh, released time.Duration
			for b.Loop() {
				f, r := startupCost(b, c.ttl, c.skew)
				fresh += f
				released += r
			}
			b.ReportMetric(fresh.Seconds()/float64(b.N), "s-fresh")
			b.ReportMetric(released.Seconds()/float64(b.N), "s-released")
		})
	}
}
