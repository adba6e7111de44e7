package embed_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	vesta "github.com/vesta-go/vesta"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit/embedtest"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/redislease"
)

var _ vesta.Issuer = (*embed.Issuer)(nil)

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*embed.Config)
		want string
	}{
		{"server-range machine", func(c *embed.Config) { c.Machine.Static = new(core.MachineID(1000)) }, "machine ID 1000 is outside the embedded range 0-923"},
		{"machine too big", func(c *embed.Config) { c.Machine.Static = new(core.MachineID(5000)) }, "Static: 5000; want 0-1023"},
		{"moved range", func(c *embed.Config) {
			c.Machine.EmbeddedRange, _ = core.ParseMachineRange("100-199")
			c.Machine.Static = new(core.MachineID(5))
		}, "outside the embedded range 100-199"},
		{"unknown provider", func(c *embed.Config) { c.Machine.Providers = []string{"zookeeper"} }, `unknown provider "zookeeper"`},
		{"layout", func(c *embed.Config) { c.Layout = 9 }, "Layout 9"},
		{"borrow", func(c *embed.Config) { c.MaxBorrow = -time.Second }, "MaxBorrow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := embed.DefaultConfig()
			cfg.DataDir = t.TempDir()
			tc.edit(&cfg)
			_, err := embed.Open(context.Background(), cfg)
			if !errtest.Wraps(err, embed.ErrConfig, tc.want) {
				t.Fatalf("Open: %v; want ErrConfig naming %q", err, tc.want)
			}
		})
	}
}

// There is no default machine ID: two instances left on one would issue
// the same IDs, so the default config refuses, saying how to choose.
func TestDefaultConfigRefuses(t *testing.T) {
	cfg := embed.DefaultConfig()
	cfg.DataDir = t.TempDir()
	_, err := embed.Open(context.Background(), cfg)
	if !errors.Is(err, machineid.ErrNoMachineID) || !errors.Is(err, embed.ErrConfig) {
		t.Fatalf("Open(DefaultConfig()) = %v; want ErrConfig wrapping machineid.ErrNoMachineID", err)
	}
	if !strings.Contains(err.Error(), "Machine") || !strings.Contains(err.Error(), "Static") {
		t.Fatalf("%q does not name Machine.Static", err)
	}
	// Chosen, it opens.
	cfg.Machine.Static = new(core.MachineID(9))
	if is := embedtest.Open(t, cfg); is.Generator().Machine() != 9 {
		t.Fatalf("machine %d; want 9", is.Generator().Machine())
	}
}

// Two processes (here two issuers) on one host with the same machine ID and
// data directory: the second is refused, never issuing duplicates.
func TestSameMachineSameDirRefused(t *testing.T) {
	cfg := embed.DefaultConfig()
	cfg.Machine.Static, cfg.DataDir = new(core.MachineID(12)), t.TempDir()
	first := embedtest.Open(t, cfg)
	if _, err := embed.Open(context.Background(), cfg); !errors.Is(err, core.ErrGuardLocked) {
		t.Fatalf("second Open: %v; want ErrGuardLocked", err)
	}
	last, err := first.NextID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	// Once closed, the ID may be opened again, and continues above.
	again := embedtest.Open(t, cfg)
	if id, err := again.NextID(context.Background()); err != nil || id <= last {
		t.Fatalf("after reopening: %d, %v; want above %d", id, err, last)
	}
}

// TestIssuerMethods, for each layout; a leaf issuer's IDs record no
// method, so Make's method leaves no trace in them.
func TestIssuerMethods(t *testing.T) {
	for _, tc := range []struct {
		layout         core.Layout
		method, asRest core.Method // as explained: an issued ID, one made with method rest
		seqs           int         // a unit's sequence
	}{{core.Vesta, core.Embedded, core.REST, 1024}, {core.Leaf, core.MethodUnknown, core.MethodUnknown, 4096}} {
		t.Run(tc.layout.String(), func(t *testing.T) {
			testIssuerMethods(t, tc.layout, tc.method, tc.asRest, tc.seqs)
		})
	}
}

func testIssuerMethods(t *testing.T, layout core.Layout, method, asRest core.Method, seqs int) {
	cfg := embed.DefaultConfig()
	cfg.Machine.Static, cfg.DataDir, cfg.Layout, cfg.Type = new(core.MachineID(3)), "", layout, core.MinGranularity
	is := embedtest.Open(t, cfg)
	ids, err := is.NextIDs(context.Background(), 5*seqs)
	if err != nil || len(ids) != 5*seqs {
		t.Fatalf("NextIDs: %d, %v", len(ids), err)
	}
	e := is.Explain(ids[0])
	if e.Machine != 3 || e.Method != method || e.Type != core.MinGranularity {
		t.Fatalf("%+v", e)
	}
	made, err := is.Make(core.Partial{Time: e.Time, Seq: e.Seq})
	if err != nil || made != ids[0] {
		t.Fatalf("Make = %d, %v; want %d", made, err, ids[0])
	}
	rest := uint64(core.REST)
	if m, _ := is.Make(core.Partial{Time: 1, Seq: 1, Method: &rest}); is.Explain(m).Method != asRest {
		t.Fatalf("Make with method rest: %+v", is.Explain(m))
	}
	inst, err := is.TransTime(e.Time)
	if err != nil || !inst.Equal(e.Instant) {
		t.Fatalf("TransTime = %s, %v", inst, err)
	}
	// Counts that can never be issued are errors, never a panic or an
	// allocation of their size.
	for _, n := range []int{0, -1, core.MaxCount + 1, 1 << 40, 1 << 62, math.MaxInt} {
		if ids, err := is.NextIDs(context.Background(), n); !errors.Is(err, core.ErrInvalidCount) || ids != nil {
			t.Fatalf("NextIDs(%d) = %d IDs, %v; want core.ErrInvalidCount", n, len(ids), err)
		}
	}
	if _, err := is.TransTime(1 << 42); !errors.Is(err, core.ErrOutOfRange) {
		t.Fatalf("TransTime too wide: %v", err)
	}
}

