package central_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

func u64p(v uint64) *uint64 { return &v }

// TestProcedures: every procedure, for each layout; a leaf server's IDs are
// Leaf's snowflake bits and explain with no method.
func TestProcedures(t *testing.T) {
	for _, tc := range []struct {
		cfg       core.Config
		method    core.Method // as explained
		transTime string      // of time field 86400
		info      wire.Info
	}{
		{core.Config{}, core.Central, "2025-01-02T00:00:00Z",
			wire.Info{Layout: "sorted", Epoch: "2025-01-01T00:00:00Z", Type: 0, Machine: 1000, Method: 1, Version: 0, MaxBatch: 500, TakeIDs: 1, Singles: 1}},
		{core.Config{Layout: core.Leaf, Type: core.MinGranularity}, core.MethodUnknown, "2010-11-04T01:44:21.057Z",
			wire.Info{Layout: "leaf", Epoch: "2010-11-04T01:42:54.657Z", Type: 1, Machine: 1000, Method: 1, Version: 0, MaxBatch: 500, TakeIDs: 1, Singles: 1}},
	} {
		t.Run(tc.info.Layout, func(t *testing.T) {
			testProcedures(t, tc.cfg, tc.method, tc.transTime, tc.info)
		})
	}
}

func testProcedures(t *testing.T, cfg core.Config, method core.Method, transTime string, wantInfo wire.Info) {
	gen := newGen(t, cfg)
	srv, addr := serve(t, gen, central.Config{MaxBatch: 500})
	p := dial(t, addr)
	codec := gen.Codec()

	id := p.genID()
	if srv.Addr().String() != addr.String() { // Serve has begun: it answered
		t.Fatalf("Addr %v; want %v", srv.Addr(), addr)
	}
	x := codec.Explain(id)
	if x.Method != method || x.Machine != 1000 || x.Type != cfg.Type || time.Since(x.Instant).Abs() > 3*time.Second {
		t.Fatalf("GenID %d: %+v", id, x)
	}
	if cfg.Layout == core.Leaf {
		// Leaf's formula, SnowflakeIDGenImpl.get: ms since twepoch << 22 | worker << 12 | seq.
		if ms := uint64(x.Instant.UnixMilli() - 1288834974657); uint64(id) != ms<<22|1000<<12|x.Seq {
			t.Fatalf("GenID %d is not Leaf's formula for %+v", id, x)
		}
	}

	var ids []uint64
	p.result(wire.ProcGenIDs, &wire.GenIDsParams{Count: 500}, &ids)
	if len(ids) != 500 {
		t.Fatalf("GenIDs: %d IDs", len(ids))
	}
	for i, v := range ids {
		if core.ID(v) <= id || (i > 0 && v <= ids[i-1]) {
			t.Fatalf("GenIDs: IDs not increasing at %d", i)
		}
	}

	var exp wire.Explanation
	p.result(wire.ProcExpID, &wire.ExpIDParams{ID: uint64(id)}, &exp)
	if exp != wire.ExplanationOf(x) || exp.MethodName != method.String() {
		t.Fatalf("ExpID: %+v; want %+v", exp, wire.ExplanationOf(x))
	}

	typ := uint64(cfg.Type)
	makeTests := []struct {
		params wire.MakeIDParams
		fields core.Fields
	}{
		{wire.MakeIDParams{Time: 12345, Seq: 6}, core.Fields{Time: 12345, Seq: 6, Machine: 1000, Method: 1, Type: typ}},
		{wire.MakeIDParams{Time: 1, Seq: 2, Machine: u64p(3), Method: u64p(3), Type: u64p(1), Version: u64p(1)},
			core.Fields{Time: 1, Seq: 2, Machine: 3, Method: 3, Type: 1, Version: 1}},
	}
	for _, tt := range makeTests {
		var made uint64
		p.result(wire.ProcMakeID, &tt.params, &made)
		want, err := codec.Make(tt.fields)
		if err != nil || core.ID(made) != want {
			t.Fatalf("MakeID %+v = %d; want %d (%v)", tt.params, made, want, err)
		}
	}

	var tt wire.TransTimeResult
	p.result(wire.ProcTransTime, &wire.TransTimeParams{Time: 86400}, &tt)
	if at, _ := time.Parse(time.RFC3339Nano, transTime); tt.Timestamp != transTime || tt.UnixMS != at.UnixMilli() {
		t.Fatalf("TransTime: %+v; want %s", tt, transTime)
	}

	var info wire.Info
	p.result(wire.ProcInfo, nil, &info)
	if info != wantInfo {
		t.Fatalf("Info: %+v; want %+v", info, wantInfo)
	}

	var h wire.Holder // a server without a hold history (holder_test.go has one)
	p.result(wire.ProcHolder, &wire.HolderParams{ID: uint64(id)}, &h)
	if h.Known != 0 || h.Store != "none" || h.Reason != api.NoHistory {
		t.Fatalf("Holder: %+v; want no history", h)
	}
}

