package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/prommetrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a small MessagePack-RPC server built from package wire, for the
// faults a real server will not produce on demand: error codes, silence,
// a sudden death and a restart on the same address.
type fake struct {
	t        testing.TB
	gen      *core.Generator
	maxBatch int
	addr     string
	tls      *tls.Config

	fail   atomic.Pointer[api.Error] // answer GenID(s) and TakeIDs with this error
	silent atomic.Bool               // read GenID(s) and TakeIDs requests, never answer
	// silentFirst: the first connection is silent, later ones answer.
	silentFirst atomic.Bool
	accepted    atomic.Int64
	calls       atomic.Int64 // GenID, GenIDs and TakeIDs requests read

	// Vesta.TakeIDs, offered (Info's take_ids) when takeIDs is set: it
	// gives at most room IDs in all (negative: no limit) and says
	// retryMS when it gives fewer than asked.
	takeIDs atomic.Bool
	room    atomic.Int64
	retryMS atomic.Uint64
	takes   atomic.Int64 // TakeIDs requests answered
	busy    atomic.Int64 // ... of which short (busy)
	// singles offers TakeIDs' singles key (Info's singles) with takeIDs;
	// grouped counts the TakeIDs requests that carried it.
	singles atomic.Bool
	grouped atomic.Int64

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startFake serves machine's IDs (sorted layout, max-peak) on 127.0.0.1.
func startFake(t testing.TB, machine core.MachineID, maxBatch int) *fake {
	t.Helper()
	return startFakeOn(t, "127.0.0.1:0", core.Config{Machine: machine}, maxBatch, nil)
}

// startFakeOn serves IDs of a generator of gcfg (with a MaxBorrow of 1s) on
// addr, behind TLS when tc is not nil.
func startFakeOn(t testing.TB, addr string, gcfg core.Config, maxBatch int, tc *tls.Config) *fake {
	t.Helper()
	gcfg.MaxBorrow = time.Second
	gen, err := core.New(context.Background(), gcfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{t: t, gen: gen, maxBatch: maxBatch, tls: tc, conns: map[net.Conn]struct{}{}}
	f.room.Store(-1)
	f.retryMS.Store(100)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	f.serve(ln)
	t.Cleanup(func() {
		f.kill()
		gen.Close()
	})
	return f
}

func (f *fake) serve(ln net.Listener) {
	if f.tls != nil {
		ln = tls.NewListener(ln, f.tls)
	}
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	f.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			if f.ln == nil { // killed while accepting
				f.mu.Unlock()
				nc.Close()
				return
			}
			f.conns[nc] = struct{}{}
			f.mu.Unlock()
			f.wg.Go(func() { f.handle(nc) })
		}
	})
}

