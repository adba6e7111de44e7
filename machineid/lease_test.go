package machineid_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid"
)

// issued collects what an issuing loop got.
type issued struct {
	mu     sync.Mutex
	ids    []core.ID
	starts []time.Time // when each successful call started
	errs   []error
}

// issue calls NextID until the returned stop is called (also at the end of
// the test, before the generator closes), recording what it got.
func issue(t testing.TB, gen *core.Generator, out *issued) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			start := time.Now()
			id, err := gen.NextID(context.Background(), core.Central)
			out.mu.Lock()
			if err != nil {
				out.errs = append(out.errs, err)
			} else {
				out.ids = append(out.ids, id)
				out.starts = append(out.starts, start)
			}
			out.mu.Unlock()
			if err != nil {
				time.Sleep(time.Millisecond)
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func (o *issued) count() (ok, failed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.ids), len(o.errs)
}

// strictlyIncreasing fails when an ID repeats or goes back.
func strictlyIncreasing(t testing.TB, ids []core.ID) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ID %d at %d after %d: not increasing", ids[i], i, ids[i-1])
		}
	}
}

// TestRedisLostWhileRunning, for a sorted and a leaf generator: the lease
// fences issuing in time whatever the layout.
func TestRedisLostWhileRunning(t *testing.T) {
	for _, gc := range []core.Config{{GuardWindow: time.Second}, {Layout: core.Leaf, Type: core.MinGranularity, GuardWindow: time.Second}} {
		t.Run(gc.Layout.String(), func(t *testing.T) { testRedisLostWhileRunning(t, gc) })
	}
}

func testRedisLostWhileRunning(t *testing.T, gc core.Config) {
	srv, c := startRedis(t, 3*time.Second)
	rdb := client(t, srv)
	c.Redis.SafetyMargin = 1500 * time.Millisecond
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, gc)
	var out issued
	stop := issue(t, gen, &out)
	eventually(t, "IDs issued", func() bool { n, _ := out.count(); return n > 100 })

	// Redis keeps the lease at least until sent+PTTL; renewals only push
	// the expiry later, so this is a lower bound of when another process
	// could take the ID.
	leaseKey := leaseKeyOf(l.ID())
	sent := time.Now()
	pttl, err := rdb.PTTL(context.Background(), leaseKey).Result()
	if err != nil || pttl <= 0 {
		t.Fatalf("PTTL = %v, %v", pttl, err)
	}
	expiry := sent.Add(pttl)
	srv.Kill()
	eventually(t, "the fence", func() bool { return l.Status().State == machineid.StateFenced })
	fencedAt := time.Now()
	err = gen.Ready()
	if !errors.Is(err, core.ErrFenced) || !errors.Is(err, machineid.ErrLeaseLost) {
		t.Fatalf("Ready while Redis is down: %v; want core.ErrFenced wrapping ErrLeaseLost", err)
	}
	out.mu.Lock()
	before := slices.Clone(out.ids)
	for i, s := range out.starts {
		if !s.Before(expiry) {
			t.Errorf("ID %d issued by a call started %s after the lease could expire", out.ids[i], s.Sub(expiry))
		}
	}
	out.mu.Unlock()
	t.Logf("fenced %s before the earliest expiry of the lease", expiry.Sub(fencedAt).Round(time.Millisecond))

	// Redis comes back empty: the lease is claimed again (the same ID is
	// free), its mark raised to what this process reserved, and issuing
	// resumes above everything issued before.
	srv.Restart()
	eventually(t, "issuing to resume", func() bool {
		n, _ := out.count()
		return l.Status().State == machineid.StateHeld && n > len(before)+100
	})
	stop()
	out.mu.Lock()
	defer out.mu.Unlock()
	strictlyIncreasing(t, out.ids)
	if s := l.Status(); s.Fences == 0 || s.RenewFailures == 0 {
		t.Fatalf("status %+v; want fences and renewal failures counted", s)
	}
	if gen.Ready() != nil {
		t.Fatalf("Ready after recovery: %v", gen.Ready())
	}
}