// TestSpecBytes speaks to the server as a client in another language
// would: the request bytes are written out by hand, and the response is
// checked byte by byte against the MessagePack-RPC spec.
func TestSpecBytes(t *testing.T) {
	gen := newGen(t, core.Config{Layout: core.Vesta, Clock: core.NewManualClock(start)})
	_, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)

	// [0, 1, "Vesta.GenID", []]
	p.write([]byte{0x94, 0x00, 0x01, 0xab, 'V', 'e', 's', 't', 'a', '.', 'G', 'e', 'n', 'I', 'D', 0x90})
	got := readN(t, p, 13)
	// [1, 1, nil, uint 64]: an ID of this century is above 2^32.
	if !bytes.Equal(got[:5], []byte{0x94, 0x01, 0x01, 0xc0, 0xcf}) {
		t.Fatalf("response % x", got)
	}
	x := gen.Codec().Explain(core.ID(binary.BigEndian.Uint64(got[5:])))
	if x.Machine != 1000 || x.Method != core.Central || !x.Instant.Equal(start) {
		t.Fatalf("ID % x: %+v", got[5:], x)
	}

	// [0, 2, "Vesta.TransTime", [{"time": 0}]]
	p.write(append([]byte{0x94, 0x00, 0x02, 0xaf}, "Vesta.TransTime\x91\x81\xa4time\x00"...))
	want := append([]byte{0x94, 0x01, 0x02, 0xc0,
		0x82, // {"timestamp": "2014-12-31T16:00:00Z", "unix_ms": 1420041600000}
		0xa9}, "timestamp"...)
	want = append(append(want, 0xb4), "2014-12-31T16:00:00Z"...)
	want = append(append(want, 0xa7), "unix_ms"...)
	want = append(want, 0xd3, 0, 0, 0x01, 0x4a, 0xa1, 0x13, 0x3c, 0x00)
	if got := readN(t, p, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("TransTime response\n% x; want\n% x", got, want)
	}

	// [0, 3, "Vesta.GenIDs", [{"count": 0}]] -> an error string.
	p.write(append([]byte{0x94, 0x00, 0x03, 0xac}, "Vesta.GenIDs\x91\x81\xa5count\x00"...))
	msg := "invalid_argument: count 0; want 1-10000"
	want = append([]byte{0x94, 0x01, 0x03, 0xd9, byte(len(msg))}, msg...)
	want = append(want, 0xc0)
	if got := readN(t, p, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("error response\n% x; want\n% x", got, want)
	}
}

// readN reads exactly n bytes of the raw stream.
func readN(t *testing.T, p *peer, n int) []byte {
	t.Helper()
	p.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	b := make([]byte, n)
	for i := 0; i < n; {
		k, err := p.nc.Read(b[i:])
		if err != nil {
			t.Fatalf("after % x: %v", b[:i], err)
		}
		i += k
	}
	return b
}

