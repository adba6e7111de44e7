package central_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// fakeHistory answers a history of machine 1000 whose holds cover every
// instant: hold AAAA alone, or with BBBB when conflict is set; a read
// waits while gate is closed and counts itself in reads.
type fakeHistory struct {
	reads    atomic.Int32
	conflict atomic.Bool
	fail     atomic.Bool
	gate     chan struct{}
}

func (f *fakeHistory) read(ctx context.Context, machine uint16) (api.HoldHistory, error) {
	f.reads.Add(1)
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return api.HoldHistory{}, ctx.Err()
		}
	}
	switch {
	case f.fail.Load():
		return api.HoldHistory{}, errors.New("redis [127.0.0.1:1]: connection refused")
	case machine != 1000:
		return api.HoldHistory{}, errors.New("wrong machine")
	}
	a := api.Hold{Hold: "AAAA", Host: "node-a", PID: 7, Provider: "redis", Range: "server", TTL: 15 * time.Second}
	b := api.Hold{Hold: "BBBB", Host: "node-b", PID: 8}
	conflict := f.conflict.Load()
	return api.HoldHistory{Store: "redis", Skipped: []string{}, Match: func(t, now time.Time) api.HolderMatch {
		if conflict {
			return api.HolderMatch{Holds: []api.Hold{a, b}, Conflict: true, Reason: "2 holds of machine 1000 cover it"}
		}
		return api.HolderMatch{Holds: []api.Hold{a}}
	}}, nil
}

// TestHolderProcedure: Vesta.Holder over a real connection answers the
// one hold that covers an ID, a conflict of two (counted in
// vesta_hold_conflicts_total), twenty calls one store read; a store that
// cannot be read is unavailable naming the machine ID; a server without a
// history says so; bad params are invalid_argument naming the field.
func TestHolderProcedure(t *testing.T) {
	gen := newGen(t, core.Config{})
	f := &fakeHistory{}
	addr, reg := serveMetered(t, gen, central.Config{Holders: api.NewHolders(f.read)})
	p := dial(t, addr)
	id := p.genID()

	var h wire.Holder
	p.result(wire.ProcHolder, &wire.HolderParams{ID: uint64(id)}, &h)
	if h.Known != 1 || h.Conflict != 0 || h.Store != "redis" || len(h.Holds) != 1 || h.Holds[0].Hold != "AAAA" ||
		h.Holds[0].Host != "node-a" || h.Holds[0].PID != 7 || h.Holds[0].TTLMS != 15000 {
		t.Fatalf("Holder: %+v; want hold AAAA alone", h)
	}
	for range 20 {
		p.result(wire.ProcHolder, map[string]any{"id": id.String()}, &h) // the ID as decimal text too
	}
	if n := f.reads.Load(); n != 1 {
		t.Fatalf("21 calls about one machine ID read the store %d times; want 1", n)
	}
	if n := metric(t, reg, "vesta_hold_conflicts_total"); n != 0 {
		t.Fatalf("vesta_hold_conflicts_total %v before a conflict", n)
	}

	// A conflict, on a server of its own (a fresh cache).
	fc := &fakeHistory{}
	fc.conflict.Store(true)
	_, addrC := serve(t, gen, central.Config{Holders: api.NewHolders(fc.read), Registerer: reg})
	pc := dial(t, addrC)
	pc.result(wire.ProcHolder, &wire.HolderParams{ID: uint64(id)}, &h)
	if h.Known != 0 || h.Conflict != 1 || len(h.Holds) != 2 || !strings.Contains(h.Reason, "2 holds") {
		t.Fatalf("Holder: %+v; want a conflict of two", h)
	}
	if n := metric(t, reg, "vesta_hold_conflicts_total"); n != 1 {
		t.Fatalf("vesta_hold_conflicts_total %v; want 1", n)
	}

	fd := &fakeHistory{}
	fd.fail.Store(true)
	_, addrD := serve(t, gen, central.Config{Holders: api.NewHolders(fd.read)})
	_, addrN := serve(t, gen, central.Config{})
	pd, pn := dial(t, addrD), dial(t, addrN)
	pn.result(wire.ProcHolder, &wire.HolderParams{ID: uint64(id)}, &h)
	if h.Known != 0 || h.Store != "none" || h.Reason != api.NoHistory || h.Holds == nil {
		t.Fatalf("Holder of a server without history: %+v", h)
	}
	for _, tc := range []struct {
		name   string
		p      *peer
		params any
		code   api.Code
		want   string
	}{
		{"store down", pd, &wire.HolderParams{ID: uint64(id)}, api.Unavailable, "the hold history of machine 1000 cannot be read: redis"},
		{"no id", p, map[string]any{}, api.InvalidArgument, "missing field id"},
		{"id not a number", p, map[string]any{"id": "x"}, api.InvalidArgument, "id"},
		{"id negative", pn, map[string]any{"id": -1}, api.InvalidArgument, "id"},
		{"unknown key", p, map[string]any{"id": 1, "holder": true}, api.InvalidArgument, "holder"},
		// 2^62-1: a time field of all ones, decades after now: another
		// layout's or epoch's ID, refused before any read, with or
		// without a history.
		{"id after now", p, &wire.HolderParams{ID: 1<<62 - 1}, api.InvalidArgument, "after now: not an ID of this server's layout"},
		{"id after now, no history", pn, &wire.HolderParams{ID: 1<<62 - 1}, api.InvalidArgument, "after now"},
	} {
		resp := tc.p.call(wire.ProcHolder, tc.params)
		if !refused(resp.Error, tc.code, tc.want) {
			t.Errorf("%s: %v; want %s naming %q", tc.name, resp.Error, tc.code, tc.want)
		}
	}
}

// TestHolderOffTheIssuingPath: while a history read waits for its store,
// the same connection's IDs are answered; the Holder answer follows when
// the store does.
func TestHolderOffTheIssuingPath(t *testing.T) {
	gen := newGen(t, core.Config{})
	f := &fakeHistory{gate: make(chan struct{})}
	_, addr := serve(t, gen, central.Config{Holders: api.NewHolders(f.read)})
	p := dial(t, addr)
	id := p.genID()
	held := p.send(wire.ProcHolder, &wire.HolderParams{ID: uint64(id)})
	for range 3 {
		if next := p.genID(); next <= id {
			t.Fatalf("GenID %d after %d", next, id)
		}
	}
	close(f.gate)
	resp := p.recv()
	var h wire.Holder
	if resp.MsgID != held || resp.Error != nil || wire.DecodeResult(resp.Result, &h) != nil || h.Known != 1 {
		t.Fatalf("Holder answer %+v (%+v)", resp, h)
	}
}

// TestHolderCacheShared: one Holders serves every server of a
// process: a question over either protocol reads the store once.
func TestHolderCacheShared(t *testing.T) {
	gen := newGen(t, core.Config{})
	f := &fakeHistory{}
	hs := api.NewHolders(f.read)
	_, a1 := serve(t, gen, central.Config{Holders: hs})
	_, a2 := serve(t, gen, central.Config{Holders: hs})
	id := dial(t, a1).genID()
	var h wire.Holder
	dial(t, a1).result(wire.ProcHolder, &wire.HolderParams{ID: uint64(id)}, &h)
	dial(t, a2).result(wire.ProcHolder, &wire.HolderParams{ID: uint64(id)}, &h)
	if _, err := hs.Of(context.Background(), gen.Codec().Explain(id), time.Second, time.Now()); err != nil || f.reads.Load() != 1 {
		t.Fatalf("three questions read the store %d times (%v); want 1", f.reads.Load(), err)
	}
}
