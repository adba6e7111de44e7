package client_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/logtest"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// Two application instances on default configurations, their central
// servers down, falling back in the same second (one shared fake clock),
// with time guards of their own: on a default machine ID they would issue
// the same IDs. There is none: New refuses, saying how to choose. With
// machine IDs chosen, a ledger of both finds no duplicate — and finds
// them when both choose the same ID, so the ledger can tell.
func TestTwoDefaultClientsRefuse(t *testing.T) {
	dead := deadAddr(t)
	clock := core.NewManualClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	ctx := context.Background()
	config := func(machine *core.MachineID) client.Config {
		cfg := client.DefaultConfig(dead)
		cfg.FallbackConfig.DataDir = t.TempDir()
		cfg.FallbackConfig.Clock = clock
		cfg.FallbackConfig.Machine.Static = machine
		return cfg
	}
	for i := range 2 {
		c, err := client.New(ctx, config(nil))
		if err == nil {
			c.Close()
			t.Fatalf("client %d: New on the default config succeeded; want a refusal", i)
		}
		if !errors.Is(err, client.ErrConfig) || !errors.Is(err, machineid.ErrNoMachineID) {
			t.Fatalf("client %d: New = %v; want ErrConfig wrapping machineid.ErrNoMachineID", i, err)
		}
		for _, w := range append([]string{"FallbackConfig.Machine", "set NoFallback", "machine.id"}, machineid.Providers()...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("client %d: %q does not say %q", i, err, w)
			}
		}
	}

	// issue runs two clients on machines a and b, each taking 2000 IDs
	// from its fallback at the same fake instant, into one ledger.
	issue := func(a, b core.MachineID) *collect {
		var all collect
		var wg sync.WaitGroup
		for _, m := range []core.MachineID{a, b} {
			c := newClient(t, config(new(m)))
			wg.Go(func() {
				for range 4 {
					ids, err := c.NextIDs(ctx, 500)
					if err != nil {
						t.Error(err)
						return
					}
					all.add(ids...)
				}
				if !c.InFallback() {
					t.Error("not in fallback with the server down")
				}
			})
		}
		wg.Wait()
		return &all
	}
	if all := issue(1, 2); all.dups != 0 || len(all.seen) != 4000 {
		t.Fatalf("machines 1 and 2: %d duplicates among %d IDs; want 0 among 4000", all.dups, len(all.seen))
	}
	if all := issue(3, 3); all.dups == 0 {
		t.Fatal("two instances on one machine ID: the ledger found no duplicate; it cannot tell")
	}
}

// The fallback's machine ID is leased when the client starts — visible in
// Redis before any call — renewed for the client's life, shown by
// FallbackState, the metrics and the start-up log line, and released by
// Close. The first call, every server down, gets a fallback ID (on a
// Redis in service: a new one would cost the first claim a quarantine).
func TestFallbackLeasedAtStart(t *testing.T) {
	srv := redistest.Start(t)
	srv.Established("fb")
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	cfg := testConfig(t, deadAddr(t))
	cfg.FallbackConfig.DataDir = "" // the mark lives in Redis
	cfg.FallbackConfig.Machine.Static = nil
	cfg.FallbackConfig.Machine.Providers = []string{machineid.ProviderRedis}
	cfg.FallbackConfig.Machine.Redis.Addrs = []string{srv.Addr()}
	cfg.FallbackConfig.Machine.Redis.KeyPrefix = "fb"
	cfg.FallbackConfig.Machine.Redis.LeaseTTL = 3 * time.Second
	// Small skew and borrow bounds keep any takeover wait of a fresh lease short.
	cfg.FallbackConfig.Machine.Redis.MaxClockSkew = 200 * time.Millisecond
	cfg.FallbackConfig.MaxBorrow = 0
	cfg.FallbackConfig.Machine.EmbeddedRange = core.MachineRange{First: 40, Count: 2}
	logs := logTo(&cfg)
	c, reg := meteredClient(t, cfg)

	// Before any call: held in Redis, shown everywhere.
	st := c.FallbackState()
	if !st.Enabled || st.Active || st.Provider != machineid.ProviderRedis || st.Lease.State != machineid.StateHeld ||
		(st.Machine != 40 && st.Machine != 41) {
		t.Fatalf("FallbackState after New = %+v; want a held Redis lease on 40 or 41", st)
	}
	leaseKey, _ := redislease.Keys("fb", st.Machine)
	token, err := rc.Get(context.Background(), leaseKey).Result()
	if err != nil || token == "" {
		t.Fatalf("GET %s after New, before any call = %q, %v; want the fallback's token", leaseKey, token, err)
	}
	if v := gauge(t, reg, "vesta_client_fallback_machine_id"); v != float64(st.Machine) {
		t.Fatalf("vesta_client_fallback_machine_id = %v; want %d", v, st.Machine)
	}
	if v := gauge(t, reg, "vesta_machine_lease_state", "range", "embedded", "state", "held"); v != 1 {
		t.Fatalf("vesta_machine_lease_state{range=embedded,state=held} = %v; want 1", v)
	}
	if line := logs.String(); !strings.Contains(line, "client: started") ||
		!strings.Contains(line, "fallback_machine="+strconv.Itoa(int(st.Machine))) || !strings.Contains(line, "fallback_provider=redis") {
		t.Fatalf("start-up log %q does not name the fallback's machine and provider", line)
	}

	// Renewed: two renewals reach Redis, and the key still holds the same
	// token (a lapse would have meant a fresh claim, with a new token).
	waittest.Until(t, "two renewals of the fallback's lease", func() bool {
		v, _ := promtest.Value(t, reg, "vesta_machine_lease_renew_seconds", "range", "embedded")
		return v >= 2
	})
	if again, err := rc.Get(context.Background(), leaseKey).Result(); err != nil || again != token {
		t.Fatalf("GET %s after renewals = %q, %v; want the same token %q", leaseKey, again, err, token)
	}
	if st := c.FallbackState(); st.Lease.State != machineid.StateHeld || st.Lease.RenewFailures != 0 {
		t.Fatalf("FallbackState after renewals = %+v", st)
	}

	// The fallback issues on that machine ID.
	id, err := c.NextID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Explain(id); e.Method != core.Embedded || e.Machine != st.Machine || !c.FallbackState().Active {
		t.Fatalf("ID %+v, state %+v; want the fallback's, on machine %d", e, c.FallbackState(), st.Machine)
	}
	if st := c.FallbackState(); !st.Ready || st.NotReady != nil || gauge(t, reg, "vesta_client_fallback_ready") != 1 ||
		!strings.Contains(logs.String(), "client: the fallback is ready") {
		t.Fatalf("after a fallback ID: state %+v, vesta_client_fallback_ready %v, log %q; want ready everywhere",
			st, gauge(t, reg, "vesta_client_fallback_ready"), logs.String())
	}

	// Close releases the lease at once.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := rc.Exists(context.Background(), leaseKey).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS %s after Close = %d, %v; want 0", leaseKey, n, err)
	}
	if _, found := promtest.Value(t, reg, "vesta_client_fallback_machine_id"); found {
		t.Fatal("vesta_client_fallback_machine_id still registered after Close")
	}
}

