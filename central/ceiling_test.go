package central_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// advance moves the manual clock a millisecond at a time, each time once
// the server's Share sleeps on it, n times.
func advance(t *testing.T, clock *core.ManualClock, n int) {
	t.Helper()
	for range n {
		waittest.Sleepers(t, clock, 1)
		clock.Advance(time.Millisecond)
	}
}

// TestTakeIDs: TakeIDs never waits; past the ceiling (a unit's sequence:
// 1024 a millisecond sorted, Leaf's 4096) it gives what there is and says
// when to come back, and that hint is right.
func TestTakeIDs(t *testing.T) {
	for _, tc := range []struct {
		layout  core.Layout
		ceiling int
	}{{core.Sorted, 1024}, {core.Leaf, 4096}} {
		t.Run(tc.layout.String(), func(t *testing.T) {
			clock := core.NewManualClock(start) // no borrowing
			gen := newGen(t, core.Config{Layout: tc.layout, Type: core.MinGranularity, Clock: clock})
			_, addr := serve(t, gen, central.Config{})
			p := dial(t, addr)
			var r wire.TakeIDsResult
			p.result(wire.ProcTakeIDs, &wire.TakeIDsParams{Count: 5000}, &r)
			if len(r.IDs) == 0 || len(r.IDs) > tc.ceiling || r.RetryAfterMS != 1 {
				t.Fatalf("first take: %d IDs, retry after %d ms; want the unit's and 1", len(r.IDs), r.RetryAfterMS)
			}
			for i := 1; i < len(r.IDs); i++ {
				if r.IDs[i] <= r.IDs[i-1] {
					t.Fatal("IDs not increasing")
				}
			}
			last := r.IDs[len(r.IDs)-1]
			p.result(wire.ProcTakeIDs, &wire.TakeIDsParams{Count: 5}, &r)
			if len(r.IDs) != 0 || r.RetryAfterMS != 1 {
				t.Fatalf("spent unit: %d IDs, retry after %d ms", len(r.IDs), r.RetryAfterMS)
			}
			clock.Advance(time.Duration(r.RetryAfterMS) * time.Millisecond)
			p.result(wire.ProcTakeIDs, &wire.TakeIDsParams{Count: 1}, &r)
			if len(r.IDs) != 1 || r.RetryAfterMS != 0 || r.IDs[0] <= last {
				t.Fatalf("after the retry: %v, retry after %d", r.IDs, r.RetryAfterMS)
			}
			var info wire.Info
			p.result(wire.ProcInfo, nil, &info)
			if info.TakeIDs != 1 {
				t.Fatalf("Info.TakeIDs = %d", info.TakeIDs)
			}
		})
	}
}

// TestHugeCounts: counts out of range are invalid_argument, never a panic
// or an allocation, for every issuing procedure.
func TestHugeCounts(t *testing.T) {
	gen, _ := manualGen(t)
	_, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)
	for _, m := range []string{wire.ProcGenIDs, wire.ProcTakeIDs} {
		for _, n := range []uint64{0, central.DefaultMaxBatch + 1, 1 << 24, 1 << 62, math.MaxUint64} {
			var params any = &wire.GenIDsParams{Count: n}
			if m == wire.ProcTakeIDs {
				params = &wire.TakeIDsParams{Count: n}
			}
			resp := p.call(m, params)
			if !refused(resp.Error, api.InvalidArgument, "count") {
				t.Fatalf("%s count %d: %+v", m, n, resp.Error)
			}
		}
	}
	p.genID()
}

// TestSingleIDsNotStarved: one connection keeps GenIDs calls waiting at
// the ceiling; another's GenID is answered within a tick, ahead of them.
func TestSingleIDsNotStarved(t *testing.T) {
	gen, clock := manualGen(t)
	_, addr := serve(t, gen, central.Config{MaxBatch: 10000})
	greedy, light := dial(t, addr), dial(t, addr)
	exhaust(t, gen)
	for range 4 {
		greedy.send(wire.ProcGenIDs, &wire.GenIDsParams{Count: 10000})
	}
	var info wire.Info
	greedy.result(wire.ProcInfo, nil, &info) // the four are queued
	id := light.send(wire.ProcGenID, nil)
	light.result(wire.ProcInfo, nil, &info) // so is the GenID
	advance(t, clock, 1)
	resp := light.recv()
	if resp.MsgID != id || resp.Error != nil {
		t.Fatalf("light GenID: %+v", resp)
	}
	// The greedy calls finish too, in time: 40000 IDs at 1024 a tick,
	// 1023 of them in the tick that served the GenID.
	advance(t, clock, 39)
	for range 4 {
		resp := greedy.recv()
		var ids []uint64
		if resp.Error != nil || wire.DecodeResult(resp.Result, &ids) != nil || len(ids) != 10000 {
			t.Fatalf("greedy: %+v, %d IDs", resp.Error, len(ids))
		}
	}
}

