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

// call serves one request; every path answers it exactly once.
func (c *conn) call(req wire.Request, t0 time.Time) {
	m := methodIndex(req.Method)
	answer := func(werr *wire.Error, result any) { c.respond(true, req.MsgID, m, t0, werr, result) }
	gen := c.s.gen
	switch req.Method {
	case wire.MethodGenID:
		if err := wire.DecodeParams(req.Params, nil); err != nil {
			answer(c.argError(err), nil)
			return
		}
		genID := func(ctx context.Context) (any, error) {
			id, err := gen.NextID(ctx, core.Central)
			return uint64(id), err
		}
		c.issue(req.MsgID, m, t0, genID)

	case wire.MethodGenIDs:
		var p wire.GenIDsParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			answer(c.argError(err), nil)
			return
		}
		if p.Count < 1 || p.Count > uint64(c.s.cfg.MaxBatch) {
			answer(wire.Errorf(wire.InvalidArgument, "count %d; want 1-%d", p.Count, c.s.cfg.MaxBatch), nil)
			return
		}
		n := int(p.Count)
		ids := make([]core.ID, 0, n)
		genIDs := func(ctx context.Context) (any, error) {
			var err error
			ids, err = gen.AppendIDs(ctx, core.Central, ids, n-len(ids)) // after a try, the rest
			return ids, err
		}
		c.issue(req.MsgID, m, t0, genIDs)

	case wire.MethodExpID:
		var p wire.ExpIDParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			answer(c.argError(err), nil)
			return
		}
		answer(nil, wire.ExplanationOf(gen.Codec().Explain(core.ID(p.ID))))

	case wire.MethodMakeID:
		var p wire.MakeIDParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			answer(c.argError(err), nil)
			return
		}
		id, err := gen.Codec().Make(p.Partial().Fill(gen.Own(core.Central)))
		if err != nil {
			answer(c.genError(err), nil)
			return
		}
		answer(nil, uint64(id))

	case wire.MethodTransTime:
		var p wire.TransTimeParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			answer(c.argError(err), nil)
			return
		}
		instant, err := gen.Codec().TransTime(gen.Type(), p.Time)
		if err != nil {
			answer(c.genError(err), nil)
			return
		}
		answer(nil, wire.TransTimeResultOf(gen.Type(), instant))

	case wire.MethodInfo:
		if err := wire.DecodeParams(req.Params, nil); err != nil {
			answer(c.argError(err), nil)
			return
		}
		answer(nil, c.s.info())

	default:
		answer(wire.Errorf(wire.InvalidArgument, "unknown method %q", req.Method), nil)
	}
}

// issue runs fn, a call that issues IDs: first inline with noWait, then, if
// it must wait, on a goroutine of its own.
func (c *conn) issue(msgid uint32, m int, t0 time.Time, fn func(context.Context) (any, error)) {
	if !c.s.spawnAll {
		result, err := fn(noWait)
		if !wouldBlock(err) {
			c.respond(true, msgid, m, t0, c.issued(result, err), result)
			return
		}
	}
	if max := c.s.cfg.MaxInFlight; int(c.waiting.Load()) >= max {
		werr := wire.Errorf(wire.Unavailable, "%d calls of this connection already wait for the generator", max)
		c.respond(true, msgid, m, t0, werr, nil)
		return
	}
	c.waiting.Add(1) // only the read loop adds, so the bound holds
	c.calls.Add(1)
	go func() {
		defer c.calls.Done()
		result, err := fn(c.ctx)
		c.respond(false, msgid, m, t0, c.issued(result, err), result)
		c.waiting.Add(-1)
	}()
}

// issued counts the IDs of a successful call, or maps its error.
func (c *conn) issued(result any, err error) *wire.Error {
	if err != nil {
		return c.genError(err)
	}
	if c.s.met != nil {
		n := 1
		if ids, ok := result.([]core.ID); ok {
			n = len(ids)
		}
		c.s.met.issued.Add(float64(n))
	}
	return nil
}

// genError maps an error of the generator or codec, logging the unexpected.
func (c *conn) genError(err error) *wire.Error {
	werr := wireError(err)
	if werr.Code == wire.Internal {
		c.s.log.Error("central: call failed", "err", err)
	}
	return werr
}

// argError is the answer to params that do not decode.
func (c *conn) argError(err error) *wire.Error {
	var werr *wire.Error
	if errors.As(err, &werr) {
		return werr
	}
	return c.genError(err)
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
