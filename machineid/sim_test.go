package machineid

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var (
	simSeed      = flag.Uint64("sim.seed", 0, "replay this schedule of the lease simulation, printing its events")
	simSchedules = flag.Int("sim.schedules", 0, "schedules the lease simulation explores (0: its budget)")
	simProvider  = flag.String("sim.provider", "", "redis or etcd; empty draws one per schedule")
	simFrom      = flag.Uint64("sim.from", 0, "the first seed the lease simulation explores (0: from the clock)")
)

// simStuck is how long one schedule may take on the wall clock before the
// run panics with its seed: a schedule that never ends is livelocked (its
// goroutines keep running at one instant, so the bubble's time never
// advances) or deadlocked outside the bubble's view.
const simStuck = 30 * time.Second

// simOptions choose what a simulation run draws and plants.
type simOptions struct {
	provider string
	faults   simFaults
	plant    plantedBugs
}

// runSim runs seed's schedule in a bubble of its own.
func runSim(t *testing.T, seed uint64, o simOptions, traced bool) (*simPlan, *simCheck) {
	plan := newSimPlan(seed, o.provider, o.faults)
	var c *simCheck
	synctest.Test(t, func(*testing.T) { c = simulate(plan, o.plant, traced) })
	return plan, c
}

// explore runs schedules from seed0 on every core until n ran (n <= 0:
// no bound), stop is closed or one fails; it returns the failing seed.
func explore(t *testing.T, o simOptions, seed0 uint64, n int, stop <-chan struct{}) (failed uint64, found bool, ran int64) {
	workers := runtime.GOMAXPROCS(0)
	// Schedules allocate much and keep little: collect less often.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var next, done, handovers atomic.Int64
	var mu sync.Mutex
	quit := make(chan struct{})
	var once sync.Once
	type running struct {
		seed  uint64
		since time.Time
	}
	cur := make([]atomic.Pointer[running], workers)
	watch := time.NewTicker(time.Second)
	defer watch.Stop()
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		for {
			select {
			case <-watchDone:
				return
			case <-watch.C:
			}
			for i := range cur {
				if r := cur[i].Load(); r != nil && time.Since(r.since) > simStuck {
					panic(fmt.Sprintf("the lease simulation's schedule %d has run for %s: replay it with go test ./machineid -run 'TestLeaseSimulation$' -sim.seed=%d -v", r.seed, simStuck, r.seed))
				}
			}
		}
	}()
	t.Run("explore", func(t *testing.T) {
		for i := range workers {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				for {
					select {
					case <-stop:
						return
					case <-quit:
						return
					default:
					}
					k := next.Add(1) - 1
					if n > 0 && k >= int64(n) {
						return
					}
					seed := seed0 + uint64(k)
					cur[i].Store(&running{seed, time.Now()})
					_, c := runSim(t, seed, o, false)
					cur[i].Store(nil)
					done.Add(1)
					if c.handovers > 0 {
						handovers.Add(1)
					}
					if c.fail != "" {
						mu.Lock()
						if !found || seed < failed {
							failed, found = seed, true
						}
						mu.Unlock()
						once.Do(func() { close(quit) })
						return
					}
				}
			})
		}
	})
	t.Logf("%d of %d schedules handed an ID over from a live holder", handovers.Load(), done.Load())
	return failed, found, done.Load()
}

// simReport prints a failing seed's plan and events, and the replay command.
func simReport(t *testing.T, seed uint64, o simOptions) string {
	plan, c := runSim(t, seed, o, true)
	var b strings.Builder
	fmt.Fprintf(&b, "%s", plan)
	if c.w.trace != nil {
		for _, l := range c.w.trace.lines {
			b.WriteString(l + "\n")
		}
	}
	fmt.Fprintf(&b, "failure: %s\n", c.fail)
	fmt.Fprintf(&b, "replay: go test ./machineid -run 'TestLeaseSimulation$' -sim.seed=%d -v\n", seed)
	return b.String()
}

func TestLeaseSimulation(t *testing.T) {
	o := simOptions{provider: *simProvider}
	if *simSeed != 0 {
		out := simReport(t, *simSeed, o)
		t.Log(out)
		return
	}
	n := *simSchedules
	if n == 0 {
		n = 2000
		if testing.Short() {
			n = 50
		}
	}
	seed0 := *simFrom
	if seed0 == 0 {
		seed0 = uint64(time.Now().UnixNano())
	}
	start := time.Now()
	failed, found, ran := explore(t, o, seed0, n, nil)
	t.Logf("%d schedules from seed %d in %s", ran, seed0, time.Since(start).Round(time.Millisecond))
	if found {
		t.Fatalf("the lease simulation failed:\n%s", simReport(t, failed, o))
	}
}

// ttlCasePlan is the repeat reproduced with real processes: one Redis;
// host A with lease_ttl 15s cut off from Redis just after a renewal; Redis
// restarted empty; host B with lease_ttl 1s claims the same ID and waits a
// quarantine reckoned from its own timing while A issues until its own
// deadline.
func ttlCasePlan() *simPlan {
	p := &simPlan{seed: 1, provider: ProviderRedis, layout: 0, typ: 0, rng: Range{First: 924, Count: 1}, horizon: 30 * time.Second}
	a := &hostPlan{name: "A", ttl: 15 * time.Second, skew: 20 * time.Millisecond, borrow: time.Second, window: 10 * time.Second,
		startupWait: 10 * time.Second, lat: time.Millisecond, issueEvery: 100 * time.Millisecond, batch: 100,
		procs:      []procPlan{{start: 0, end: 30 * time.Second, retry: time.Second}},
		partitions: []window{{5*time.Second + 10*time.Millisecond, 30 * time.Second}}}
	b := &hostPlan{name: "B", ttl: time.Second, skew: 20 * time.Millisecond, borrow: time.Second, window: 3 * time.Second,
		startupWait: 10 * time.Second, lat: time.Millisecond, issueEvery: 100 * time.Millisecond, batch: 100,
		procs: []procPlan{{start: 500 * time.Millisecond, end: 30 * time.Second, retry: 500 * time.Millisecond}}}
	p.hosts = []*hostPlan{a, b}
	p.store = []storeEvent{{at: 5500 * time.Millisecond, kind: restartEmpty}}
	return p
}

func TestLeaseSimulationTTLCase(t *testing.T) {
	var c *simCheck
	synctest.Test(t, func(*testing.T) { c = simulate(ttlCasePlan(), plantedBugs{}, true) })
	t.Log(strings.Join(c.w.trace.lines, "\n"))
	t.Log(c.fail)
}

// TestLeaseSimulationReplays runs schedules twice and compares their
// events before the horizon (IDs left out: the sorted and leaf layouts
// start each time unit at a random sequence number).
func TestLeaseSimulationReplays(t *testing.T) {
	n := 200
	seed0 := uint64(time.Now().UnixNano())
	same := 0
	for i := range n {
		seed := seed0 + uint64(i)
		pa, a := runSim(t, seed, simOptions{provider: *simProvider}, true)
		_, b := runSim(t, seed, simOptions{provider: *simProvider}, true)
		if eventsBefore(a, pa.horizon) == eventsBefore(b, pa.horizon) {
			same++
		}
	}
	t.Logf("%d of %d schedules replayed exactly", same, n)
}

func eventsBefore(c *simCheck, h time.Duration) string {
	var keep []string
	for _, l := range c.w.trace.lines {
		if d, err := time.ParseDuration(strings.TrimSpace(l[:12])); err == nil && d < h {
			keep = append(keep, l)
		}
	}
	slices.Sort(keep)
	return strings.Join(keep, "\n")
}
