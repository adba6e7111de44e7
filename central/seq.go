package central

import (
	"context"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
)

// nextSeq serves Vesta.NextSeq and Vesta.NextSeqs. A call whose tag's
// buffers hold numbers is answered inline, as Vesta.GenID is; one that must
// wait for the store (the buffers ran out, or the tag is new to this
// server) moves to a goroutine of its own, bounded by MaxInFlight.
func (c *conn) nextSeq(req wire.Request, m int, t0 time.Time) {
	var p wire.NextSeqsParams
	one := req.Procedure == wire.ProcNextSeq
	if one {
		var p1 wire.NextSeqParams
		if err := wire.DecodeParams(req.Params, &p1); err != nil {
			c.respond(true, req.MsgID, m, t0, c.argError(err))
			return
		}
		p = wire.NextSeqsParams{Tag: p1.Tag, Count: 1}
	} else if _, ok := c.batchCount(req, m, t0, &p, &p.Count); !ok {
		return
	}
	seqs := c.s.cfg.Sequences
	if seqs == nil {
		werr := api.Errorf(api.NotFound, "tag %q: segment sequences are off on this server (segment.store)", p.Tag)
		c.respond(true, req.MsgID, m, t0, answer{err: werr})
		return
	}
	issue := func(ctx context.Context) (answer, error) {
		if one {
			v, err := seqs.Next(ctx, p.Tag)
			if err != nil {
				return answer{}, err
			}
			return answer{value: v}, nil
		}
		vs, err := seqs.NextN(ctx, p.Tag, int(p.Count))
		if err != nil {
			return answer{}, err
		}
		return answer{value: vs}, nil
	}
	// Inline only for tags this server has issued before: for a tag new to
	// the issuer the lookup itself asks the store.
	if _, known := c.s.seqTags.Load(p.Tag); known {
		a, err := issue(noWait)
		if !wouldBlock(err) {
			c.respond(true, req.MsgID, m, t0, c.seqAnswer(p.Tag, a, err))
			return
		}
	}
	c.wait(req.MsgID, m, t0, func(ctx context.Context) answer {
		a, err := issue(ctx)
		return c.seqAnswer(p.Tag, a, err)
	})
}

// seqAnswer is the answer of a sequence call: its numbers, or its error,
// mapped. A tag that issued is remembered as one that may be served inline;
// only tags of the store get there, so the set is bounded by the store.
func (c *conn) seqAnswer(tag string, a answer, err error) answer {
	if err != nil {
		return answer{err: c.seqError(tag, err)}
	}
	if _, known := c.s.seqTags.Load(tag); !known {
		c.s.seqTags.Store(tag, struct{}{})
	}
	return a
}

// seqError is the answer to a failed sequence call, by the one table
// (api.ErrorOf); an internal error is logged, as no caller sees it.
func (c *conn) seqError(tag string, err error) *api.Error {
	we := api.ErrorOf(err)
	if we.Code == api.Internal {
		c.s.log.Error("central: sequence call failed", "tag", tag, "err", err)
	}
	return we
}