func TestStolenLeaseIsFencedAndReplaced(t *testing.T) {
	srv, c := startRedis(t, 3*time.Second)
	rdb := client(t, srv)
	c.ServerRange = core.MachineRange{First: 924, Count: 2}
	l := mustAcquire(t, c, core.Central)
	first := l.ID()
	gen := generator(t, l, core.Config{})
	var out issued
	stop := issue(t, gen, &out)
	eventually(t, "IDs issued", func() bool { n, _ := out.count(); return n > 100 })

	leaseKey := leaseKeyOf(first)
	if err := rdb.Set(context.Background(), leaseKey, "thief", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Fenced at the next renewal, long before the TTL (a save of the mark
	// that finds the lease gone triggers that renewal at once).
	eventually(t, "the fence", func() bool { return l.Status().Fences > 0 })
	// Re-acquired on the other ID of the range, the generator re-keyed.
	eventually(t, "a new lease", func() bool {
		return l.Status().State == machineid.StateHeld && gen.Machine() != first && gen.Ready() == nil
	})
	if l.ID() != gen.Machine() || !c.ServerRange.Contains(l.ID()) {
		t.Fatalf("lease %d, generator %d", l.ID(), gen.Machine())
	}
	eventually(t, "IDs on the new machine ID", func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return gen.Codec().Explain(out.ids[len(out.ids)-1]).Machine == l.ID()
	})
	stop()
	seen := map[core.ID]bool{}
	for _, id := range out.ids {
		if seen[id] {
			t.Fatalf("ID %d issued twice", id)
		}
		seen[id] = true
	}
	if v := rdb.Get(context.Background(), leaseKey).Val(); v != "thief" {
		t.Fatalf("the thief's lease became %q; nobody else may touch it", v)
	}
	if st := l.Stats(); st.Fences < 1 || st.RenewFailures < 1 || st.Renewals.Count() < 1 {
		t.Fatalf("stats: %d fences, %d failed renewals, %d renewals timed; want one of each at least", st.Fences, st.RenewFailures, st.Renewals.Count())
	}
}

func TestExpiredLeaseIsReclaimedWithoutGoingBack(t *testing.T) {
	srv, c := startRedis(t, 3*time.Second)
	rdb := client(t, srv)
	l := mustAcquire(t, c, core.Central)
	id := l.ID()
	gen := generator(t, l, core.Config{MaxStartupWait: 10 * time.Second, MaxBorrow: time.Second})
	var out issued
	stop := issue(t, gen, &out)
	eventually(t, "IDs issued", func() bool { n, _ := out.count(); return n > 100 })
	rdb.Del(context.Background(), leaseKeyOf(id)) // as if it expired behind our back
	eventually(t, "the fence", func() bool { return l.Status().Fences > 0 })
	n0, _ := out.count()
	eventually(t, "issuing to resume", func() bool {
		n, _ := out.count()
		return l.Status().State == machineid.StateHeld && n > n0+100
	})
	stop()
	if l.ID() != id {
		t.Fatalf("re-acquired %d; want the free ID %d again", l.ID(), id)
	}
	strictlyIncreasing(t, out.ids)
}

// TestDeadlineOnAFakeClock drives the lease's clock by hand: the watchdog
// fences exactly at the deadline, not before, while renewals fail.
func TestDeadlineOnAFakeClock(t *testing.T) {
	srv := redistest.Start(t)
	one := core.MachineRange{First: 1000, Count: 1}
	releasedCleanly(t, srv, core.Central, one) // no quarantine on the fake clock
	clock := core.NewManualClock(time.Now())
	c := redisConfig(t, srv, 3*time.Second) // renew every 1s, retry every 300ms
	c.ServerRange = one
	c.Redis.MaxClockSkew = time.Minute // the fake clock runs ahead of Redis's
	machineid.SetMaxRedisReach(t, time.Hour)
	c.Redis.SafetyMargin = time.Second // deadline 2s after a renewal was sent
	c.Clock = clock
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	deadline := l.Status().Deadline
	if got := deadline.Sub(clock.Now()); got != 2*time.Second {
		t.Fatalf("deadline %s after the claim; want 2s", got)
	}
	srv.Kill()
	clock.Advance(time.Second) // the first renewal is due, and fails
	eventually(t, "a failed renewal", func() bool { return l.Status().RenewFailures >= 1 })
	clock.Advance(999 * time.Millisecond) // a retry is due, and fails
	eventually(t, "a second failed renewal", func() bool { return l.Status().RenewFailures >= 2 })
	if err := gen.Ready(); err != nil {
		t.Fatalf("fenced 1ms before the deadline: %v", err)
	}
	if s := l.Status(); s.State != machineid.StateHeld || s.Deadline != deadline {
		t.Fatalf("status before the deadline %+v", s)
	}
	clock.Advance(time.Millisecond)
	eventually(t, "the fence at the deadline", func() bool { return gen.Ready() != nil })
	if err := gen.Ready(); !errors.Is(err, machineid.ErrLeaseLost) {
		t.Fatalf("Ready: %v; want ErrLeaseLost", err)
	}
	if s := l.Status(); s.State != machineid.StateFenced || s.Fences != 1 || !errors.Is(s.Err, machineid.ErrLeaseLost) {
		t.Fatalf("status at the deadline %+v", s)
	}
}

// TestRenewalAfterTheDeadlineUnfences: a clock that jumps past the deadline
// fences (the renewer checks the deadline before renewing), and the
// renewal that then finds the token still in Redis unfences at once.
func TestRenewalAfterTheDeadlineUnfences(t *testing.T) {
	srv := redistest.Start(t)
	one := core.MachineRange{First: 1000, Count: 1}
	releasedCleanly(t, srv, core.Central, one) // no quarantine on the fake clock
	clock := core.NewManualClock(time.Now())
	c := redisConfig(t, srv, 30*time.Second)
	c.ServerRange = one
	c.Redis.MaxClockSkew = 10 * time.Minute // the fake clock runs ahead of Redis's
	machineid.SetMaxRedisReach(t, time.Hour)
	c.Clock = clock
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	id := l.ID()
	clock.Advance(time.Minute)
	eventually(t, "fence and renewal", func() bool {
		s := l.Status()
		return s.Fences == 1 && s.State == machineid.StateHeld
	})
	if err := gen.Ready(); err != nil || l.ID() != id || gen.Machine() != id {
		t.Fatalf("after the late renewal: Ready %v, lease %d, generator %d; want issuing on %d", err, l.ID(), gen.Machine(), id)
	}
}

// The holder subprocess: leases the one ID of the range and issues until
// killed, printing the highest ID so far after every batch.
const holderEnv = "VESTA_MACHINEID_TEST_HOLDER"

func TestMain(m *testing.M) {
	if addr := os.Getenv(holderEnv); addr != "" {
		os.Exit(runHolder(addr))
	}
	os.Exit(m.Run())
}

// holderConfig leases the one ID 1000 from the Redis at addr, or from
// the etcd endpoint after "etcd=".
func holderConfig(addr string) machineid.Config {
	c := machineid.DefaultConfig()
	if ep, ok := strings.CutPrefix(addr, "etcd="); ok {
		c.Providers = []string{machineid.ProviderEtcd}
		c.Etcd.Endpoints = []string{ep}
		c.Etcd.LeaseTTL = 2 * time.Second
	} else {
		c.Providers = []string{machineid.ProviderRedis}
		c.Redis.Addrs = []string{addr}
		c.Redis.LeaseTTL = 2 * time.Second
		c.Redis.MaxClockSkew = testSkew
	}
	c.ServerRange = core.MachineRange{First: 1000, Count: 1}
	return c
}

func runHolder(addr string) int {
	machineid.SetReach(testReach) // as redisConfig: a quarantine of seconds
	ctx := context.Background()
	l, err := machineid.Acquire(ctx, holderConfig(addr), core.Central)
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	cfg := core.Config{Machine: l.ID(), Guard: l.Guard(), MaxBorrow: time.Second}
	err = l.Prepare(ctx, cfg)
	var gen *core.Generator
	if err == nil {
		gen, err = core.New(ctx, cfg)
	}
	if err == nil {
		err = l.Attach(gen)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	for {
		ids, err := gen.NextIDs(ctx, core.Central, 1000)
		if err != nil {
			fmt.Fprintln(os.Stderr, "holder:", err)
			return 1
		}
		fmt.Fprintln(w, ids[len(ids)-1])
		w.Flush()
		time.Sleep(time.Millisecond)
	}
}

// holder is the holder subprocess, seen from the test.
type holder struct {
	cmd    *exec.Cmd
	sc     *bufio.Scanner
	stderr bytes.Buffer
	max    core.ID // the highest ID it printed
}

func startHolder(t testing.TB, addr string) *holder {
	h := &holder{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	h.cmd.Env = append(os.Environ(), holderEnv+"="+addr)
	h.cmd.Stderr = &h.stderr
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.cmd.Process.Kill()
		h.drain()
	})
	h.sc = bufio.NewScanner(stdout)
	return h
}

// read reads n batches, failing if the holder stops first.
func (h *holder) read(t testing.TB, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if !h.sc.Scan() {
			h.cmd.Process.Kill()
			h.drain()
			t.Fatalf("the holder stopped after %d batches: %s", i, h.stderr.String())
		}
		h.note(t, h.sc.Text())
	}
}

