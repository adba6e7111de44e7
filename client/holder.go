package client

import (
	"context"
	"fmt"
	"time"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// Holder is the answer of Client.Holder: the keys of REST's holder object
// (GET /v1/ids/{id}?holder=true), flags as 0 or 1, times RFC 3339 UTC.
type Holder = wire.Holder

// Hold is one hold in a Holder.
type Hold = wire.Hold

// Holder asks a server which hold issued id (Vesta.Holder): the hold of
// its machine ID whose span contains its instant, from the lease store's
// hold history, or why none is known (Reason: too old for the history, a
// fixed ID, a server that keeps none). Conflict 1 means two holds cover
// it: a broken promise of uniqueness, which the server counts and logs.
// Errors: a history the store cannot read is a *api.Error of code
// unavailable naming the machine ID (errors.Is(err, &api.Error{Code:
// api.Unavailable}), wrapped in ErrUnavailable once every server tried
// said so); no server able to answer is ErrUnavailable. Display and
// detection only: nothing should decide anything on the answer. Calls are
// retried on another server as sequence calls are.
func (c *Client) Holder(ctx context.Context, id core.ID) (Holder, error) {
	var h Holder
	err := c.seqServers(ctx, func(ctx context.Context, deadline time.Time, cn *conn) error {
		return cn.invoke(ctx, deadline, wire.ProcHolder, &wire.HolderParams{ID: uint64(id)}, &h)
	})
	if err != nil {
		return Holder{}, fmt.Errorf("client: Holder of %d: %w", id, err)
	}
	return h, nil
}