// TestWaitingBudget: past the server-wide budget of waiting IDs, calls are
// unavailable at once, on any connection; past a connection's own bound
// (4 x max_batch IDs) too, while other connections still wait.
func TestWaitingBudget(t *testing.T) {
	gen, clock := manualGen(t)
	addr, reg := serveMetered(t, gen, central.Config{MaxBatch: 1000, MaxWaitingIDs: 6000})
	a, b, c := dial(t, addr), dial(t, addr), dial(t, addr)
	exhaust(t, gen)
	for range 4 {
		a.send(wire.ProcGenIDs, &wire.GenIDsParams{Count: 1000})
	}
	resp := a.call(wire.ProcGenIDs, &wire.GenIDsParams{Count: 1000}) // a's fifth: 5000 > 4 x 1000
	if !refused(resp.Error, api.Unavailable, "this connection") {
		t.Fatalf("a's fifth call: %+v", resp.Error)
	}
	for range 2 {
		b.send(wire.ProcGenIDs, &wire.GenIDsParams{Count: 1000})
	}
	var info wire.Info
	b.result(wire.ProcInfo, nil, &info)
	resp = c.call(wire.ProcGenIDs, &wire.GenIDsParams{Count: 10}) // 6010 > 6000
	if !refused(resp.Error, api.Unavailable, "owed") {
		t.Fatalf("past the budget: %+v", resp.Error)
	}
	if v := metric(t, reg, "vesta_rpc_waiting_ids"); v != 6000 {
		t.Fatalf("vesta_rpc_waiting_ids = %v; want 6000", v)
	}
	advance(t, clock, 6)
	for _, p := range []*peer{a, a, a, a, b, b} {
		if resp := p.recv(); resp.Error != nil {
			t.Fatal(resp.Error)
		}
	}
	c.genID() // the budget is free again
	// 6 calls waited, 2 were refused; the histogram has the 6.
	if v := metric(t, reg, "vesta_ceiling_waits_total", "method", "central"); v != 8 {
		t.Fatalf("vesta_ceiling_waits_total = %v; want 8", v)
	}
	if v := metric(t, reg, "vesta_ceiling_wait_seconds", "method", "central"); v != 6 {
		t.Fatalf("vesta_ceiling_wait_seconds count = %v; want 6", v)
	}
	if v := metric(t, reg, "vesta_rpc_waiting_ids"); v != 0 {
		t.Fatalf("vesta_rpc_waiting_ids = %v after", v)
	}
}

// TestCloseDuringWaits: closing the generator while calls wait answers
// every one of them (unavailable), and the server closes cleanly.
func TestCloseDuringWaits(t *testing.T) {
	gen, clock := manualGen(t)
	srv, addr := serve(t, gen, central.Config{})
	peers := []*peer{dial(t, addr), dial(t, addr), dial(t, addr)}
	exhaust(t, gen)
	for _, p := range peers {
		p.send(wire.ProcGenID, nil)
		p.send(wire.ProcGenIDs, &wire.GenIDsParams{Count: 5000})
		var info wire.Info
		p.result(wire.ProcInfo, nil, &info)
	}
	waittest.Sleepers(t, clock, 1)
	gen.Close()
	for _, p := range peers {
		for range 2 {
			if resp := p.recv(); !errors.Is(resp.Error, &api.Error{Code: api.Unavailable}) {
				t.Fatalf("a waiting call got %+v; want unavailable (closed)", resp)
			}
		}
	}
	srv.Close()
}

// TestTakeIDsSingles: a TakeIDs with singles set (a client's coalesced
// NextIDs) is served as single IDs are: once batches have taken all the
// pace allows, a batch gets nothing and must come back, while the singles
// get every ID they ask for from the rest of the borrowing credit, in one
// increasing run.
func TestTakeIDsSingles(t *testing.T) {
	clock := core.NewManualClock(start)
	gen := newGen(t, core.Config{Type: core.MinGranularity, Clock: clock, MaxBorrow: 10 * time.Millisecond})
	_, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)
	var r wire.TakeIDsResult
	for i := 0; ; i++ {
		p.result(wire.ProcTakeIDs, &wire.TakeIDsParams{Count: 1000}, &r)
		if len(r.IDs) < 1000 {
			break
		}
		if i > 100 {
			t.Fatal("batches were never paced")
		}
	}
	p.result(wire.ProcTakeIDs, &wire.TakeIDsParams{Count: 5}, &r)
	if len(r.IDs) != 0 || r.RetryAfterMS == 0 {
		t.Fatalf("a batch at the pace: %d IDs, retry after %d ms; want none and a retry", len(r.IDs), r.RetryAfterMS)
	}
	p.result(wire.ProcTakeIDs, &wire.TakeIDsParams{Count: 64, Singles: 1}, &r)
	if len(r.IDs) != 64 || r.RetryAfterMS != 0 {
		t.Fatalf("64 singles at the pace: %d IDs, retry after %d ms; want 64, no retry", len(r.IDs), r.RetryAfterMS)
	}
	for i := 1; i < len(r.IDs); i++ {
		if r.IDs[i]-r.IDs[i-1] != r.IDs[1]-r.IDs[0] || r.IDs[i] <= r.IDs[i-1] {
			t.Fatalf("singles %d and %d are not one increasing run: %d, %d", i-1, i, r.IDs[i-1], r.IDs[i])
		}
	}
}
