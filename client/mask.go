package client

import (
	"context"
	"fmt"
	"time"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// Masking (package mask): IDs turned into public texts that hide them, and
// back, by the servers with their key (Vesta.Mask, Vesta.Unmask), so that
// the key stays on the servers. There is no fallback: without a server
// there is no key. Calls are retried on another server as sequence calls
// are (seqServers), and split into pieces a server takes (its max_batch,
// and the default request size of 64 KiB).

// Pieces of one masking call: a request stays within a server's default
// max_request_bytes (64 KiB; an ID takes at most 9 bytes, a mask 31) and
// an answer within the client's response limit.
const (
	maskChunk   = 4096
	unmaskChunk = 1024
)

// Mask returns the masks of ids for tenant and kind, in order: texts that
// hide the IDs' time, machine and count, which only the servers' key turns
// back (Unmask). tenant "" is the deployment's one tenant; kind "" is no
// kind (and no prefix). Errors: a bad tenant or kind is a *api.Error with
// code invalid_argument; a server without a masking key answers not_found
// (errors.Is(err, &api.Error{Code: api.NotFound})); no server able to
// answer is ErrUnavailable.
func (c *Client) Mask(ctx context.Context, tenant, kind string, ids ...core.ID) ([]string, error) {
	out, err := inParts(ctx, c, len(ids), maskChunk, "Vesta.Mask: %d masks for %d IDs", ids,
		func(ctx context.Context, deadline time.Time, cn *conn, ids []core.ID, start, k int, got *[]string) error {
			piece := make([]uint64, k)
			for i := range piece {
				piece[i] = uint64(ids[start+i])
			}
			return cn.invoke(ctx, deadline, wire.ProcMask, &wire.MaskParams{IDs: piece, Tenant: tenant, Kind: kind}, got)
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Unmask returns the IDs of masks for tenant and kind, in order. A text
// that is no mask of the tenant and kind (mistyped, forged, another
// tenant's or kind's, of a retired key) fails the call with a *api.Error of
// code invalid_argument naming it (masks[i]) and why, decided by the
// server from the text alone, before any lookup of yours.
func (c *Client) Unmask(ctx context.Context, tenant, kind string, masks ...string) ([]core.ID, error) {
	got, err := inParts(ctx, c, len(masks), unmaskChunk, "Vesta.Unmask: %d IDs for %d masks", masks,
		func(ctx context.Context, deadline time.Time, cn *conn, masks []string, start, k int, got *[]uint64) error {
			if err := cn.invoke(ctx, deadline, wire.ProcUnmask, &wire.UnmaskParams{Masks: masks[start : start+k], Tenant: tenant, Kind: kind}, got); err != nil {
				return fmt.Errorf("client: Unmask of masks %d-%d: %w", start, start+k-1, err)
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	out := make([]core.ID, len(got))
	for i, v := range got {
		out[i] = core.ID(v)
	}
	return out, nil
}
