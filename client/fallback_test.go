package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// A restarted application must not re-issue its own fallback IDs: the
// fallback's time guard survives the process. New holds the guard's lock
// and opens the generator in the background, so a clock behind the guard
// fails every call that needs the fallback, and FallbackState says why.
func TestFallbackTimeGuardAcrossRestarts(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cfg := testConfig(t, deadAddr(t))
	cfg.FallbackConfig.MaxStartupWait = 0
	logs := logTo(&cfg)
	ctx := context.Background()
	var all collect

	run := func(clock *core.ManualClock) error {
		cfg := cfg
		cfg.FallbackConfig.Clock = clock
		c, err := client.New(ctx, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		ids, err := c.NextIDs(ctx, 1000)
		if err != nil {
			if st := c.FallbackState(); st.Ready || !errors.Is(st.NotReady, core.ErrClockBehind) {
				t.Fatalf("FallbackState after %v = %+v; want not ready, with ErrClockBehind", err, st)
			}
			if n := strings.Count(logs.String(), "the fallback could not be opened"); n != 1 {
				t.Fatalf("%d lines say the opening failed; want 1:\n%s", n, logs.String())
			}
			return err
		}
		all.add(ids...)
		for _, id := range ids {
			if e := c.Explain(id); e.Method != core.Embedded || e.Machine != 7 {
				t.Fatalf("ID %+v; want the fallback's", e)
			}
		}
		return nil
	}
	if err := run(core.NewManualClock(start)); err != nil {
		t.Fatal(err)
	}
	// Restarted at the same instant (a clock that did not move, or moved
	// back to it): the guard's mark carries on where the last run ended.
	if err := run(core.NewManualClock(start)); err != nil {
		t.Fatal(err)
	}
	// Restarted with the clock an hour back: no ID at all.
	err := run(core.NewManualClock(start.Add(-time.Hour)))
	if !errors.Is(err, core.ErrClockBehind) || !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("NextIDs with the clock behind the guard = %v; want ErrClockBehind joined with ErrUnavailable", err)
	}
	if all.dups != 0 || len(all.seen) != 2000 {
		t.Fatalf("%d duplicates among %d IDs", all.dups, len(all.seen))
	}
}

func TestNoFallbackNoServer(t *testing.T) {
	cfg := testConfig(t, deadAddr(t), deadAddr(t))
	cfg.NoFallback = true
	c := newClient(t, cfg) // New does not dial: servers may be down
	_, err := c.NextID(context.Background())
	if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, client.ErrConnection) {
		t.Fatalf("NextID = %v; want ErrUnavailable wrapping ErrConnection", err)
	}
}

func TestCloseFailsCallsInFlight(t *testing.T) {
	f := startFake(t, 1000, 100)
	cfg := testConfig(t, f.addr)
	cfg.Timeout = time.Hour
	c, err := client.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NextID(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.silent.Store(true)
	const callers = 8
	errs := make(chan error, callers)
	for range callers {
		go func() {
			_, err := c.NextID(context.Background())
			errs <- err
		}()
	}
	waittest.Until(t, "the calls to reach the server", func() bool { return f.calls.Load() == 1+callers })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range callers {
		if err := <-errs; !errors.Is(err, client.ErrClosed) {
			t.Fatalf("call in flight at Close = %v; want ErrClosed (never a fallback ID)", err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := c.NextIDs(context.Background(), 2); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("NextIDs after Close = %v; want ErrClosed", err)
	}
}

// A peer that is not a vesta server (it sends bytes that are not
// MessagePack) fails the call; nothing panics and nothing hangs.
func TestGarbageServer(t *testing.T) {
	ln := nettest.Loopback(t)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			nc.Write([]byte{0xc1, 0xc1, 0xc1}) // 0xc1 is never used by MessagePack
			nc.Close()
		}
	})
	cfg := testConfig(t, ln.Addr().String())
	cfg.NoFallback = true
	c := newClient(t, cfg)
	if _, err := c.NextID(context.Background()); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("NextID from a garbage server = %v", err)
	}
}
