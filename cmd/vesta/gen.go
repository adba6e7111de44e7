package main

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	vesta "github.com/vesta-go/vesta"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
)

// genBatch is how many IDs gen asks for at once: large enough that the
// issuer's cost vanishes next to formatting, small enough to stream.
const genBatch = 8192

func newGenCmd() *cobra.Command {
	var (
		n          string
		configFile string
	)
	cmd := &cobra.Command{
		Use:   "gen [-n N] [--machine M] [--layout L] [--type T] [--servers ADDR,...]",
		Short: "Issue N IDs, one unsigned decimal per line",
		Long: `Issue N IDs, one unsigned decimal per line. Without --servers they are
embedded IDs (method 0) from machine --machine (within the embedded range
0-923), with the time guard in --data-dir. With --servers they come through
the Go client from those central servers (method 1), falling back to embedded
machine --machine while none answers. There is no default machine ID: choose
one unique to this instance (--machine, machine.id or VESTA_MACHINE_ID), or
configure machine.providers (etcd, redis, k8s, iptable); without one gen refuses, as
two instances left on one default would issue the same IDs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			count, err := strconv.ParseUint(n, 10, 64)
			if err != nil || count == 0 || count > 1<<40 {
				return fmt.Errorf("%w: -n %q; want an integer 1-%d", errUsage, n, uint64(1)<<40)
			}
			loaded, err := conf.Load(conf.Options{File: configFile, Flags: cmd.Flags()})
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			cfg := loaded.Config
			var is vesta.Issuer
			if len(cfg.Client.Servers) > 0 {
				ccfg, err := cfg.ClientConfig()
				if err != nil {
					return usageIf(err)
				}
				ccfg.Logger = cfg.Logger(cmd.ErrOrStderr())
				if is, err = client.New(cmd.Context(), ccfg); err != nil {
					return usageIf(err)
				}
			} else {
				ecfg, err := cfg.Embed()
				if err != nil {
					return usageIf(err)
				}
				ecfg.Logger = cfg.Logger(cmd.ErrOrStderr())
				if is, err = embed.Open(cmd.Context(), ecfg); err != nil {
					return usageIf(err)
				}
			}
			return errors.Join(writeIDs(cmd, is, count), is.Close())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&n, "count", "n", "1", "how many IDs to issue")
	fs.StringVar(&configFile, "config", "", "YAML configuration file (default $"+conf.EnvFile+")")
	conf.AddFlags(fs, "machine", "layout", "type", "epoch", "data-dir", "servers", "log-level")
	return cmd
}

// usageIf makes configuration mistakes (a machine ID outside its range, a
// bad field, settings unlike the fleet record's) usage errors, and leaves
// run-time failures alone.
func usageIf(err error) error {
	for _, sentinel := range []error{conf.ErrConfig, embed.ErrConfig, client.ErrConfig, machineid.ErrConfig, machineid.ErrRange, machineid.ErrNoMachineID, machineid.ErrFleet} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	return err
}

func writeIDs(cmd *cobra.Command, is vesta.Issuer, count uint64) error {
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	for count > 0 {
		k := min(count, genBatch)
		ids, err := is.NextIDs(cmd.Context(), int(k))
		if err != nil {
			return errors.Join(err, w.Flush())
		}
		for _, id := range ids {
			b := strconv.AppendUint(w.AvailableBuffer(), uint64(id), 10)
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
		}
		count -= k
	}
	return w.Flush()
}
