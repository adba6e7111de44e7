package central

import (
	"fmt"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// errMaskOff answers the masking calls of a server without a key.
var errMaskOff = api.Errorf(api.NotFound, "masking is off on this server: it has no key (mask.key_file, VESTA_MASK_KEY_FILE or VESTA_MASK_KEY)")

// maskCall serves Vesta.Mask and Vesta.Unmask: arithmetic, answered
// inline. Unmask fails the call at the first text that is no mask of the
// tenant and kind, naming its index.
func (c *conn) maskCall(req wire.Request) answer {
	var p wire.UnmaskParams
	var ids []uint64
	unmask := req.Procedure == wire.ProcUnmask
	if unmask {
		if err := wire.DecodeParams(req.Params, &p); err != nil {
			return c.argError(err)
		}
	} else {
		var mp wire.MaskParams
		if err := wire.DecodeParams(req.Params, &mp); err != nil {
			return c.argError(err)
		}
		ids, p.Tenant, p.Kind = mp.IDs, mp.Tenant, mp.Kind
	}
	if c.s.cfg.Masks == nil {
		return answer{err: errMaskOff}
	}
	if n := len(p.Masks) + len(ids); n < 1 || n > c.s.cfg.MaxBatch {
		what := "ids"
		if unmask {
			what = "masks"
		}
		return answer{err: api.Errorf(api.InvalidArgument, "%s: %d given; want 1-%d", what, n, c.s.cfg.MaxBatch)}
	}
	m, err := c.s.cfg.Masks.Masker(p.Tenant, p.Kind)
	if err != nil {
		return answer{err: api.ErrorOf(err)}
	}
	if !unmask {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = m.Mask(core.ID(id))
		}
		return answer{value: out}
	}
	out := make([]uint64, len(p.Masks))
	for i, text := range p.Masks {
		id, err := m.Unmask(text)
		if err != nil {
			return answer{err: api.ErrorOf(fmt.Errorf("masks[%d]: %w", i, err))}
		}
		out[i] = uint64(id)
	}
	return answer{value: out}
}
