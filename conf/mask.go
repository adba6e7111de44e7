package conf

import (
	"errors"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/mask"
)

// MaskConfig is the masking of IDs into public texts that hide them
// (package mask), served by `vesta serve` over RPC and REST and used by
// `vesta mask` and `vesta unmask`. Its key comes from a file or the
// environment, never from a flag, and is never printed or logged.
type MaskConfig struct {
	// Key is the key text (mask.ParseKeys): "slot N SECRET" lines, N 0 or
	// 1 and SECRET base64 of at least 16 random bytes, and "current N"
	// when both slots are set; in VESTA_MASK_KEY the lines may be
	// separated by ";". "" is no key: masking is off and its calls answer
	// so. Load fills it from KeyFile when that is set.
	Key Secret `koanf:"key"`
	// KeyFile holds the key text (read by Load); "" is none. Setting it
	// and Key is an error.
	KeyFile string `koanf:"key_file"`
	// NotBefore: unmasking refuses the IDs made before it
	// (mask.Check.NotBefore), which narrows what a random text can decode
	// to; set it to when the deployment began issuing. The zero Time (YAML
	// "") is the epoch.
	NotBefore time.Time `koanf:"not_before"`
}

// validateMask checks the key text and not_before; the check needs a valid
// id section, whose own errors come first.
func (c Config) validateMask(ck *checker) {
	if c.Mask.Key != "" {
		if _, err := mask.ParseKeys(c.Mask.Key.Reveal()); err != nil {
			ck.addErr("mask.key", err) // its messages name lines, never secrets
		}
	}
	if c.Mask.NotBefore.IsZero() {
		return
	}
	for _, e := range ck.errs {
		var ke *KeyError
		if errors.As(e, &ke) && hasAnyPrefix(ke.Key, []string{"id", "machine.embedded_range", "machine.server_range"}) {
			return // the check is built of them: their errors say what to fix
		}
	}
	if err := c.maskCheck().Validate(); err != nil {
		ck.addErr("mask.not_before", err)
	}
}

// maskCheck is MaskCheck without the checks.
func (c Config) maskCheck() mask.Check {
	cc := c.coreConfig()
	check, _ := mask.CheckOf(cc, c.Machine.Range(core.Embedded), c.Machine.Range(core.Central))
	check.NotBefore = c.Mask.NotBefore
	return check
}

// MaskCheck returns what unmasking holds an ID to: the id section's
// layout, epoch, type, version and max_borrow, machine.embedded_range and
// machine.server_range, and mask.not_before. Now is left nil (the
// clock). It validates c first.
func (c Config) MaskCheck() (mask.Check, error) {
	if err := c.Validate(); err != nil {
		return mask.Check{}, err
	}
	return c.maskCheck(), nil
}

// Masks returns the maskers of mask.key under MaskCheck read on clock
// (nil: the system clock), for servers and the CLI. Without a key the
// error, a *KeyError naming mask.key_file, matches mask.ErrNoKeys: masking
// is off. It validates c first.
func (c Config) Masks(clock core.Clock) (*mask.Maskers, error) {
	check, err := c.MaskCheck()
	if err != nil {
		return nil, err
	}
	if clock != nil {
		check.Now = clock.Now
	}
	if c.Mask.Key == "" {
		return nil, &KeyError{Key: "mask.key_file", err: mask.ErrNoKeys,
			Msg: "unset: masking needs a key, from a file (mask.key_file or VESTA_MASK_KEY_FILE) or the environment (VESTA_MASK_KEY); " +
				`a key file holds a line "slot 0 SECRET", SECRET 32 random bytes in base64 (openssl rand -base64 32)`}
	}
	keys, err := mask.ParseKeys(c.Mask.Key.Reveal())
	if err != nil {
		return nil, &KeyError{Key: "mask.key", Msg: err.Error(), err: err} // Validate passed it: not reached
	}
	return mask.NewMaskers(keys, check)
}
