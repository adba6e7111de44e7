package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/vesta-go/vesta"
	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

var _ vesta.Issuer = (*client.Client)(nil)

func ptr(v uint64) *uint64 { return &v }

// TestIssuerMethods, against servers of each layout: the client explains
// and makes with the server's codec, so a leaf server's IDs are Leaf's
// bits and explain with no method.
func TestIssuerMethods(t *testing.T) {
	for _, tc := range []struct {
		server         core.Config
		method, asRest core.Method // as explained: an issued ID, one made with method rest
	}{
		{core.Config{Machine: 1000}, core.Central, core.REST},
		{core.Config{Machine: 1000, Layout: core.Leaf, Type: core.MinGranularity}, core.MethodUnknown, core.MethodUnknown},
	} {
		t.Run(tc.server.Layout.String(), func(t *testing.T) {
			testIssuerMethods(t, tc.server, tc.method, tc.asRest)
		})
	}
}

func testIssuerMethods(t *testing.T, server core.Config, method, asRest core.Method) {
	f := startFakeOn(t, "127.0.0.1:0", server, 1000, nil)
	cfg := testConfig(t, f.addr)
	cfg.FallbackConfig.Layout = core.Vesta // unlike the server's layout: Explain uses the server's
	c := newClient(t, cfg)
	ctx := context.Background()

	id, err := c.NextID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := c.Explain(id)
	if e.Method != method || e.Machine != 1000 || e.ID != id {
		t.Fatalf("Explain(NextID) = %+v; want method %s, machine 1000", e, method)
	}
	if ms := uint64(e.Instant.UnixMilli() - 1288834974657); server.Layout == core.Leaf && uint64(id) != ms<<22|1000<<12|e.Seq {
		t.Fatalf("%d is not Leaf's formula (SnowflakeIDGenImpl.get) for %+v", id, e)
	}
	if want := f.gen.Codec().Explain(id); e != want {
		t.Fatalf("Explain = %+v; the server's codec says %+v", e, want)
	}

	for _, n := range []int{1, 2, 999, 1000, 1001, 2500} { // max_batch 1000: split
		ids, err := c.NextIDs(ctx, n)
		if err != nil {
			t.Fatalf("NextIDs(%d): %v", n, err)
		}
		if len(ids) != n || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != n {
			t.Fatalf("NextIDs(%d): %d IDs, sorted %v, unique %v", n, len(ids), slices.IsSorted(ids),
				len(slices.Compact(slices.Clone(ids))) == n)
		}
		if ids[0] <= id {
			t.Fatalf("NextIDs(%d) starts at %d, not above the earlier %d", n, ids[0], id)
		}
		id = ids[n-1]
	}
	if _, err := c.NextIDs(ctx, 0); !errors.Is(err, core.ErrInvalidCount) {
		t.Fatalf("NextIDs(0) = %v; want ErrInvalidCount", err)
	}

	// Make fills in the server's own version, type, machine and central.
	made, err := c.Make(core.Partial{Time: e.Time, Seq: e.Seq})
	if err != nil || made != e.ID {
		t.Fatalf("Make(time, seq of %d) = %d, %v", e.ID, made, err)
	}
	if _, err := c.Make(core.Partial{Time: 1, Seq: 1 << 20}); !errors.Is(err, core.ErrOutOfRange) {
		t.Fatalf("Make(seq 2^20) = %v; want ErrOutOfRange", err)
	}
	made, err = c.Make(core.Partial{Time: 5, Seq: 6, Machine: ptr(3), Method: ptr(2)})
	if ex := c.Explain(made); err != nil || ex.Machine != 3 || ex.Method != asRest || ex.Time != 5 || ex.Seq != 6 {
		t.Fatalf("Make(explicit) = %+v, %v", ex, err)
	}
	instant, err := c.TransTime(e.Time)
	if err != nil || !instant.Equal(e.Instant) {
		t.Fatalf("TransTime(%d) = %v, %v; want %v", e.Time, instant, err, e.Instant)
	}
}

