package central

import (
	"context"
	"errors"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// holderTimeout bounds one read of a hold history, as REST's.
const holderTimeout = 1500 * time.Millisecond

// holder serves Vesta.Holder: the hold that covers the ID's instant, read
// from the history on a goroutine of its own (bounded by MaxInFlight, as
// a call that waits is), never on the read loop: the read loop goes on
// serving the IDs of the connection while the store answers, and the
// reads are those of the Holders' cache, one per machine ID a second.
func (c *conn) holder(req wire.Request, m int, t0 time.Time) {
	var p wire.HolderParams
	if err := wire.DecodeParams(req.Params, &p); err != nil {
		c.respond(true, req.MsgID, m, t0, c.argError(err))
		return
	}
	e := c.s.gen.Codec().Explain(core.ID(p.ID))
	if c.s.cfg.Holders == nil { // this server keeps no history: nothing to wait for
		h, err := c.s.cfg.Holders.Of(context.Background(), e, 0, time.Now())
		if err != nil {
			c.respond(true, req.MsgID, m, t0, answer{err: api.ErrorOf(err)})
			return
		}
		c.respond(true, req.MsgID, m, t0, answer{value: wire.HolderOf(h)})
		return
	}
	c.wait(req.MsgID, m, t0, func(ctx context.Context) answer {
		h, err := c.s.cfg.Holders.Of(ctx, e, holderTimeout, time.Now())
		if err != nil {
			var ae *api.Error
			if !errors.As(err, &ae) {
				ae = api.ErrorOf(err)
			}
			return answer{err: ae}
		}
		if h.Conflict {
			if c.s.met != nil {
				c.s.met.conflicts.Inc()
			}
			c.s.log.Error("central: an ID lies inside two holds of its machine ID: two holders could both have issued it",
				"id", e.ID, "machine", e.Machine, "reason", h.Reason)
		}
		return answer{value: wire.HolderOf(h)}
	})
}
