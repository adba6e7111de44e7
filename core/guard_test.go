package core_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

func guarded(clk core.Clock, g core.GuardStore) core.Config {
	cfg := core.DefaultConfig()
	cfg.Clock, cfg.Guard = clk, g
	return cfg
}

// fileGuard opens machine's file guard in dir, closed when the test ends.
func fileGuard(tb testing.TB, dir string, machine core.MachineID) *core.FileGuard {
	tb.Helper()
	fg, err := core.OpenFileGuard(dir, machine)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fg.Close() })
	return fg
}

// guardBound is a generator on a manual clock that only its memory guard
// limits (an hour of borrowing), the guard's saves blocked until the test
// ends or it calls release.
func guardBound(t *testing.T) (g *core.Generator, store *core.MemGuard, release func()) {
	t.Helper()
	store = core.NewMemGuard(time.Time{})
	cfg := guarded(core.NewManualClock(t0), store)
	cfg.MaxBorrow = time.Hour
	g = newGen(t, cfg)
	release = store.Block()
	t.Cleanup(release)
	return g, store, release
}

// unitOf is the time field of id.
func unitOf(g *core.Generator, id core.ID) uint64 { return g.Codec().Explain(id).Time }

func markUnit(tb testing.TB, g *core.Generator, mark time.Time) uint64 {
	tb.Helper()
	u, err := g.Codec().Units(g.Type(), mark)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func TestGuardReservesAheadAndNeverIssuesPastIt(t *testing.T) {
	clk := core.NewManualClock(t0)
	store := core.NewMemGuard(time.Time{})
	g := newGen(t, guarded(clk, store))
	if store.Saves() != 1 || !store.Mark().Equal(t0.Add(3*time.Second)) {
		t.Fatalf("first reservation %s after %d saves; want %s", store.Mark(), store.Saves(), t0.Add(3*time.Second))
	}
	// Issue across many seconds; the durable mark is always above every ID.
	for i := range 20 {
		ids, err := g.NextIDs(context.Background(), core.Embedded, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if last := unitOf(g, ids[len(ids)-1]); last >= markUnit(t, g, store.Mark()) {
			t.Fatalf("step %d: issued unit %d at or past the durable mark %s", i, last, store.Mark())
		}
		clk.Advance(700 * time.Millisecond)
	}
}

func TestGuardFailingStoreStopsAtLastDurableMark(t *testing.T) {
	clk := core.NewManualClock(t0)
	store := core.NewMemGuard(time.Time{})
	cfg := guarded(clk, store)
	cfg.MaxBorrow = time.Hour // only the guard limits issuing
	g := newGen(t, cfg)
	boom := errors.New("disk on fire")
	store.Fail(boom)
	// The first reservation (t0+3s) stands: 3 units of IDs, then ErrGuard.
	var n int
	var err error
	for err == nil {
		_, err = g.NextIDs(context.Background(), core.Embedded, 1<<19)
		n++
	}
	if !errors.Is(err, core.ErrGuard) {
		t.Fatalf("got %v; want ErrGuard", err)
	}
	if n > 7 { // 3 units of 2^20 in batches of 2^19, plus the one that failed
		t.Fatalf("issued %d batches past a failing store", n)
	}
	if err := g.Ready(); !errors.Is(err, core.ErrGuard) || !errors.Is(err, boom) {
		t.Fatalf("Ready: %v", err)
	}
	store.Fail(nil)
	// The reserver retries once a period (1s): advance until it heals.
	// The reserver is idle when its timer is the clock's only waiter; after
	// each tick it saves, then waits again.
	waittest.Until(t, "the reserver to heal", func() bool {
		if g.Ready() == nil {
			return true
		}
		waittest.Sleepers(t, clk, 1)
		clk.Advance(time.Second)
		waittest.Sleepers(t, clk, 1)
		return false
	})
	if _, err := g.NextID(context.Background(), core.Embedded); err != nil {
		t.Fatal(err)
	}
}

func TestGuardSlowStoreMakesCallersWait(t *testing.T) {
	g, _, release := guardBound(t)
	// Use up the first reservation (3 units).
	if _, err := g.NextIDs(context.Background(), core.Embedded, 3<<20-1024); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := g.NextIDs(ctx, core.Embedded, 1<<20)
	if !errors.Is(err, core.ErrGuard) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v; want a guard wait ended by the deadline", err)
	}
	done := make(chan error)
	go func() {
		_, err := g.NextIDs(context.Background(), core.Embedded, 1<<20)
		done <- err
	}()
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestCloseSavesExactMark(t *testing.T) {
	clk := core.NewManualClock(t0)
	store := core.NewMemGuard(time.Time{})
	g, err := core.New(context.Background(), guarded(clk, store))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := g.NextIDs(context.Background(), core.Embedded, 1<<20+10) // borrows into t0+1s
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	last := unitOf(g, ids[len(ids)-1])
	if got := markUnit(t, g, store.Mark()); got != last+1 {
		t.Fatalf("final mark at unit %d; want %d (just past the last ID)", got, last+1)
	}
}

// IDs returned while Close runs all lie below the final mark.
func TestCloseRacingIssuers(t *testing.T) {
	for range 20 {
		store := core.NewMemGuard(time.Time{})
		cfg := guarded(nil, store)
		cfg.MaxBorrow = time.Hour
		g, err := core.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var all []core.ID
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					ids, err := g.NextIDs(context.Background(), core.Embedded, 64)
					if errors.Is(err, core.ErrClosed) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					all = append(all, ids...)
					mu.Unlock()
				}
			})
		}
		waittest.Until(t, "issuing under way", func() bool { mu.Lock(); defer mu.Unlock(); return len(all) > 0 })
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		mark := markUnit(t, g, store.Mark())
		for _, id := range all {
			if unitOf(g, id) >= mark {
				t.Fatalf("ID %d (unit %d) issued at or past the final mark (unit %d)", id, unitOf(g, id), mark)
			}
		}
	}
}

