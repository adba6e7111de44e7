package client_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// centralServer is a real central.Server on 127.0.0.1 that a test can kill
// and start again on the same address, with the same generator.
type centralServer struct {
	t    testing.TB
	gen  *core.Generator
	cfg  central.Config
	addr string

	mu   sync.Mutex
	srv  *central.Server
	done chan struct{}
}

func startCentral(t testing.TB, machine core.MachineID, cfg central.Config) *centralServer {
	t.Helper()
	return startCentralGen(t, core.Config{Machine: machine, MaxBorrow: time.Second}, cfg)
}

// startCentralGen is startCentral with the generator's config.
func startCentralGen(t testing.TB, gcfg core.Config, cfg central.Config) *centralServer {
	t.Helper()
	gen, err := core.New(context.Background(), gcfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &centralServer{t: t, gen: gen, cfg: cfg, addr: "127.0.0.1:0"}
	s.start()
	t.Cleanup(func() {
		s.kill()
		gen.Close()
	})
	return s
}

func (s *centralServer) start() {
	s.t.Helper()
	srv, err := central.NewServer(s.gen, s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	s.mu.Lock()
	s.srv, s.done = srv, done
	s.mu.Unlock()
}

// kill closes the server and every connection at once, as a crash would.
func (s *centralServer) kill() {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
		<-done
	}
}

// rawCall makes one MessagePack-RPC call on its own connection, to compare
// the server's answers with the client's local ones.
func rawCall(t testing.TB, addr, proc string, params, result any) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req, err := wire.NewEncoder().AppendRequest(nil, 1, proc, params)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(req); err != nil {
		t.Fatal(err)
	}
	frame, err := wire.NewReader(nc, wire.MaxResponseBytes(central.DefaultMaxBatch)).Next()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := wire.DecodeResponse(frame)
	if err != nil || resp.Error != nil {
		t.Fatalf("%s: %v %v", proc, err, resp.Error)
	}
	if err := wire.DecodeResult(resp.Result, result); err != nil {
		t.Fatal(err)
	}
}

// Every procedure of the client against a real server: IDs from the server,
// and Explain, Make and TransTime computed locally exactly as the server's
// Vesta.ExpID, Vesta.MakeID and Vesta.TransTime compute them.
func TestCentralEveryMethod(t *testing.T) {
	srv := startCentral(t, 1000, central.Config{MaxBatch: 3000})
	cfg := testConfig(t, srv.addr)
	c := newClient(t, cfg)
	ctx := context.Background()

	id, err := c.NextID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := c.NextIDs(ctx, 7001) // three GenIDs calls
	if err != nil || len(ids) != 7001 || !slices.IsSorted(ids) || ids[0] <= id {
		t.Fatalf("NextIDs(7001): %d IDs, %v", len(ids), err)
	}
	if len(slices.Compact(ids)) != 7001 {
		t.Fatal("duplicates")
	}
	var exp wire.Explanation
	rawCall(t, srv.addr, wire.ProcExpID, wire.ExpIDParams{ID: uint64(id)}, &exp)
	if got := wire.ExplanationOf(c.Explain(id)); got != exp {
		t.Fatalf("Explain = %+v; the server says %+v", got, exp)
	}
	if exp.Method != uint64(core.Central) || exp.Machine != 1000 {
		t.Fatalf("NextID's ID: %+v", exp)
	}

	p := core.Partial{Time: exp.Time, Seq: 12345}
	var made uint64
	rawCall(t, srv.addr, wire.ProcMakeID, wire.MakeIDParamsOf(p), &made)
	if got, err := c.Make(p); err != nil || uint64(got) != made {
		t.Fatalf("Make = %d, %v; the server makes %d", got, err, made)
	}
	p = core.Partial{Time: 1, Seq: 2, Machine: ptr(3), Method: ptr(3), Type: ptr(1), Version: ptr(1)}
	rawCall(t, srv.addr, wire.ProcMakeID, wire.MakeIDParamsOf(p), &made)
	if got, err := c.Make(p); err != nil || uint64(got) != made {
		t.Fatalf("Make(every field) = %d, %v; the server makes %d", got, err, made)
	}

	var tt wire.TransTimeResult
	rawCall(t, srv.addr, wire.ProcTransTime, wire.TransTimeParams{Time: exp.Time}, &tt)
	if got, err := c.TransTime(exp.Time); err != nil || got.UnixMilli() != tt.UnixMS {
		t.Fatalf("TransTime = %v, %v; the server says %+v", got, err, tt)
	}
}

