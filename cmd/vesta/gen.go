package main

import (
	"bufio"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
)

// genBatch is how many IDs gen reserves per call: large enough that the
// generator's cost vanishes next to formatting, small enough to stream.
const genBatch = 8192

func newGenCmd() *cobra.Command {
	var (
		ids     idFlags
		n       string
		machine string
		dataDir string
	)
	cmd := &cobra.Command{
		Use:   "gen [-n N] [--machine M] [--layout L] [--type T]",
		Short: "Issue N embedded IDs (method 0), one unsigned decimal per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			count, err := parseUint("-n", n, 1<<40)
			if err != nil {
				return err
			}
			if count == 0 {
				return fmt.Errorf("%w: -n 0; want at least 1", errUsage)
			}
			m, err := parseUint("--machine", machine, uint64(core.MaxMachine))
			if err != nil {
				return err
			}
			if err := machineid.DefaultEmbeddedRange.Check(core.MachineID(m), "embedded"); err != nil {
				return usage("--machine", err)
			}
			codec, err := ids.codec()
			if err != nil {
				return err
			}
			typ, err := ids.idType()
			if err != nil {
				return err
			}
			cfg := embed.DefaultConfig()
			cfg.Layout, cfg.Type, cfg.Epoch, cfg.Machine = codec.Layout(), typ, codec.Epoch(), core.MachineID(m)
			cfg.DataDir = dataDir
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			is, err := embed.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			werr := writeIDs(cmd, is, count)
			return joinErr(werr, is.Close())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&n, "count", "n", "1", "how many IDs to issue")
	fs.StringVar(&machine, "machine", "0", "machine ID, within the embedded range 0-923")
	fs.StringVar(&dataDir, "data-dir", "./vesta-data", `time guard directory ("" = off: a restart with the clock set back could re-issue IDs)`)
	ids.register(fs, true)
	return cmd
}

func writeIDs(cmd *cobra.Command, is *embed.Issuer, count uint64) error {
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	buf := make([]core.ID, 0, genBatch)
	for count > 0 {
		k := min(count, genBatch)
		var err error
		buf, err = is.Generator().AppendIDs(cmd.Context(), core.Embedded, buf[:0], int(k))
		if err != nil {
			return joinErr(err, w.Flush())
		}
		for _, id := range buf {
			b := strconv.AppendUint(w.AvailableBuffer(), uint64(id), 10)
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
		}
		count -= k
	}
	return w.Flush()
}