func (h *holder) note(t testing.TB, line string) {
	id, err := strconv.ParseUint(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Errorf("holder printed %q", line)
	}
	h.max = max(h.max, core.ID(id))
}

// kill kills the holder with SIGKILL and reads what it printed before the
// kill landed.
func (h *holder) kill(t testing.TB) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.drain()
}

// drain reads until the holder's output ends and reaps it.
func (h *holder) drain() {
	for h.sc.Scan() {
		if id, err := strconv.ParseUint(strings.TrimSpace(h.sc.Text()), 10, 64); err == nil {
			h.max = max(h.max, core.ID(id))
		}
	}
	h.cmd.Wait()
}

// takeOver leases the holder's one ID once its lease is gone: first the
// range is full, then (after the TTL) the ID is free.
func takeOver(t testing.TB, addr string) *machineid.Lease {
	t.Helper()
	c := holderConfig(addr)
	if _, err := acquire(t, c, core.Central); !errtest.Wraps(err, machineid.ErrRangeFull, "1000-1000") {
		t.Fatalf("Acquire while the holder's lease stands: %v; want ErrRangeFull naming 1000-1000", err)
	}
	var l *machineid.Lease
	eventually(t, "the holder's lease to expire", func() bool {
		var err error
		l, err = acquire(t, c, core.Central)
		if err != nil && !errors.Is(err, machineid.ErrRangeFull) {
			t.Fatalf("Acquire: %v", err)
		}
		return err == nil
	})
	return l
}