// Three servers, one killed mid-load: no call is lost (there is no fallback
// to hide a loss) and no ID is issued twice.
func TestCentralFailoverUnderLoad(t *testing.T) {
	servers := []*centralServer{
		startCentral(t, 1000, central.Config{MaxBatch: 500}),
		startCentral(t, 1001, central.Config{MaxBatch: 500}),
		startCentral(t, 1002, central.Config{MaxBatch: 500}),
	}
	cfg := testConfig(t, servers[0].addr, servers[1].addr, servers[2].addr)
	cfg.NoFallback = true
	c := newClient(t, cfg)

	var all collect
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				var ids []core.ID
				var err error
				if w%2 == 0 {
					var id core.ID
					id, err = c.NextID(ctx)
					ids = []core.ID{id}
				} else {
					ids, err = c.NextIDs(ctx, 1+i%700)
				}
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				all.add(ids...)
			}
		})
	}
	count := func() int {
		all.mu.Lock()
		defer all.mu.Unlock()
		return len(all.seen)
	}
	waittest.Until(t, "load before the kill", func() bool { return count() >= 20000 || len(errs) > 0 })
	servers[1].kill()
	goal := count() + 20000
	waittest.Until(t, "load after the kill", func() bool { return count() >= goal || len(errs) > 0 })
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("call lost: %v", err)
	}
	if all.dups != 0 {
		t.Fatalf("%d duplicates among %d IDs", all.dups, len(all.seen))
	}
	perMachine := map[core.MachineID]int{}
	for id := range all.seen {
		perMachine[c.Explain(id).Machine]++
	}
	t.Logf("%d IDs by machine: %v", len(all.seen), perMachine)
}

// Every server down: fallback IDs (method 0, the fallback's machine), no
// duplicate with the earlier central IDs; a server back: central again.
func TestCentralFallbackAndRecovery(t *testing.T) {
	srv := startCentral(t, 1000, central.Config{})
	cfg := testConfig(t, srv.addr)
	c, reg := meteredClient(t, cfg)
	ctx := context.Background()
	var all collect

	ids, err := c.NextIDs(ctx, 50)
	if err != nil {
		t.Fatal(err)
	}
	all.add(ids...)
	if c.InFallback() || gauge(t, reg, "vesta_client_method") != 1 {
		t.Fatal("not using the central method at start")
	}

	srv.kill()
	for i := range 20 {
		var got []core.ID
		if i%2 == 0 {
			id, err := c.NextID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = []core.ID{id}
		} else if got, err = c.NextIDs(ctx, 10); err != nil {
			t.Fatal(err)
		}
		for _, id := range got {
			if e := c.Explain(id); e.Method != core.Embedded || e.Machine != 7 {
				t.Fatalf("ID %+v with the server down; want the fallback's (method 0, machine 7)", e)
			}
		}
		all.add(got...)
	}
	if !c.InFallback() || gauge(t, reg, "vesta_client_method") != 0 {
		t.Fatal("not in the fallback (method embedded)")
	}
	if n := gauge(t, reg, "vesta_ids_issued_total", "method", "embedded"); n != 110 {
		t.Fatalf(`vesta_ids_issued_total{method="embedded"} = %v; want 110`, n)
	}
	if st := c.Servers()[0].Breaker; st != gobreaker.StateOpen && st != gobreaker.StateHalfOpen {
		t.Fatalf("breaker = %v; want open (or half-open)", st)
	}

	srv.start()
	// The breaker lets a trial through 50ms after it opened; calls issue
	// from the fallback until then and from the server after.
	waittest.Until(t, "the return to the central method", func() bool {
		if !c.InFallback() {
			return true
		}
		id, err := c.NextID(ctx)
		if err != nil {
			t.Fatalf("no return to the central method: %v", err)
		}
		all.add(id)
		return false
	})
	id, err := c.NextID(ctx)
	if err != nil || c.Explain(id).Method != core.Central {
		t.Fatalf("NextID after recovery = %+v, %v", c.Explain(id), err)
	}
	all.add(id)
	if gauge(t, reg, "vesta_client_method") != 1 || gauge(t, reg, "vesta_client_breaker_state", "server", srv.addr) != 0 {
		t.Fatal("mode or breaker gauge not back to central/closed")
	}
	if all.dups != 0 {
		t.Fatalf("%d duplicates", all.dups)
	}
}

// A count above the server's max_batch is split into several calls.
func TestCentralSplitsBatches(t *testing.T) {
	srv := startCentral(t, 1000, central.Config{MaxBatch: 10})
	cfg := testConfig(t, srv.addr)
	c := newClient(t, cfg)
	ids, err := c.NextIDs(context.Background(), 95)
	if err != nil || len(ids) != 95 || len(slices.Compact(ids)) != 95 || c.InFallback() {
		t.Fatalf("NextIDs(95) with max_batch 10: %d IDs, %v", len(ids), err)
	}
}

// The fallback's IDs are counted once, from its generator: in Stats and
// in the registry the client's metrics are registered on.
func TestFallbackIDsCountedOnce(t *testing.T) {
	c, reg := meteredClient(t, testConfig(t, deadAddr(t)))
	if _, err := c.NextIDs(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().FallbackIssued; n != 5 {
		t.Errorf("Stats().FallbackIssued = %d; want 5", n)
	}
	if v, _ := promtest.Value(t, reg, "vesta_ids_issued_total", "method", "embedded"); v != 5 {
		t.Errorf(`vesta_ids_issued_total{method="embedded"} = %v; want 5`, v)
	}
}
