package central

import (
	"context"
	"errors"
	"time"

	"github.com/vesta-go/vesta/api"
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
	err   *api.Error
	id    uint64
	value any  // nil: the result is id
	take  bool // with a nil value: the result is TakeIDs' of the one ID id
}

// call serves one request; every path answers it exactly once.
func (c *conn) call(req wire.Request, t0 time.Time) {
	m := procIndex(req.Procedure)
	switch req.Procedure {
	case wire.ProcGenID:
		if err := wire.DecodeParams(req.Params, nil); err != nil {
			c.respond(true, req.MsgID, m, t0, c.argError(err))
			return
		}
		c.genID(req.MsgID, m, t0)
	case wire.ProcGenIDs:
		var p wire.GenIDsParams
		if n, ok := c.batchCount(req, m, t0, &p, &p.Count); ok {
			c.genIDs(req.MsgID, m, t0, n)
		}
	case wire.ProcNextSeq, wire.ProcNextSeqs: // see seq.go
		c.nextSeq(req, m, t0)
	case wire.ProcHolder: // holder.go
		c.holder(req, m, t0)
	case wire.ProcTakeIDs:
		var p wire.TakeIDsParams
		if n, ok := c.batchCount(req, m, t0, &p, &p.Count); ok {
			c.respond(true, req.MsgID, m, t0, c.takeIDs(n, p.Singles == 1))
		}
	default:
		c.respond(true, req.MsgID, m, t0, c.compute(req))
	}
}

// batchCount decodes the params of a batch call into p, whose count
// field is count, and checks it against MaxBatch. When either fails it
// answers the call and reports false.
func (c *conn) batchCount(req wire.Request, m int, t0 time.Time, p any, count *uint64) (int, bool) {
	if err := wire.DecodeParams(req.Params, p); err != nil {
		c.respond(true, req.MsgID, m, t0, c.argError(err))
		return 0, false
	}
	if *count < 1 || *count > uint64(c.s.cfg.MaxBatch) {
		werr := api.Errorf(api.InvalidArgument, "count %d; want 1-%d", *count, c.s.cfg.MaxBatch)
		c.respond(true, req.MsgID, m, t0, answer{err: werr})
		return 0, false
	}
	return int(*count), true
}

// compute serves the procedures that never wait.
func (c *conn) compute(req wire.Request) answer {
	gen := c.s.gen
	switch req.Procedure {
	case wire.ProcExpID:
		var p wire.ExpIDParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			return c.argError(err)
		}
		return answer{value: wire.ExplanationOf(gen.Codec().Explain(core.ID(p.ID)))}

	case wire.ProcMakeID:
		var p wire.MakeIDParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			return c.argError(err)
		}
		id, err := gen.Codec().Make(p.Partial().Fill(gen.Own(core.Central)))
		if err != nil {
			return answer{err: c.genError(err)}
		}
		return answer{id: uint64(id)}

	case wire.ProcTransTime:
		var p wire.TransTimeParams
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			return c.argError(err)
		}
		t := gen.Type()
		if p.Type != nil { // a time of the other type, as REST's transtime takes
			if *p.Type > uint64(core.MinGranularity) {
				return c.argError(api.Errorf(api.InvalidArgument, "type: %d out of range 0-1", *p.Type))
			}
			t = core.Type(*p.Type)
		}
		instant, err := gen.Codec().TransTime(t, p.Time)
		if err != nil {
			return answer{err: c.genError(err)}
		}
		return answer{value: wire.TransTimeResultOf(t, instant)}

	case wire.ProcInfo:
		if err := wire.DecodeParams(req.Params, nil); err != nil {
			return c.argError(err)
		}
		return answer{value: c.s.info()}

	case wire.ProcMask, wire.ProcUnmask: // mask.go
		return c.maskCall(req)
	}
	return answer{err: api.Errorf(api.InvalidArgument, "unknown method %q", req.Procedure)}
}

// genID serves Vesta.GenID: inline when the generator need not wait, else
// through the server's Share.
func (c *conn) genID(msgid uint32, m int, t0 time.Time) {
	id, err := c.s.gen.NextID(noWait, core.Central)
	if !wouldBlock(err) {
		c.respond(true, msgid, m, t0, c.issued(uint64(id), nil, err))
		return
	}
	c.share(msgid, m, t0, 1)
}

// genIDs serves Vesta.GenIDs through the server's Share: at once when the
// pace allows, else waiting fairly.
func (c *conn) genIDs(msgid uint32, m int, t0 time.Time, n int) {
	c.share(msgid, m, t0, n)
}

// maxOwed is how many IDs one connection may be owed by waiting calls and
// their unwritten answers: a few of the largest batches.
func (c *conn) maxOwed() int { return 4 * c.s.cfg.MaxBatch }