func TestExplainBeforeContactUsesFallbackConfig(t *testing.T) {
	cfg := testConfig(t, deadAddr(t))
	cfg.FallbackConfig.Layout = core.Vesta
	c := newClient(t, cfg)
	codec, err := core.NewCodec(core.Vesta, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := codec.Make(core.Fields{Machine: 1022, Seq: 5, Time: 284025600, Method: 2})
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Explain(id); e.Machine != 1022 || e.Seq != 5 || e.Method != core.REST {
		t.Fatalf("Explain before contact = %+v; want FallbackConfig's vesta layout", e)
	}
}

func TestErrorCodes(t *testing.T) {
	tests := []struct {
		code  api.Code
		retry bool
	}{
		{api.Unavailable, true},
		{api.LeaseLost, true},
		{api.Clock, true},
		{api.InvalidArgument, false},
		{api.Internal, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			bad, good := startFake(t, 1000, 100), startFake(t, 1001, 100)
			bad.fail.Store(api.Errorf(tt.code, "test"))
			cfg := testConfig(t, bad.addr, good.addr)
			cfg.NoFallback = true
			c, reg := meteredClient(t, cfg)
			for range 4 { // the round-robin start visits both servers first
				id, err := c.NextID(context.Background())
				switch {
				case tt.retry && err != nil:
					t.Fatalf("NextID: %v; want a retry on the good server", err)
				case tt.retry && c.Explain(id).Machine != 1001:
					t.Fatalf("NextID from machine %d; want 1001", c.Explain(id).Machine)
				case !tt.retry && err != nil && !errors.Is(err, &api.Error{Code: tt.code}):
					t.Fatalf("NextID: %v; want code %s", err, tt.code)
				}
			}
			if got := bad.calls.Load() + good.calls.Load(); !tt.retry && got != 4 {
				t.Fatalf("%d calls for 4 NextIDs; %s must not be retried", got, tt.code)
			}
			if n := gauge(t, reg, "vesta_client_calls_total", "server", bad.addr, "result", string(tt.code)); n < 1 {
				t.Fatalf("calls_total{result=%s} = %v", tt.code, n)
			}
			// invalid_argument proves the server works: its breaker stays closed.
			if st := c.Servers()[0].Breaker; tt.code == api.InvalidArgument && st != gobreaker.StateClosed {
				t.Fatalf("breaker after invalid_argument: %v", st)
			}
		})
	}
}

