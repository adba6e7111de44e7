package client_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/core"
)

// advancingClock is the client's clock in tests against real servers on a
// shared core.ManualClock: a wait moves the shared clock ahead by its
// length, so the servers' sequences have room when it ends, at once.
type advancingClock struct{ mc *core.ManualClock }

func (c advancingClock) Now() time.Time { return c.mc.Now() }

func (c advancingClock) After(d time.Duration) <-chan time.Time {
	c.mc.Advance(max(d, 0))
	ch := make(chan time.Time, 1)
	ch <- c.mc.Now()
	return ch
}

// ceilingServers starts n real central servers (machines 1000, 1001, ...)
// whose generators run on mc, min-granularity with no borrowing: each
// issues at most 1024 IDs per millisecond of mc, so a test passes their
// ceilings with a few thousand IDs.
func ceilingServers(t testing.TB, mc *core.ManualClock, n int) []string {
	t.Helper()
	var addrs []string
	for i := range n {
		srv := startCentralGen(t, core.Config{
			Machine: core.MachineID(1000 + i), Type: core.MinGranularity, Clock: mc,
		}, central.Config{})
		addrs = append(addrs, srv.addr)
	}
	return addrs
}

// Past the ceiling of real servers, every call gets every ID it asked for,
// in increasing order, from the servers (never the fallback), and no
// breaker opens: the client waits instead.
func TestPastTheCeilingOfRealServers(t *testing.T) {
	for _, tc := range []struct {
		servers, prefetch int
	}{{1, 0}, {1, 4096}, {3, 0}, {3, 4096}} {
		t.Run(fmt.Sprintf("servers=%d/prefetch=%d", tc.servers, tc.prefetch), func(t *testing.T) {
			mc := core.NewManualClock(time.Now())
			addrs := ceilingServers(t, mc, tc.servers)
			cfg := testConfig(t, addrs...)
			cfg.Prefetch = tc.prefetch
			c := clockClient(t, cfg, advancingClock{mc})
			reg := registry(t, c)
			ctx := context.Background()

			const batchers, batches, batch = 3, 4, 3000 // each batch spans several units
			const singles, each = 3, 1500
			var all collect
			var wg sync.WaitGroup
			for range batchers {
				wg.Go(func() {
					for range batches {
						ids, err := c.NextIDs(ctx, batch)
						if err != nil {
							t.Error(err)
							return
						}
						if len(ids) != batch || !slices.IsSorted(ids) {
							t.Errorf("NextIDs(%d): %d IDs, sorted %v", batch, len(ids), slices.IsSorted(ids))
							return
						}
						all.add(ids...)
					}
				})
			}
			all.singles(t, &wg, c, singles, each)
			wg.Wait()
			if t.Failed() {
				return
			}
			if n := len(all.seen); n != batchers*batches*batch+singles*each || all.dups > 0 {
				t.Fatalf("%d distinct IDs, %d duplicates", n, all.dups)
			}
			machines := map[core.MachineID]int{}
			for id := range all.seen {
				machines[c.Explain(id).Machine]++
			}
			for i := range tc.servers {
				if machines[core.MachineID(1000+i)] == 0 {
					t.Errorf("no ID from server %d (machines %v)", i, machines)
				}
			}
			if len(machines) != tc.servers {
				t.Errorf("IDs of machines %v; want the servers' only (no fallback)", machines)
			}
			if waits := counter(t, reg, "vesta_ceiling_waits_total", "method", "central"); waits == 0 {
				t.Error("no call waited at the ceiling: the test did not pass it")
			}
			for _, s := range c.Servers() {
				if s.Breaker != gobreaker.StateClosed {
					t.Errorf("breaker of %s %v; want closed", s.Addr, s.Breaker)
				}
				if got := counter(t, reg, "vesta_client_calls_total", "server", s.Addr, "result", "timeout"); got != 0 {
					t.Errorf("%v calls to %s timed out", got, s.Addr)
				}
			}
			if c.InFallback() || counter(t, reg, "vesta_ids_issued_total", "method", "embedded") != 0 {
				t.Error("the fallback served at the ceiling")
			}
		})
	}
}

// One batch larger than a server's ceiling, with the clock stopped until
// every server said busy: the client took from all of them before waiting.
func TestBatchSpreadsOverRealServers(t *testing.T) {
	mc := core.NewManualClock(time.Now())
	addrs := ceilingServers(t, mc, 3)
	cfg := testConfig(t, addrs...)
	c := clockClient(t, cfg, advancingClock{mc})
	start := mc.Now()
	ids, err := c.NextIDs(context.Background(), 2500) // more than two servers' units
	if err != nil {
		t.Fatal(err)
	}
	machines := map[core.MachineID]int{}
	for _, id := range ids {
		machines[c.Explain(id).Machine]++
	}
	if len(machines) != 3 {
		t.Errorf("IDs from machines %v; want all three servers", machines)
	}
	t.Logf("2500 IDs from %v in %v of the servers' clock", machines, mc.Now().Sub(start))
}