func TestRestartWithClockBehindMark(t *testing.T) {
	mark := t0.Add(5 * time.Second)
	t.Run("waits", func(t *testing.T) {
		clk := core.NewManualClock(t0)
		store := core.NewMemGuard(mark)
		type result struct {
			g   *core.Generator
			err error
		}
		res := make(chan result)
		go func() {
			g, err := core.New(context.Background(), guarded(clk, store)) // MaxStartupWait 10s
			res <- result{g, err}
		}()
		waittest.Sleepers(t, clk, 1)
		clk.Advance(4 * time.Second) // now within MaxBorrow (1s) of the mark
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.g.Close()
		if u := unitOf(r.g, next(t, r.g)); u < markUnit(t, r.g, mark) {
			t.Fatalf("first ID at unit %d, below the mark", u)
		}
	})
	t.Run("borrows-small-gap", func(t *testing.T) {
		clk := core.NewManualClock(mark.Add(-800 * time.Millisecond))
		g := newGen(t, guarded(clk, core.NewMemGuard(mark)))
		if u := unitOf(g, next(t, g)); u < markUnit(t, g, mark) {
			t.Fatalf("first ID at unit %d, below the mark", u)
		}
	})
	t.Run("refuses", func(t *testing.T) {
		clk := core.NewManualClock(t0.Add(-time.Hour))
		_, err := core.New(context.Background(), guarded(clk, core.NewMemGuard(mark)))
		if !errtest.Wraps(err, core.ErrClockBehind, "1h0m5s behind") {
			t.Fatalf("got %v; want ErrClockBehind naming the 1h0m5s gap", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		clk := core.NewManualClock(t0)
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error)
		go func() {
			_, err := core.New(ctx, guarded(clk, core.NewMemGuard(mark)))
			res <- err
		}()
		waittest.Sleepers(t, clk, 1)
		cancel()
		if err := <-res; !errors.Is(err, core.ErrClockBehind) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("load-fails", func(t *testing.T) {
		store := core.NewMemGuard(mark)
		store.Fail(errors.New("unreachable"))
		if _, err := core.New(context.Background(), guarded(core.NewManualClock(t0), store)); !errors.Is(err, core.ErrGuard) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestRekey(t *testing.T) {
	clk := core.NewManualClock(t0)
	oldStore := core.NewMemGuard(time.Time{})
	cfg := guarded(clk, oldStore)
	cfg.Machine = 5
	g := newGen(t, cfg)
	before := next(t, g)
	// The new machine ID was used elsewhere up to t0+2s.
	newStore := core.NewMemGuard(t0.Add(2 * time.Second))
	release := newStore.Block()
	done := make(chan error)
	go func() { done <- g.Control().Rekey(context.Background(), 9, newStore) }()
	// While the new guard's first save is pending, calls are fenced.
	for {
		_, err := g.NextID(context.Background(), core.Embedded)
		if errors.Is(err, core.ErrFenced) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	release()
	// Clock at t0, the new mark at t0+2s, MaxBorrow 1s: Rekey waits for the
	// clock like New does.
	waittest.Sleepers(t, clk, 1)
	select {
	case err := <-done:
		t.Fatalf("Rekey returned %v with the clock 2s behind the new mark", err)
	default:
	}
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := markUnit(t, g, oldStore.Mark()); got != unitOf(g, before)+1 {
		t.Fatalf("old machine's final mark at unit %d; want %d", got, unitOf(g, before)+1)
	}
	after := next(t, g)
	e := g.Codec().Explain(after)
	if e.Machine != 9 || e.Time < markUnit(t, g, t0.Add(2*time.Second)) {
		t.Fatalf("after Rekey: %+v", e)
	}
	if g.Machine() != 9 || g.Own(core.Central).Machine != 9 {
		t.Fatalf("Machine() = %d", g.Machine())
	}
	if s := g.Stats(); s.Issued < 2 {
		t.Fatalf("Stats.Issued = %d across the rekey", s.Issued)
	}
}

func TestFileGuard(t *testing.T) {
	dir := t.TempDir()
	fg := fileGuard(t, dir, 42)
	if m, err := fg.Load(context.Background()); err != nil || !m.IsZero() {
		t.Fatalf("empty guard: %s, %v", m, err)
	}
	mark := t0.Add(1500*time.Millisecond + 300*time.Microsecond)
	if err := fg.Save(context.Background(), mark); err != nil {
		t.Fatal(err)
	}
	got, err := fg.Load(context.Background())
	if err != nil || !got.Equal(t0.Add(1501*time.Millisecond)) {
		t.Fatalf("Load = %s, %v; want the mark rounded up to the millisecond", got, err)
	}
	// A second holder of the same machine ID and directory is refused.
	if _, err := core.OpenFileGuard(dir, 42); !errors.Is(err, core.ErrGuardLocked) {
		t.Fatalf("second open: %v", err)
	}
	// Another machine ID in the same directory is fine.
	other, err := core.OpenFileGuard(dir, 43)
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	// No temp files are left behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("left %s", e.Name())
		}
	}
	if err := fg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fg.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	again, err := core.OpenFileGuard(dir, 42)
	if err != nil {
		t.Fatal("reopen after Close:", err)
	}
	defer again.Close()
	// A damaged file is an error, never a guess.
	if err := os.WriteFile(again.Path(), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Load(context.Background()); !errors.Is(err, core.ErrGuard) {
		t.Fatalf("damaged file: %v", err)
	}
}

// TestFileGuardModes: a new guard directory is 0700 and its files 0600.
// flock ignores the open mode, so another user who could open the lock
// file, even read-only, could hold a shared lock on it and keep the server
// from starting: as root the test has user nobody try that. A lock file
// left 0644 is narrowed; a directory that exists keeps its mode, which
// Warnings reports; a symlinked lock file is refused.
func TestFileGuardModes(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "vesta-data")
	fg, err := core.OpenFileGuard(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := fg.Save(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if w := fg.Warnings(); w != nil {
		t.Errorf("Warnings of a directory it made: %q", w)
	}
	fg.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "machine-5.lock"): 0o600, fg.Path(): 0o600} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v; want mode %04o", path, st.Mode(), err, want)
		}
	}

	// Another user who tries to hold a shared lock on the machine's lock
	// file (a directory or file open to them) would block this process's
	// own: run flock as user nobody and open the guard again meanwhile.
	t.Run("nobody's lock", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root, to run flock as user nobody")
		}
		// Let nobody reach dir: the test's own directories are 0700.
		for _, d := range []string{filepath.Dir(base), base} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := closedToOthers(base, true); err != nil {
			t.Skipf("user nobody cannot reach the test's directory, so the test would prove nothing: %v", err)
		}
		var bins []string
		for _, name := range []string{"flock", "sh", "sleep"} {
			bin, err := runnableByOthers(name)
			if err != nil {
				t.Skipf("no %s that user nobody can run: %v", name, err)
			}
			bins = append(bins, bin)
		}
		// sh gets sleep's path as $0: nobody's PATH is this process's,
		// whose directories may be closed to nobody.
		cmd := exec.Command(bins[0], "--shared", "--nonblock", filepath.Join(dir, "machine-5.lock"), bins[1], "-c", `echo locked; exec "$0" 60`, bins[2])
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		line, _ := bufio.NewReader(out).ReadString('\n') // "locked", or EOF when flock could not open the file
		again, err := core.OpenFileGuard(dir, 5)
		if err != nil {
			t.Fatalf("OpenFileGuard while user nobody tried to hold a shared lock (it said %q): %v", line, err)
		}
		again.Close()
	})

	// A directory that exists keeps its mode and is reported; the lock
	// file of an older version is narrowed.
	old := filepath.Join(base, "old")
	if err := os.Mkdir(old, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(old, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	lock := filepath.Join(old, "machine-6.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	og := fileGuard(t, old, 6)
	if w := og.Warnings(); len(w) != 1 || !strings.Contains(w[0], "mode 0777") || !strings.Contains(w[0], old) {
		t.Errorf("Warnings = %q; want one naming %s and mode 0777", w, old)
	}
	if st, _ := os.Stat(old); st.Mode().Perm() != 0o777 {
		t.Errorf("the existing directory became %v; want it left 0777", st.Mode())
	}
	if st, _ := os.Stat(lock); st.Mode().Perm() != 0o600 {
		t.Errorf("the old lock file is %v; want it narrowed to 0600", st.Mode())
	}

	// A symlink in place of the lock file is not followed.
	target := filepath.Join(base, "target")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(old, "machine-7.lock")); err != nil {
		t.Fatal(err)
	}
	if g, err := core.OpenFileGuard(old, 7); err == nil {
		g.Close()
		t.Error("OpenFileGuard through a symlinked lock file: no error")
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o644 {
		t.Errorf("the symlink's target became %v", st.Mode())
	}
}

// The crash test: a child process issues IDs with a file guard and is
// killed with SIGKILL mid-stream (no Close, no final mark). A new generator
// on the same directory, with a clock behind everything the child issued,
// must wait for the mark and then issue only IDs above all of the child's.
const crashChildEnv = "VESTA_CORE_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

func crashChild(dir string) {
	fg, err := core.OpenFileGuard(dir, 7)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	cfg := core.DefaultConfig()
	cfg.Machine, cfg.Guard, cfg.Type = 7, fg, core.MinGranularity
	g, err := core.New(context.Background(), cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	for {
		ids, err := g.NextIDs(context.Background(), core.Embedded, 100)
		if err != nil {
			fmt.Fprintln(w, "error", err)
			w.Flush()
			os.Exit(1)
		}
		for _, id := range ids {
			fmt.Fprintln(w, id)
		}
		w.Flush() // each line printed was issued
	}
}

func TestCrashNeverReissues(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var highest core.ID
	n := 0
	for sc.Scan() && n < 200_000 {
		v, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		highest = max(highest, core.ID(v))
		n++
	}
	cmd.Process.Signal(syscall.SIGKILL)
	for sc.Scan() { // IDs printed before the kill count too
		if v, err := strconv.ParseUint(sc.Text(), 10, 64); err == nil {
			highest = max(highest, core.ID(v))
		}
	}
	cmd.Wait()
	if n < 200_000 {
		t.Fatalf("child issued only %d IDs", n)
	}
	// The lock died with the child; the mark it reserved survived.
	fg := fileGuard(t, dir, 7)
	// A clock set back to before the child started: the new generator must
	// wait until the clock passes the child's mark.
	clk := core.NewManualClock(start.Add(-time.Minute))
	cfg := core.DefaultConfig()
	cfg.Machine, cfg.Guard, cfg.Type, cfg.Clock = 7, fg, core.MinGranularity, clk
	cfg.MaxStartupWait = 0
	if _, err := core.New(context.Background(), cfg); !errors.Is(err, core.ErrClockBehind) {
		t.Fatalf("clock a minute behind: %v; want ErrClockBehind", err)
	}
	cfg.MaxStartupWait = 2 * time.Minute
	res := make(chan error, 1)
	var g *core.Generator
	go func() {
		var err error
		g, err = core.New(context.Background(), cfg)
		res <- err
	}()
	for done := false; !done; {
		select {
		case err := <-res:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case <-time.After(time.Millisecond):
			clk.Advance(100 * time.Millisecond)
		}
	}
	defer g.Close()
	ids, err := g.NextIDs(context.Background(), core.Embedded, 5000)
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] <= highest {
		t.Fatalf("after the crash, first ID %d is not above the child's last %d", ids[0], highest)
	}
	mark, _ := fg.Load(context.Background())
	if got := filepath.Base(fg.Path()); got != "machine-7.json" || mark.IsZero() {
		t.Fatalf("guard file %s mark %s", got, mark)
	}
}

func TestFenceAfterDeadline(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Clock: clk, MaxBorrow: time.Second})
	lost := errors.New("lease lost")
	g.Control().FenceAfter(500*time.Millisecond, lost)
	next(t, g)
	clk.Advance(499 * time.Millisecond)
	next(t, g)
	clk.Advance(time.Millisecond)
	if _, err := g.NextID(context.Background(), core.Embedded); !errors.Is(err, core.ErrFenced) || !errors.Is(err, lost) {
		t.Fatalf("at the deadline: %v", err)
	}
	if err := g.Ready(); !errors.Is(err, lost) || !g.Stats().Fenced {
		t.Fatalf("Ready at the deadline: %v", err)
	}
	g.Control().FenceAfter(time.Hour, lost) // renewed
	next(t, g)
	g.Control().NoDeadline()
	clk.Advance(2 * time.Hour)
	next(t, g)
}

func TestCloseCancelsRekeyWaitingForClock(t *testing.T) {
	clk := core.NewManualClock(t0)
	g, err := core.New(context.Background(), guarded(clk, core.NewMemGuard(time.Time{})))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- g.Control().Rekey(context.Background(), 3, core.NewMemGuard(t0.Add(5*time.Second))) }()
	// Rekey now waits for the clock (mark 5s ahead, 10s allowed); Close ends it.
	waittest.Sleepers(t, clk, 1)
	closed := make(chan error)
	go func() { closed <- g.Close() }()
	if err := <-done; !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Rekey during Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := g.NextID(context.Background(), core.Embedded); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// Rekey back onto the same machine ID never issues below what the
// generator already issued, even without a guard and with the clock behind.
func TestRekeySameMachineContinuesAbove(t *testing.T) {
	clk := core.NewManualClock(t0)
	g := newGen(t, core.Config{Clock: clk, Machine: 4, MaxBorrow: time.Hour})
	ids, err := g.NextIDs(context.Background(), core.Embedded, 3<<20) // 3 units ahead
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Control().Rekey(context.Background(), 4, nil); err != nil {
		t.Fatal(err)
	}
	if id := next(t, g); id <= ids[len(ids)-1] {
		t.Fatalf("after Rekey onto the same ID: %d not above %d", id, ids[len(ids)-1])
	}
}

// runnableByOthers returns the path of the program name that a user who is
// neither its owner nor in its group (nobody) can run: the one on PATH, or
// else one in the system's directories; PATH may hold directories closed
// to other users.
func runnableByOthers(name string) (string, error) {
	var errs []error
	candidates := []string{name, "/usr/bin/" + name, "/bin/" + name}
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err == nil {
			err = closedToOthers(path, true)
		}
		if err == nil {
			return path, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// closedToOthers returns nil when other users can reach path: every
// directory on the way searchable by them, and path itself too when it
// must be run (or searched).
func closedToOthers(path string, self bool) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return err
	}
	p := real
	if !self {
		p = filepath.Dir(real)
	}
	for {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is closed to other users (mode %v), on the way to %s", p, st.Mode().Perm(), path)
		}
		if p == filepath.Dir(p) {
			return nil
		}
		p = filepath.Dir(p)
	}
}
