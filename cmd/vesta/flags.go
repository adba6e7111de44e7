package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"github.com/vesta-go/vesta/core"
)

// idFlags are the layout flags shared by gen, explain and make.
type idFlags struct {
	layout, typ, epoch string
}

func (f *idFlags) register(fs *pflag.FlagSet, withType bool) {
	fs.StringVar(&f.layout, "layout", "sorted", "ID layout: sorted, vesta or leaf")
	fs.StringVar(&f.epoch, "epoch", "", "epoch as RFC 3339; empty = the layout's own")
	if withType {
		fs.StringVar(&f.typ, "type", "max-peak", "ID type: max-peak, min-granularity, 0 or 1 (leaf: min-granularity only, its default)")
	}
}

func (f *idFlags) codec() (core.Codec, error) {
	layout, err := core.ParseLayout(f.layout)
	if err != nil {
		return core.Codec{}, usage("--layout", err)
	}
	var epoch time.Time
	if f.epoch != "" {
		if epoch, err = time.Parse(time.RFC3339Nano, f.epoch); err != nil {
			return core.Codec{}, fmt.Errorf("%w: --epoch %q is not an RFC 3339 instant such as 2025-01-01T00:00:00Z", errUsage, f.epoch)
		}
	}
	c, err := core.NewCodec(layout, epoch)
	if err != nil {
		return core.Codec{}, usage("--epoch", err)
	}
	return c, nil
}

// idType is --type; unset with the leaf layout, milliseconds (Leaf's only
// type), as conf.Load does for id.type.
func (f *idFlags) idType(fs *pflag.FlagSet, layout core.Layout) (core.Type, error) {
	if layout == core.Leaf && !fs.Changed("type") {
		return core.MinGranularity, nil
	}
	t, err := core.ParseType(f.typ)
	if err != nil {
		return 0, usage("--type", err)
	}
	return t, nil
}

// usage names the flag in err and makes it a usage error.
func usage(flag string, err error) error {
	return fmt.Errorf("%w: %s: %w", errUsage, flag, err)
}

// parseUint parses a flag's unsigned decimal value in 0-max.
func parseUint(flag, s string, max uint64) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > max {
		return 0, fmt.Errorf("%w: %s %q; want an unsigned integer 0-%d", errUsage, flag, s, max)
	}
	return v, nil
}