// New fails when the fallback cannot get a machine ID (Redis unreachable):
// at start, in the open, not during an outage.
func TestFallbackWithoutMachineFailsNew(t *testing.T) {
	cfg := testConfig(t, deadAddr(t))
	cfg.FallbackConfig.DataDir = ""
	cfg.FallbackConfig.Machine.Providers = []string{machineid.ProviderRedis}
	cfg.FallbackConfig.Machine.Redis.Addrs = []string{deadAddr(t)}
	c, err := client.New(context.Background(), cfg)
	if err == nil {
		c.Close()
		t.Fatal("New with Redis unreachable for the fallback succeeded")
	}
	if !errors.Is(err, machineid.ErrNoProvider) || errors.Is(err, client.ErrConfig) {
		t.Fatalf("New = %v; want machineid.ErrNoProvider (not ErrConfig)", err)
	}
}

// A fixed fallback ID: FallbackState and the gauge show it. Servers whose
// IDs are shaped otherwise make the fallback refuse to issue — logged
// once, as an error, shown, and every call that would use it fails — since
// IDs of two layouts can be equal values: 369367187461245959 is embedded
// machine 5's in the sorted layout and embedded machine 7's in the vesta
// layout.
func TestFallbackStateAndShape(t *testing.T) {
	f := startFake(t, 1000, 100) // sorted layout
	cfg := testConfig(t, f.addr)
	cfg.FallbackConfig.Layout = core.Vesta
	cfg.ConnsPerServer = 4
	logs := logTo(&cfg)
	c, reg := meteredClient(t, cfg)
	st := c.FallbackState()
	if !st.Enabled || st.Machine != 7 || st.Provider != machineid.ProviderStatic || st.Lease.State != machineid.StateNone || st.ShapeMismatch != nil {
		t.Fatalf("FallbackState = %+v; want static machine 7, no lease, no mismatch", st)
	}
	if v := gauge(t, reg, "vesta_client_fallback_machine_id"); v != 7 {
		t.Fatalf("vesta_client_fallback_machine_id = %v; want 7", v)
	}
	var wg sync.WaitGroup
	for range 8 { // several connections, each with its handshake
		wg.Go(func() {
			if _, err := c.NextID(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := c.FallbackState().ShapeMismatch; !errtest.Wraps(err, client.ErrFallbackShape, "layout sorted", "layout vesta") {
		t.Fatalf("ShapeMismatch = %v; want ErrFallbackShape naming both layouts", err)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Fatalf("%d error lines; want the mismatch logged once:\n%s", n, logs.String())
	}

	// The server gone, the fallback refuses to issue.
	f.kill()
	for _, call := range []func() error{
		func() error { _, err := c.NextID(context.Background()); return err },
		func() error { _, err := c.NextIDs(context.Background(), 10); return err },
	} {
		err := call()
		if !errors.Is(err, client.ErrFallbackShape) || !errtest.Wraps(err, client.ErrUnavailable, "layout sorted", "layout vesta") {
			t.Fatalf("a call with the server down = %v; want ErrFallbackShape naming both layouts, joined with ErrUnavailable", err)
		}
	}
	if v := gauge(t, reg, "vesta_ids_issued_total", "method", "embedded"); v != 0 || c.FallbackState().Active {
		t.Fatalf("%v fallback IDs, state %+v; want none", v, c.FallbackState())
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Fatalf("%d error lines; want the mismatch logged once:\n%s", n, logs.String())
	}

	off := testConfig(t, f.addr)
	off.NoFallback, off.FallbackConfig.Machine.Static = true, nil
	if st := newClient(t, off).FallbackState(); st != (client.FallbackState{}) {
		t.Fatalf("FallbackState without the fallback = %+v; want zero", st)
	}
}

// syncBuffer is a log sink safe for the client's goroutines.
type syncBuffer = logtest.Buffer