// With the redis provider, two embedded issuers get distinct IDs from the
// embedded range, and the mark lives in Redis (no DataDir needed).
func TestRedisLeasedIssuers(t *testing.T) {
	srv := redistest.Start(t)
	srv.Established("vesta") // in service: a new Redis would cost each first claim a quarantine
	cfg := embed.DefaultConfig()
	cfg.DataDir = ""
	cfg.Machine.Providers = []string{machineid.ProviderRedis}
	cfg.Machine.Redis.Addrs = []string{srv.Addr()}
	cfg.Machine.Redis.LeaseTTL, cfg.Machine.Redis.MaxClockSkew = 2*time.Second, 20*time.Millisecond
	cfg.Machine.EmbeddedRange, _ = core.ParseMachineRange("10-11")
	a, b := embedtest.Open(t, cfg), embedtest.Open(t, cfg)
	ma, mb := a.Generator().Machine(), b.Generator().Machine()
	if ma == mb || ma < 10 || ma > 11 || mb < 10 || mb > 11 {
		t.Fatalf("machines %d and %d", ma, mb)
	}
	if _, err := embed.Open(context.Background(), cfg); !errors.Is(err, machineid.ErrRangeFull) {
		t.Fatalf("third issuer on a two-ID range: %v; want ErrRangeFull", err)
	}
	if a.Generator().Stats().Mark.IsZero() {
		t.Fatal("no time guard mark with a Redis lease")
	}
	// Closing releases the ID at once: a new issuer gets it.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c := embedtest.Open(t, cfg)
	if got := c.Generator().Machine(); got != ma {
		t.Fatalf("after release got machine %d; want the released %d", got, ma)
	}
}

// Acquire is Open's part that waits for nothing: the machine ID and its
// time guard's lock are held from it on, so a second process on the same
// ID and directory is refused at Acquire. The Issuer of Claim.Open owns
// the ID; a Claim closed unopened gives it back.
func TestAcquireThenOpen(t *testing.T) {
	cfg := embed.DefaultConfig()
	cfg.Machine.Static, cfg.DataDir = new(core.MachineID(14)), t.TempDir()
	c, err := embed.Acquire(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Lease().ID() != 14 {
		t.Fatalf("claimed %d; want 14", c.Lease().ID())
	}
	if _, err := embed.Acquire(context.Background(), cfg); !errors.Is(err, core.ErrGuardLocked) {
		t.Fatalf("second Acquire on the same ID and directory = %v; want ErrGuardLocked", err)
	}
	is, err := c.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(context.Background()); !errors.Is(err, machineid.ErrClosed) {
		t.Fatalf("second Open = %v; want machineid.ErrClosed", err)
	}
	if err := c.Close(); err != nil { // the Issuer owns the ID now
		t.Fatal(err)
	}
	if _, err := is.NextID(context.Background()); err != nil {
		t.Fatalf("NextID after the opened Claim's Close = %v", err)
	}
	if err := is.Close(); err != nil {
		t.Fatal(err)
	}

	unopened, err := embed.Acquire(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Acquire after the Issuer's Close = %v", err)
	}
	if err := unopened.Close(); err != nil {
		t.Fatal(err)
	}
	if err := unopened.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := unopened.Open(context.Background()); !errors.Is(err, machineid.ErrClosed) {
		t.Fatalf("Open after Close = %v; want machineid.ErrClosed", err)
	}
	embedtest.Open(t, cfg) // released: the ID and directory open again
}

// A fresh Redis lease: Acquire returns with the claim made and its
// quarantine ahead (the clock is fake and does not move), and Open waits
// for it within its ctx only; given up, it releases the ID at once.
func TestAcquireDoesNotWaitOutTheQuarantine(t *testing.T) {
	srv := redistest.Start(t)
	clock := core.NewManualClock(time.Now())
	cfg := embed.DefaultConfig()
	cfg.DataDir, cfg.Clock = "", clock
	cfg.Machine.Providers = []string{machineid.ProviderRedis}
	cfg.Machine.Redis.Addrs = []string{srv.Addr()}
	c, err := embed.Acquire(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Lease().Status()
	if st.State != machineid.StateHeld || !st.QuarantineUntil.After(clock.Now()) {
		t.Fatalf("Status after Acquire = %+v; want held, quarantined past %s", st, clock.Now())
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer rc.Close()
	key, _ := redislease.Keys(cfg.Machine.Redis.KeyPrefix, st.Machine)
	if n, err := rc.Exists(context.Background(), key).Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS %s after Acquire = %d, %v; want 1 (claimed)", key, n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	opened := make(chan error, 1)
	go func() {
		is, err := c.Open(ctx)
		if is != nil {
			is.Close()
		}
		opened <- err
	}()
	// The renewer, the watchdog and the quarantine sleep on the clock.
	waittest.Sleepers(t, clock, 3)
	cancel()
	if err := <-opened; !errors.Is(err, context.Canceled) {
		t.Fatalf("Open given up during the quarantine = %v; want context.Canceled", err)
	}
	if n, err := rc.Exists(context.Background(), key).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS %s after Open gave up = %d, %v; want 0 (released)", key, n, err)
	}
}