// TestPipelined: calls on one connection are answered as they finish, so
// a call waiting for the clock holds up nobody.
func TestPipelined(t *testing.T) {
	gen, clock := manualGen(t)
	_, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)
	exhaust(t, gen)

	// One write holds all four requests.
	var b []byte
	e := wire.NewEncoder()
	b, _ = e.AppendRequest(b, 1, wire.ProcGenID, nil)
	b, _ = e.AppendRequest(b, 2, wire.ProcInfo, nil)
	b, _ = e.AppendRequest(b, 3, wire.ProcGenIDs, &wire.GenIDsParams{Count: 3})
	b, _ = e.AppendRequest(b, 4, wire.ProcExpID, &wire.ExpIDParams{ID: 1})
	p.write(b)
	for _, want := range []uint32{2, 4} {
		if resp := p.recv(); resp.MsgID != want || resp.Error != nil {
			t.Fatalf("got %d (%v); want %d first", resp.MsgID, resp.Error, want)
		}
	}
	// Both issuing calls wait in the server's Share, whose one goroutine
	// sleeps for them.
	waittest.Sleepers(t, clock, 1)
	clock.Advance(time.Millisecond)
	var one uint64
	var three []uint64
	for range 2 {
		resp := p.recv() // the result is valid until the next recv
		var err error
		switch resp.MsgID {
		case 1:
			err = wire.DecodeResult(resp.Result, &one)
		case 3:
			err = wire.DecodeResult(resp.Result, &three)
		default:
			t.Fatalf("answer to %d", resp.MsgID)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if one == 0 || len(three) != 3 {
		t.Fatalf("GenID %d, GenIDs %v", one, three)
	}
	for _, id := range append(three, one) {
		if x := gen.Codec().Explain(core.ID(id)); !x.Instant.Equal(start.Add(time.Millisecond)) {
			t.Fatalf("ID %d issued at %v; want the next unit", id, x.Instant)
		}
	}
}

// TestWaitingBounded: past MaxInFlight waiting calls, a connection's
// issuing calls are refused at once, and others still served.
func TestWaitingBounded(t *testing.T) {
	gen, clock := manualGen(t)
	_, addr := serve(t, gen, central.Config{MaxInFlight: 2})
	p := dial(t, addr)
	exhaust(t, gen)
	p.send(wire.ProcGenID, nil)
	p.send(wire.ProcGenID, nil)
	resp := p.call(wire.ProcGenID, nil)
	if !errors.Is(resp.Error, &api.Error{Code: api.Unavailable}) {
		t.Fatalf("third waiting call: %+v", resp)
	}
	var info wire.Info
	p.result(wire.ProcInfo, nil, &info)
	waittest.Sleepers(t, clock, 1)
	clock.Advance(time.Millisecond)
	for range 2 {
		if resp := p.recv(); resp.Error != nil {
			t.Fatal(resp.Error)
		}
	}
}

func TestErrorCodes(t *testing.T) {
	t.Run("lease_lost", func(t *testing.T) {
		gen := newGen(t, core.Config{})
		_, addr := serve(t, gen, central.Config{})
		p := dial(t, addr)
		gen.Control().Fence(errors.New("lease expired"))
		for _, m := range []string{wire.ProcGenID, wire.ProcGenIDs} {
			resp := p.call(m, paramsFor(m))
			if !refused(resp.Error, api.LeaseLost, "lease expired") {
				t.Fatalf("%s fenced: %+v", m, resp.Error)
			}
		}
		gen.Control().Unfence()
		p.genID()
	})
	t.Run("unavailable", func(t *testing.T) {
		gen := newGen(t, core.Config{})
		_, addr := serve(t, gen, central.Config{})
		p := dial(t, addr)
		gen.Close()
		resp := p.call(wire.ProcGenID, nil)
		if !errors.Is(resp.Error, &api.Error{Code: api.Unavailable}) {
			t.Fatalf("closed generator: %+v", resp.Error)
		}
		var info wire.Info // what needs no issuing still works
		p.result(wire.ProcInfo, nil, &info)
	})
	t.Run("clock", func(t *testing.T) {
		clock := core.NewManualClock(start)
		gen := newGen(t, core.Config{Clock: clock})
		_, addr := serve(t, gen, central.Config{})
		p := dial(t, addr)
		clock.Set(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)) // past the end of time
		resp := p.call(wire.ProcGenID, nil)
		if !errors.Is(resp.Error, &api.Error{Code: api.Clock}) {
			t.Fatalf("end of time: %+v", resp.Error)
		}
	})
	t.Run("invalid_argument", func(t *testing.T) {
		gen := newGen(t, core.Config{})
		_, addr := serve(t, gen, central.Config{})
		p := dial(t, addr)
		resp := p.call(wire.ProcMakeID, &wire.MakeIDParams{Time: 1, Seq: 1 << 20})
		if !refused(resp.Error, api.InvalidArgument, "seq") {
			t.Fatalf("MakeID seq 2^20: %+v", resp.Error)
		}
		resp = p.call(wire.ProcTransTime, &wire.TransTimeParams{Time: 1 << 30})
		if !refused(resp.Error, api.InvalidArgument, "time") {
			t.Fatalf("TransTime 2^30: %+v", resp.Error)
		}
	})
}