// kill closes the listener and every connection, as a crash would.
func (f *fake) kill() {
	f.mu.Lock()
	if f.ln != nil {
		f.ln.Close()
		f.ln = nil
	}
	for nc := range f.conns {
		nc.Close()
		delete(f.conns, nc)
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *fake) handle(nc net.Conn) {
	defer nc.Close()
	first := f.accepted.Add(1) == 1
	r := wire.NewReader(nc, wire.DefaultMaxRequestBytes)
	enc := wire.NewEncoder()
	var out []byte
	for {
		frame, err := r.Next()
		if err != nil {
			return
		}
		req, err := wire.DecodeRequest(frame)
		if err != nil {
			continue
		}
		if (f.silent.Load() || (first && f.silentFirst.Load())) && req.Procedure != wire.ProcInfo {
			f.calls.Add(1)
			continue
		}
		result, werr := f.answer(req)
		out, err = enc.AppendResponse(out[:0], req.MsgID, werr, result)
		if err != nil {
			f.t.Error(err)
			return
		}
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

// count reads the {count} of a GenIDs or TakeIDs request, 1 to maxBatch
// (and TakeIDs' singles when the fake offers it).
func (f *fake) count(req wire.Request) (uint64, *api.Error) {
	var err error
	var count uint64
	if req.Procedure == wire.ProcTakeIDs && f.singles.Load() {
		var p wire.TakeIDsParams
		if err = wire.DecodeParams(req.Params, &p); err == nil && p.Singles == 1 {
			f.grouped.Add(1)
		}
		count = p.Count
	} else {
		var p wire.GenIDsParams
		err = wire.DecodeParams(req.Params, &p)
		count = p.Count
	}
	if err != nil {
		var we *api.Error
		errors.As(err, &we)
		return 0, we
	}
	if count < 1 || count > uint64(f.maxBatch) {
		return 0, api.Errorf(api.InvalidArgument, "count %d; want 1-%d", count, f.maxBatch)
	}
	return count, nil
}

func (f *fake) answer(req wire.Request) (any, *api.Error) {
	switch req.Procedure {
	case wire.ProcInfo:
		c := f.gen.Codec()
		var take, singles uint64
		if f.takeIDs.Load() {
			take = 1
		}
		if f.singles.Load() {
			singles = 1
		}
		return wire.Info{
			Layout: c.Layout().String(), Epoch: wire.FormatEpoch(c.Epoch()), Type: uint64(f.gen.Type()),
			Machine: uint64(f.gen.Machine()), Method: uint64(core.Central), Version: uint64(f.gen.Version()),
			MaxBatch: uint64(f.maxBatch), TakeIDs: take, Singles: singles,
		}, nil
	case wire.ProcTakeIDs:
		f.calls.Add(1)
		if e := f.fail.Load(); e != nil {
			return nil, e
		}
		count, we := f.count(req)
		if we != nil {
			return nil, we
		}
		k := int64(count)
		for {
			room := f.room.Load()
			if room < 0 {
				break
			}
			k = min(k, room)
			if f.room.CompareAndSwap(room, room-k) {
				break
			}
		}
		f.takes.Add(1)
		res := wire.TakeIDsResult{IDs: []uint64{}}
		if k > 0 {
			ids, err := f.gen.NextIDs(context.Background(), core.Central, int(k))
			if err != nil {
				return nil, api.Errorf(api.Unavailable, "%v", err)
			}
			for _, id := range ids {
				res.IDs = append(res.IDs, uint64(id))
			}
		}
		if k < int64(count) {
			f.busy.Add(1)
			res.RetryAfterMS = f.retryMS.Load()
		}
		return res, nil
	case wire.ProcGenID, wire.ProcGenIDs:
		f.calls.Add(1)
		if e := f.fail.Load(); e != nil {
			return nil, e
		}
		if req.Procedure == wire.ProcGenID {
			id, err := f.gen.NextID(context.Background(), core.Central)
			if err != nil {
				return nil, api.Errorf(api.Unavailable, "%v", err)
			}
			return uint64(id), nil
		}
		count, we := f.count(req)
		if we != nil {
			return nil, we
		}
		ids, err := f.gen.NextIDs(context.Background(), core.Central, int(count))
		if err != nil {
			return nil, api.Errorf(api.Unavailable, "%v", err)
		}
		out := make([]uint64, len(ids))
		for i, id := range ids {
			out[i] = uint64(id)
		}
		return out, nil
	}
	return nil, api.Errorf(api.InvalidArgument, "unknown method %q", req.Procedure)
}

// deadAddr returns a loopback address where nothing listens.
var deadAddr = nettest.DeadAddr

// testConfig is DefaultConfig for addrs with the fallback's time guard in
// a temporary directory, a breaker that opens after 3 failures and tries
// again after 50ms and a generous timeout (the race detector on two shared
// cores is slow).
func testConfig(t testing.TB, addrs ...string) client.Config {
	cfg := client.DefaultConfig(addrs...)
	cfg.FallbackConfig.DataDir = t.TempDir()
	cfg.FallbackConfig.Machine.Static = new(core.MachineID(7))
	cfg.Timeout = 2 * time.Second
	cfg.BreakerFailures = 3
	cfg.BreakerTimeout = 50 * time.Millisecond
	return cfg
}

// registry is a registry with c's metrics (package prommetrics), which
// the tests read as an operator would.
func registry(t testing.TB, c *client.Client) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := prommetrics.RegisterClient(reg, c); err != nil {
		t.Fatal(err)
	}
	return reg
}

// newClient is client.New, closed (without error) when the test ends.
func newClient(t testing.TB, cfg client.Config) *client.Client {
	t.Helper()
	return clockClient(t, cfg, core.NewSystemClock())
}

// meteredClient is newClient's client and registry's registry of it.
func meteredClient(t testing.TB, cfg client.Config) (*client.Client, *prometheus.Registry) {
	t.Helper()
	c := newClient(t, cfg)
	return c, registry(t, c)
}

// logTo sets cfg's Logger to a text logger writing into the buffer it
// returns.
func logTo(cfg *client.Config) *syncBuffer {
	logs := new(syncBuffer)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	return logs
}

// gauge reads a metric of reg: name with the label pairs given.
func gauge(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	v, _ := promtest.Value(t, reg, name, labels...)
	return v
}

// collect checks that no ID occurs twice, across every call of a test.
type collect struct {
	mu   sync.Mutex
	seen map[core.ID]bool
	dups int
}

// singles starts callers goroutines in wg, each adding n IDs of cl's
// NextID one at a time.
func (c *collect) singles(t testing.TB, wg *sync.WaitGroup, cl *client.Client, callers, n int) {
	for range callers {
		wg.Go(func() {
			for range n {
				id, err := cl.NextID(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				c.add(id)
			}
		})
	}
}

func (c *collect) add(ids ...core.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[core.ID]bool{}
	}
	for _, id := range ids {
		if c.seen[id] {
			c.dups++
		}
		c.seen[id] = true
	}
}