// share issues n IDs (a GenID when n is 1) through the server's Share.
// What needs no wait is answered by the read loop. The rest waits, unless
// the connection is past its own bounds (MaxInFlight waiting calls, or
// maxOwed IDs owed to waiting calls and unwritten answers), when it is
// answered unavailable at once, without trying: such a connection
// pipelines past what it may be owed, or does not read its answers, and
// issuing for it could only drop IDs.
func (c *conn) share(msgid uint32, m int, t0 time.Time, n int) {
	c.pmu.Lock()
	mayWait := int(c.waiting.Load()) < c.s.cfg.MaxInFlight && c.owed+n <= c.maxOwed()
	if mayWait {
		c.owed += n // reserved before the call can finish on another goroutine
	}
	owed := c.owed
	c.pmu.Unlock()
	if !mayWait {
		c.s.ceil.Retried()
		werr := api.Errorf(api.Unavailable, "this connection has %d calls waiting (max_in_flight %d) and is owed %d IDs (max %d)",
			c.waiting.Load(), c.s.cfg.MaxInFlight, owed, c.maxOwed())
		c.respond(true, msgid, m, t0, answer{err: werr})
		return
	}
	c.waiting.Add(1)
	c.calls.Add(1)
	queuedAt := time.Now()
	done := func(ids []core.ID, err error) {
		c.s.ceil.Waited(time.Since(queuedAt))
		c.finish(waited{msgid: msgid, proc: m, t0: t0, n: n, a: c.result(n, ids, err)})
	}
	ids, queued, err := c.s.share.Append(c.ctx, c.key, core.Central, nil, n, done)
	if queued {
		return
	}
	c.pmu.Lock()
	c.owed -= n
	c.pmu.Unlock()
	c.waiting.Add(-1)
	c.calls.Done()
	if errors.Is(err, core.ErrBusy) {
		c.s.ceil.Retried()
	}
	c.respond(true, msgid, m, t0, c.result(n, ids, err))
}

// result is the answer of GenID (n 1) or GenIDs.
func (c *conn) result(n int, ids []core.ID, err error) answer {
	if err != nil || n != 1 {
		return c.issued(0, ids, err)
	}
	return c.issued(uint64(ids[0]), nil, nil)
}

// takeIDs serves Vesta.TakeIDs: what the Share gives at once, and when to
// ask again. It never waits. IDs issued before an error are answered, with
// a retry of a millisecond: the next call reports the error. Singles (a
// client's coalesced NextIDs) are issued as single IDs are: in one step,
// never paced (docs/design/ceiling.md), into the read loop's own buffer, which
// respond has encoded before the next call.
func (c *conn) takeIDs(n int, singles bool) answer {
	if n == 1 { // a client's NextID: the generator's fast path, no allocation
		id, err := c.s.gen.NextID(noWait, core.Central)
		if err == nil {
			c.count(1)
			return answer{id: uint64(id), take: true}
		}
		if !wouldBlock(err) {
			return answer{err: c.genError(err)}
		}
	}
	var ids []core.ID
	var retry time.Duration
	var err error
	if singles {
		ids, retry, err = c.s.gen.TryAppendIDs(core.Central, c.singles[:0], n)
		if cap(ids) <= keptSingles {
			c.singles = ids[:0]
		}
	} else {
		ids, retry, err = c.s.share.Take(core.Central, nil, n)
	}
	if err != nil && len(ids) == 0 {
		return answer{err: c.genError(err)}
	}
	c.count(len(ids))
	var ms uint64
	if len(ids) < n {
		ms = max(uint64((retry+time.Millisecond-1)/time.Millisecond), 1)
		c.s.ceil.Retried()
	}
	if ids == nil {
		ids = []core.ID{}
	}
	return answer{value: takeResult{ids: ids, retryAfterMS: ms}}
}

// keptSingles bounds the buffer a connection keeps for the IDs of
// coalesced single calls (8 KiB): a client's groups are about as large as
// its callers, and a peer asking for larger ones must not make every
// connection hold max_batch IDs.
const keptSingles = 1024

// takeResult is the answer of Vesta.TakeIDs, written by wire.AppendTakeIDsResponse.
type takeResult struct {
	ids          []core.ID
	retryAfterMS uint64
}

// waited is the answer of a call that waited, on its way to the peer.
type waited struct {
	msgid uint32
	proc  int
	t0    time.Time
	n     int // IDs it was owed, released once written
	a     answer
}

// finish queues the answer of a call that waited and makes sure a
// goroutine writes it. It never blocks on the peer: it runs on the Share's
// goroutine, which serves every connection.
func (c *conn) finish(w waited) {
	c.pmu.Lock()
	c.pending = append(c.pending, w)
	start := !c.flushing
	if start {
		c.flushing = true
		c.calls.Add(1) // while w's own count is held, so calls.Wait cannot have returned
	}
	c.pmu.Unlock()
	if start {
		go c.writePending()
	}
}

// writePending writes the answers of calls that waited until none is left;
// a peer that does not read holds it (and only it) up to WriteTimeout.
func (c *conn) writePending() {
	defer c.calls.Done()
	var batch []waited
	for {
		c.pmu.Lock()
		if len(c.pending) == 0 {
			c.flushing = false
			c.pmu.Unlock()
			return
		}
		batch, c.pending = c.pending, batch[:0]
		c.pmu.Unlock()
		owed := 0
		for i, w := range batch {
			c.respond(true, w.msgid, w.proc, w.t0, w.a) // batched: one write below
			owed += w.n
			batch[i] = waited{}
		}
		c.endBatch()
		c.pmu.Lock()
		c.owed -= owed
		c.pmu.Unlock()
		for range batch {
			c.waiting.Add(-1)
			c.calls.Done()
		}
	}
}

// wait serves fn, a call that may wait for the generator, on a goroutine
// of its own, or refuses it when MaxInFlight calls of the connection
// already wait.
func (c *conn) wait(msgid uint32, m int, t0 time.Time, fn func(context.Context) answer) {
	if max := c.s.cfg.MaxInFlight; int(c.waiting.Load()) >= max {
		werr := api.Errorf(api.Unavailable, "%d calls of this connection already wait for the generator", max)
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
		c.s.met.issued.Add(uint64(n))
	}
}

// genError maps an error of the generator or codec, logging the unexpected.
func (c *conn) genError(err error) *api.Error {
	werr := api.ErrorOf(err)
	if werr.Code == api.Internal {
		c.s.log.Error("central: call failed", "err", err)
	}
	return werr
}

// argError is the answer to params that do not decode.
func (c *conn) argError(err error) answer {
	var werr *api.Error
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
		TakeIDs:  1,
		Singles:  1,
	}
}