func paramsFor(proc string) any {
	if proc == wire.ProcGenIDs {
		return &wire.GenIDsParams{Count: 10}
	}
	return nil
}

func TestNotification(t *testing.T) {
	gen := newGen(t, core.Config{})
	_, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)
	e := wire.NewEncoder()
	b, _ := e.AppendNotification(nil, wire.ProcGenIDs, &wire.GenIDsParams{Count: 1000})
	p.write(b)
	before := gen.Stats().Issued
	p.genID()
	if issued := gen.Stats().Issued - before; issued != 1 {
		t.Fatalf("issued %d IDs; want 1: notifications issue nothing", issued)
	}
}

func TestConfig(t *testing.T) {
	if err := central.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (central.Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cfg  central.Config
		name string
	}{
		{central.Config{MaxBatch: -1}, "MaxBatch"},
		{central.Config{MaxBatch: 1_000_001}, "MaxBatch"},
		{central.Config{MaxRequestBytes: 100}, "MaxRequestBytes"},
		{central.Config{MaxConns: -5}, "MaxConns"},
		{central.Config{MaxConnsPerPeer: -1}, "MaxConnsPerPeer"},
		{central.Config{MaxConnsPerPeer: 2_000_000}, "MaxConnsPerPeer"},
		{central.Config{FirstFrameTimeout: -time.Second}, "FirstFrameTimeout"},
		{central.Config{MaxInFlight: -1}, "MaxInFlight"},
		{central.Config{IdleTimeout: -time.Second}, "IdleTimeout"},
		{central.Config{ReadTimeout: -1}, "ReadTimeout"},
		{central.Config{WriteTimeout: -1}, "WriteTimeout"},
	}
	gen := newGen(t, core.Config{})
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if !errtest.Wraps(err, central.ErrConfig, tt.name) {
			t.Errorf("%+v: %v; want an error naming %s", tt.cfg, err, tt.name)
		}
		if _, err := central.NewServer(gen, tt.cfg); !errors.Is(err, central.ErrConfig) {
			t.Errorf("NewServer %+v: %v", tt.cfg, err)
		}
	}
	if _, err := central.NewServer(nil, central.Config{}); !errors.Is(err, central.ErrConfig) {
		t.Errorf("NewServer(nil): %v", err)
	}
}

func ExampleServer() {
	gen, err := core.New(context.Background(), core.Config{Machine: 1000})
	if err != nil {
		panic(err)
	}
	srv, err := central.NewServer(gen, central.DefaultConfig())
	if err != nil {
		panic(err)
	}
	// go srv.Serve(ln) with a listener; then, to stop:
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(srv.Shutdown(ctx))
	fmt.Println(gen.Close()) // the caller owns the generator: close it last
	// Output:
	// <nil>
	// <nil>
}

// TestLargeAnswers: a pipeline of maximal batches is answered in full, in
// writes of bounded size, with IDs that increase across the answers.
func TestLargeAnswers(t *testing.T) {
	gen := newGen(t, core.DefaultConfig())
	_, addr := serve(t, gen, central.Config{})
	p := dial(t, addr)
	var b []byte
	e := wire.NewEncoder()
	for i := range 20 {
		b, _ = e.AppendRequest(b, uint32(i), wire.ProcGenIDs, &wire.GenIDsParams{Count: central.DefaultMaxBatch})
	}
	p.write(b)
	var last uint64
	for i := range 20 {
		resp := p.recv()
		var ids []uint64
		if resp.MsgID != uint32(i) || wire.DecodeResult(resp.Result, &ids) != nil || len(ids) != central.DefaultMaxBatch {
			t.Fatalf("answer %d: %d, %v, %d IDs", i, resp.MsgID, resp.Error, len(ids))
		}
		if ids[0] <= last {
			t.Fatalf("answer %d starts at %d, after %d", i, ids[0], last)
		}
		last = ids[len(ids)-1]
	}
}
