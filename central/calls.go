package central

import (
	"context"
	"errors"
	"time"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// noWait is an ended context. Given it, the generator issues what it can at
// once and fails with context.Canceled where it would have to wait, so the
// read loop serves the common call inline, with no goroutine, and passes
// only a call that must wait to a goroutine of its own.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// wouldBlock reports an error of a call given noWait that must wait.
func wouldBlock(err error) bool { return errors.Is(err, context.Canceled) }

// answer is the outcome of a call: an error, one ID (the common answer,
// written without the codec and without boxing), or another result.
type answer struct {
	err   *wire.Error
	id    uint64
	value any // nil: the result is id
}

// call serves one request; every path answers it exactly once.
func (c *conn) call(req wire.Request, t0 time.Time) {
	m := methodIndex(req.Method)
	switch req.Method {
	case wire.MethodGenID:
		if err := wire.DecodeParams(req.Params, nil); err != nil {
			c.respond(true, req.MsgID, m, t0, c.argError(err))
			return
		}
		c.genID(req.MsgID, m, t0)
	case wire.MethodGenIDs:
		var p wire.GenIDsParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			c.respond(true, req.MsgID, m, t0, c.argError(err))
			return
		}
		if p.Count < 1 || p.Count > uint64(c.s.cfg.MaxBatch) {
			werr := wire.Errorf(wire.InvalidArgument, "count %d; want 1-%d", p.Count, c.s.cfg.MaxBatch)
			c.respond(true, req.MsgID, m, t0, answer{err: werr})
			return
		}
		c.genIDs(req.MsgID, m, t0, int(p.Count))
	default:
		c.respond(true, req.MsgID, m, t0, c.compute(req))
	}
}

// compute serves the methods that never wait.
func (c *conn) compute(req wire.Request) answer {
	gen := c.s.gen
	switch req.Method {
	case wire.MethodExpID:
		var p wire.ExpIDParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			return c.argError(err)
		}
		return answer{value: wire.ExplanationOf(gen.Codec().Explain(core.ID(p.ID)))}

	case wire.MethodMakeID:
		var p wire.MakeIDParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			return c.argError(err)
		}
		id, err := gen.Codec().Make(p.Partial().Fill(gen.Own(core.Central)))
		if err != nil {
			return answer{err: c.genError(err)}
		}
		return answer{id: uint64(id)}

	case wire.MethodTransTime:
		var p wire.TransTimeParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			return c.argError(err)
		}
		instant, err := gen.Codec().TransTime(gen.Type(), p.Time)
		if err != nil {
			return answer{err: c.genError(err)}
		}
		return answer{value: wire.TransTimeResultOf(gen.Type(), instant)}

	case wire.MethodInfo:
		if err := wire.DecodeParams(req.Params, nil); err != nil {
			return c.argError(err)
		}
		return answer{value: c.s.info()}
	}
	return answer{err: wire.Errorf(wire.InvalidArgument, "unknown method %q", req.Method)}
}

// genID serves Vesta.GenID: inline when the generator need not wait, else
// on a goroutine of its own.
func (c *conn) genID(msgid uint32, m int, t0 time.Time) {
	gen := c.s.gen
	if c.s.spawn == spawnWhenBlocked {
		id, err := gen.NextID(noWait, core.Central)
		if !wouldBlock(err) {
			c.respond(true, msgid, m, t0, c.issued(uint64(id), nil, err))
			return
		}
	}
	c.wait(msgid, m, t0, func(ctx context.Context) answer {
		id, err := gen.NextID(ctx, core.Central)
		return c.issued(uint64(id), nil, err)
	})
}

// genIDs serves Vesta.GenIDs like genID; a call that must wait keeps the
// IDs its try issued and asks only for the rest.
func (c *conn) genIDs(msgid uint32, m int, t0 time.Time, n int) {
	gen := c.s.gen
	ids := make([]core.ID, 0, n)
	if c.s.spawn == spawnWhenBlocked {
		var err error
		ids, err = gen.AppendIDs(noWait, core.Central, ids, n)
		if !wouldBlock(err) {
			c.respond(true, msgid, m, t0, c.issued(0, ids, err))
			return
		}
	}
	c.wait(msgid, m, t0, func(ctx context.Context) answer {
		ids, err := gen.AppendIDs(ctx, core.Central, ids, n-len(ids))
		return c.issued(0, ids, err)
	})
}

// spawnMode says how issuing calls are served. Only the first is for
// use; the others exist for the benchmark that measures why.
type spawnMode int

const (
	// spawnWhenBlocked tries inline first and moves to a goroutine only a
	// call that must wait.
	spawnWhenBlocked spawnMode = iota
	// spawnAlways serves every issuing call on a goroutine of its own,
	// which writes its answer unless the read loop is about to.
	spawnAlways
	// spawnBatched serves every issuing call on a goroutine of its own,
	// and the read loop waits for those of its batch before writing, so
	// answers are written as inline ones are.
	spawnBatched
)

// wait serves fn, a call that may wait for the generator, on a goroutine
// of its own, or refuses it when MaxInFlight calls of the connection
// already wait.
func (c *conn) wait(msgid uint32, m int, t0 time.Time, fn func(context.Context) answer) {
	if c.s.spawn == spawnBatched {
		c.batch.Add(1)
		go func() {
			defer c.batch.Done()
			c.respond(true, msgid, m, t0, fn(c.ctx))
		}()
		return
	}
	if max := c.s.cfg.MaxInFlight; int(c.waiting.Load()) >= max {
		werr := wire.Errorf(wire.Unavailable, "%d calls of this connection already wait for the generator", max)
		c.respond(true, msgid, m, t0, answer{err: werr})
		return
	}
	c.waiting.Add(1) // only the read loop adds, so the bound holds
	c.calls.Add(1)
	go func() {
		defer c.calls.Done()
		c.respond(false, msgid, m, t0, fn(c.ctx))
		c.waiting.Add(-1)
	}()
}

// issued is the answer of an issuing call: its ID or IDs, counted, or its
// error, mapped.
func (c *conn) issued(id uint64, ids []core.ID, err error) answer {
	if err != nil {
		return answer{err: c.genError(err)}
	}
	if ids == nil {
		c.count(1)
		return answer{id: id}
	}
	c.count(len(ids))
	return answer{value: ids}
}

func (c *conn) count(n int) {
	if c.s.met != nil {
		c.s.met.issued.Add(float64(n))
	}
}

// genError maps an error of the generator or codec, logging the unexpected.
func (c *conn) genError(err error) *wire.Error {
	werr := wire.ErrorOf(err)
	if werr.Code == wire.Internal {
		c.s.log.Error("central: call failed", "err", err)
	}
	return werr
}

// argError is the answer to params that do not decode.
func (c *conn) argError(err error) answer {
	var werr *wire.Error
	if errors.As(err, &werr) {
		return answer{err: werr}
	}
	return answer{err: c.genError(err)}
}

// info describes what the server issues; the machine ID may change while
// it runs (a lease moved to another ID), so it is read on every call.
func (s *Server) info() wire.Info {
	return wire.Info{
		Layout:   s.gen.Layout().String(),
		Epoch:    wire.FormatEpoch(s.gen.Codec().Epoch()),
		Type:     uint64(s.gen.Type()),
		Machine:  uint64(s.gen.Machine()),
		Method:   uint64(core.Central),
		Version:  uint64(s.gen.Version()),
		MaxBatch: uint64(s.cfg.MaxBatch),
	}
}
