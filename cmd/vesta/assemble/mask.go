package assemble

import (
	"errors"
	"log/slog"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/mask"
)

// minRejection is the share of random texts unmasking should refuse; below
// it the start-up log says how to raise it.
const minRejection = 0.98

// openMasks builds the servers' maskers from mask.key, checked on the
// generator's clock; nil, nil without a key (masking off, said in the
// log). The log says which slots hold keys (never the keys) and how many
// random texts unmasking refuses, and warns when fewer than 98%.
func openMasks(cfg conf.Config, clock core.Clock, log *slog.Logger) (*mask.Maskers, error) {
	ms, err := cfg.Masks(clock)
	switch {
	case errors.Is(err, mask.ErrNoKeys):
		log.Debug("masking off: no key (mask.key_file, VESTA_MASK_KEY_FILE or VESTA_MASK_KEY)")
		return nil, nil
	case err != nil:
		return nil, err
	}
	r := ms.Rejection()
	log.Info("masking on", "keys", ms.Keys().String(), "refused_random", mask.RejectionText(r))
	if r < minRejection {
		log.Warn("masking: unmasking refuses few random texts; set mask.not_before to when this deployment began issuing",
			"refused_random", mask.RejectionText(r), "layout", cfg.ID.Layout.String())
	}
	return ms, nil
}
