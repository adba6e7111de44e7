package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/core"
)

func newMakeCmd() *cobra.Command {
	var (
		ids                                  idFlags
		timeS, seq, machine, method, version string
		asJSON                               bool
	)
	cmd := &cobra.Command{
		Use:   "make --time T --seq S [--machine M] [--method M] [--type T] [--version V] [--layout L] [--json]",
		Short: "Build an ID from named fields (Vesta's makeId)",
		Long: `Build an ID from named fields. --time is the raw time field (units since the
epoch) or an RFC 3339 instant. Fields left out take an embedded issuer's own
values: machine 0, method 0 (embedded), type max-peak, version 0.

With --layout leaf the ID is Leaf's snowflake: --time in milliseconds since
Leaf's epoch (2010-11-04T01:42:54.657Z), --machine the worker ID, --seq 0-4095;
leaf IDs have no method bits, so --method is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := cmd.Flags()
			for _, req := range []string{"time", "seq"} {
				if !fs.Changed(req) {
					return fmt.Errorf("%w: --%s is required", errUsage, req)
				}
			}
			codec, err := ids.codec()
			if err != nil {
				return err
			}
			typ, err := ids.idType(fs, codec.Layout())
			if err != nil {
				return err
			}
			if codec.Layout() == core.Leaf && fs.Changed("method") {
				return fmt.Errorf("%w: --method: the leaf layout has no method bits; leave --method out", errUsage)
			}
			f := core.Fields{Type: uint64(typ)}
			if f.Time, err = parseTimeField(codec, typ, timeS); err != nil {
				return err
			}
			// The widest field of any layout; Make checks the layout's own.
			if f.Seq, err = parseUint("--seq", seq, 1<<20-1); err != nil {
				return err
			}
			if f.Machine, err = parseUint("--machine", machine, uint64(core.MaxMachine)); err != nil {
				return err
			}
			m, err := core.ParseMethod(method)
			if err != nil {
				return usage("--method", err)
			}
			f.Method = uint64(m)
			if f.Version, err = parseUint("--version", version, 1); err != nil {
				return err
			}
			id, err := codec.Make(f)
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), codec.Explain(id))
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), id)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&timeS, "time", "", "time field: units since the epoch, or an RFC 3339 instant (required)")
	fs.StringVar(&seq, "seq", "", "sequence number (required)")
	fs.StringVar(&machine, "machine", "0", "machine ID 0-1023")
	fs.StringVar(&method, "method", "embedded", "method: embedded, central, rest, reserved or 0-3")
	fs.StringVar(&version, "version", "0", "version bit 0 or 1")
	ids.register(fs, true)
	fs.BoolVar(&asJSON, "json", false, "print the ID's fields as explain --json does")
	return cmd
}

// parseTimeField takes raw units or an RFC 3339 instant.
func parseTimeField(codec core.Codec, typ core.Type, s string) (uint64, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		u, err := codec.Units(typ, t)
		if err != nil {
			return 0, usage("--time", err)
		}
		return u, nil
	}
	return parseUint("--time", s, 1<<41-1)
}