func TestKilledHolderIsOvertakenAfterItsMark(t *testing.T) {
	srv := redistest.Start(t)
	h := startHolder(t, srv.Addr())
	h.read(t, 200)
	h.kill(t)
	maxDead := h.max
	l := takeOver(t, srv.Addr())

	// A clock a minute behind cannot start below the dead holder's mark:
	// without waiting it refuses, with waiting it starts above the mark.
	behind := core.NewManualClock(time.Now().Add(-time.Minute))
	_, err := core.New(context.Background(), core.Config{Machine: l.ID(), Guard: l.Guard(), Clock: behind, MaxBorrow: time.Second})
	if !errors.Is(err, core.ErrClockBehind) {
		t.Fatalf("core.New with the clock a minute behind: %v; want ErrClockBehind", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the clock moves only while New sleeps on it
		for behind.BlockUntil(ctx, 1) == nil {
			behind.Advance(time.Second)
		}
	}()
	gen, err := core.New(ctx, core.Config{Machine: l.ID(), Guard: l.Guard(), Clock: behind,
		MaxBorrow: time.Second, MaxStartupWait: 2 * time.Minute})
	cancel()
	if err != nil {
		t.Fatalf("core.New waiting for the mark: %v", err)
	}
	defer gen.Close()
	if err := l.Attach(gen); err != nil {
		t.Fatal(err)
	}
	ids := nextIDs(t, gen, 5000)
	if ids[0] <= maxDead {
		t.Fatalf("the next holder's first ID %d is not above the dead holder's %d", ids[0], maxDead)
	}
	t.Logf("dead holder's last ID %d, next holder's first %d", maxDead, ids[0])
}

// TestFrozenHolderCannotCollide: a holder stopped (SIGSTOP) past its lease
// wakes up after another process took its ID. Whatever it still issues
// lies below the mark the new holder started from.
func TestFrozenHolderCannotCollide(t *testing.T) {
	srv := redistest.Start(t)
	h := startHolder(t, srv.Addr())
	h.read(t, 100)
	if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	l := takeOver(t, srv.Addr())
	gen := generator(t, l, core.Config{MaxBorrow: time.Second, MaxStartupWait: 10 * time.Second})
	ids := nextIDs(t, gen, 1000)
	if err := h.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The holder issues what its durable mark still allows, then stops:
	// fenced, or refused by its time guard.
	h.drain()
	if !strings.Contains(h.stderr.String(), "fenced") && !strings.Contains(h.stderr.String(), "time guard") {
		t.Fatalf("the woken holder ended with %q; want fenced or refused by its time guard", h.stderr.String())
	}
	t.Logf("the woken holder: %s", strings.TrimSpace(h.stderr.String()))
	if h.max >= ids[0] {
		t.Fatalf("the woken holder issued %d, not below the new holder's first ID %d", h.max, ids[0])
	}
	more, err := gen.NextIDs(context.Background(), core.Central, 1000)
	if err != nil || more[0] <= ids[len(ids)-1] {
		t.Fatalf("the new holder after the old one woke: %v, %v", more[:1], err)
	}
}

// TestLostAfterTheGeneratorClosed: a lease lost after its generator was
// closed claims again but has nothing to re-key; Close then releases
// whatever it holds.
func TestLostAfterTheGeneratorClosed(t *testing.T) {
	srv, c := startRedis(t, 3*time.Second)
	rdb := client(t, srv)
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	if err := gen.Close(); err != nil {
		t.Fatal(err)
	}
	rdb.Del(context.Background(), leaseKeyOf(l.ID()))
	eventually(t, "the lease claimed again", func() bool {
		s := l.Status()
		return s.Fences > 0 && s.State == machineid.StateHeld
	})
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if keys := rdb.Keys(context.Background(), "*:lease").Val(); len(keys) != 0 {
		t.Fatalf("leases left after Close: %v", keys)
	}
}