// silentListener accepts connections, reads everything and never answers.
func silentListener(t testing.TB) string {
	t.Helper()
	ln := nettest.Loopback(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Go(func() { io.Copy(io.Discard, nc) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func TestDeadlineWhenServerNeverAnswers(t *testing.T) {
	addr := silentListener(t)
	cfg := testConfig(t, addr)
	cfg.NoFallback = true
	cfg.Timeout = 50 * time.Millisecond
	c, reg := meteredClient(t, cfg)

	_, err := c.NextID(context.Background())
	if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, client.ErrTimeout) {
		t.Fatalf("NextID = %v; want ErrUnavailable wrapping ErrTimeout", err)
	}
	// A caller's deadline shorter than Timeout wins.
	cfg.Timeout = time.Hour
	c2 := newClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c2.NextIDs(ctx, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NextIDs = %v; want the caller's DeadlineExceeded", err)
	}
	if n := gauge(t, reg, "vesta_client_calls_total", "server", addr, "result", "timeout"); n != 1 {
		t.Fatalf("calls_total{result=timeout} = %v; want 1", n)
	}
}

func TestSilentServerFailsOverAndFallsBack(t *testing.T) {
	f := startFake(t, 1000, 100)
	cfg := testConfig(t, f.addr, silentListener(t))
	// Long enough for the fake to answer on a loaded machine (the silent
	// server costs it at most BreakerFailures times before its breaker opens).
	cfg.Timeout = 300 * time.Millisecond
	c := newClient(t, cfg)
	var all collect
	for range 6 { // both start points: the silent server is retried on the fake
		id, err := c.NextID(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		all.add(id)
		if e := c.Explain(id); e.Machine != 1000 {
			t.Fatalf("ID from machine %d; want the fake's 1000", e.Machine)
		}
	}
	f.silent.Store(true) // now nobody answers: the fallback serves
	for range 6 {
		id, err := c.NextID(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		all.add(id)
		if e := c.Explain(id); e.Method != core.Embedded || e.Machine != 7 {
			t.Fatalf("ID %+v; want the fallback's (method 0, machine 7)", e)
		}
	}
	if all.dups != 0 {
		t.Fatalf("%d duplicates", all.dups)
	}
}

func TestBreakerTransitions(t *testing.T) {
	addr := deadAddr(t)
	cfg := testConfig(t, addr)
	cfg.NoFallback = true
	cfg.BreakerFailures = 2
	cfg.BreakerTimeout = 30 * time.Millisecond
	c, reg := meteredClient(t, cfg)
	ctx := context.Background()
	state := func() float64 { return gauge(t, reg, "vesta_client_breaker_state", "server", addr) }

	for range 2 {
		if _, err := c.NextID(ctx); !errors.Is(err, client.ErrConnection) {
			t.Fatalf("NextID = %v; want ErrConnection", err)
		}
	}
	if state() != 2 {
		t.Fatalf("breaker gauge = %v after 2 failures; want 2 (open)", state())
	}
	_, err := c.NextID(ctx)
	if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("NextID with the breaker open = %v", err)
	}
	if n := gauge(t, reg, "vesta_client_calls_total", "server", addr, "result", "rejected"); n < 1 {
		t.Fatalf("calls_total{result=rejected} = %v", n)
	}
	// Wait out the open period, then observe half-open through the accessor.
	waittest.Until(t, "the breaker's open period to pass", func() bool { return c.Servers()[0].Breaker != gobreaker.StateOpen })
	if state() != 1 {
		t.Fatalf("breaker gauge = %v; want 1 (half-open)", state())
	}
	// The trial fails: open again.
	if _, err := c.NextID(ctx); err == nil {
		t.Fatal("NextID succeeded with no server")
	}
	if state() != 2 {
		t.Fatalf("breaker gauge = %v after a failed trial; want 2", state())
	}
	// A server appears at the address; the next trial closes the breaker.
	startFakeOn(t, addr, core.Config{Machine: 1000}, 100, nil)
	waittest.Until(t, "a good trial to close the breaker", func() bool { _, err := c.NextID(ctx); return err == nil })
	if state() != 0 || c.Servers()[0].Breaker != gobreaker.StateClosed {
		t.Fatalf("breaker gauge = %v after a good trial; want 0", state())
	}
}

// A dial that hangs (a black-holed address) holds no caller past its own
// deadline, and Close ends it.
func TestDeadlineWhileDialling(t *testing.T) {
	cfg := testConfig(t, "192.0.2.1:7070")
	cfg.NoFallback = true
	cfg.Timeout = time.Hour
	dialling := make(chan struct{}, 1)
	cfg.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		dialling <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	c, err := client.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := c.NextID(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NextID = %v; want the caller's DeadlineExceeded", err)
	}
	<-dialling // the dial still runs, for the next caller; Close ends it
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// A server whose IDs are shaped unlike the first server's is refused: IDs
// of two layouts can be equal 64-bit values, so taking both could hand one
// value out twice. A call that reaches it moves on to the other server at
// once, and that is no failure for its breaker; it is counted (result
// "shape") and logged. With no other server left, calls fail wrapping
// ErrServerShape.
func TestServerOfAnotherShapeRefused(t *testing.T) {
	first := startFake(t, 1000, 100) // sorted layout
	other := startFakeOn(t, "127.0.0.1:0", core.Config{Machine: 1001, Layout: core.Vesta}, 100, nil)
	cfg := testConfig(t, first.addr, other.addr)
	cfg.NoFallback = true
	cfg.ConnsPerServer = 1
	logs := logTo(&cfg)
	c, reg := meteredClient(t, cfg)
	ctx := context.Background()
	var all collect
	// The round-robin start visits the first server first: its shape is
	// the client's. Every other call then starts at the refused one.
	for range 10 {
		id, err := c.NextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all.add(id)
	}
	ids, err := c.NextIDs(ctx, 250) // pieces of max_batch, meant for both servers in turn
	if err != nil {
		t.Fatal(err)
	}
	all.add(ids...)
	if all.dups != 0 || len(all.seen) != 260 {
		t.Fatalf("%d duplicates among %d IDs; want 0 among 260", all.dups, len(all.seen))
	}
	for id := range all.seen {
		if e := c.Explain(id); e.Machine != 1000 || e.Method != core.Central {
			t.Fatalf("ID %d is %+v; want the first server's", id, e)
		}
	}
	if n := other.calls.Load(); n != 0 {
		t.Fatalf("the server of another layout was asked for IDs %d times; want 0", n)
	}
	if n := gauge(t, reg, "vesta_client_calls_total", "server", other.addr, "result", "shape"); n < 5 {
		t.Fatalf("calls_total{result=shape} = %v; want at least 5", n)
	}
	if st := c.Servers()[1].Breaker; st != gobreaker.StateClosed {
		t.Fatalf("the refused server's breaker is %v; want closed (a refusal is not its failure)", st)
	}
	if text := logs.String(); strings.Count(text, "refusing a server's IDs") != 1 ||
		!strings.Contains(text, "layout vesta") || !strings.Contains(text, "layout sorted") {
		t.Fatalf("log %q: want the refusal once (one connection), naming both layouts", text)
	}

	first.kill()
	_, err = c.NextID(ctx)
	if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, client.ErrServerShape) || !errors.Is(err, client.ErrConnection) {
		t.Fatalf("NextID with only the refused server up = %v; want ErrUnavailable wrapping ErrServerShape and the first's ErrConnection", err)
	}
}
