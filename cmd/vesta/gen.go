package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	vesta "github.com/vesta-go/vesta"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/buildinfo"
	"github.com/vesta-go/vesta/machineid"
)

// genBatch is how many IDs gen asks for at once: large enough that the
// issuer's cost vanishes next to formatting, small enough to stream.
const genBatch = 8192

func newGenCmd() *cobra.Command {
	var (
		n, configFile   string
		asJSON, verbose bool
	)
	stateDir := conf.StateDir(nil)
	cmd := &cobra.Command{
		Use:   "gen [-n N] [--machine M] [--layout L] [--type T] [--servers ADDR,...] [--json] [-v]",
		Short: "Issue N IDs, one unsigned decimal per line",
		Long: `Issue N IDs, one unsigned decimal per line. Without --servers they are
embedded IDs (method 0) from machine --machine (within the embedded range
0-923). With --servers they come through the Go client from those central
servers (method 1), falling back to embedded machine --machine while none
answers. There is no default machine ID: choose one unique to this instance
(--machine, machine.id or VESTA_MACHINE_ID), or configure machine.providers
(etcd, redis, k8s, iptable); without one gen refuses, as two instances left on
one default would issue the same IDs.

The time guard (the mark that keeps a restart with the clock set back from
issuing IDs again) is kept in time_guard.dir (--data-dir); unset, in
$XDG_STATE_HOME/vesta (here ` + orNone(stateDir) + `). A ./vesta-data
holding marks (the default of earlier versions) is used instead while that
directory has none, with a warning. gen prints only IDs and warnings; -v
also says which config file and time guard directory it uses.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			count, err := strconv.ParseUint(n, 10, 64)
			if err != nil || count == 0 || count > 1<<40 {
				return fmt.Errorf("%w: -n %q; want an integer 1-%d", errUsage, n, uint64(1)<<40)
			}
			loaded, err := loadConfig(cmd, configFile, true)
			if err != nil {
				return err
			}
			cfg := loaded.Config
			// Quiet: IDs go to stdout, and stderr has only what needs a
			// look; -v says more, down to log.level, and a --log-level
			// on the command line is taken as it is.
			level := slog.LevelWarn
			switch {
			case verbose:
				level = min(cfg.Log.SlogLevel(), slog.LevelInfo)
			case cmd.Flags().Changed("log-level"):
				level = cfg.Log.SlogLevel()
			}
			log := newLogger(cfg, cmd.ErrOrStderr(), level)
			// Embedded IDs, or the client's embedded fallback: a machine ID
			// of the embedded range and a time guard.
			if len(cfg.Client.Servers) == 0 || !cfg.Client.NoFallback {
				if err := cfg.RequireMachineIn(core.Embedded); err != nil {
					return fmt.Errorf("%w: %w", errConfig, loaded.Attribute(err))
				}
				if cfg.TimeGuard.DataDir, err = genDataDir(loaded, stateDir, log); err != nil {
					return err
				}
			}
			log.Info("gen: issuing", "version", buildinfo.Read().String(), "config", fileOf(loaded), "time_guard.dir", orNone(cfg.TimeGuard.DataDir))
			is, err := openIssuer(cmd.Context(), cfg, log)
			if err != nil {
				return configIf(loaded, err)
			}
			return errors.Join(writeIDs(cmd, is, count, asJSON), is.Close())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&n, "count", "n", "1", "how many IDs to issue")
	addConfigFlag(fs, &configFile)
	fs.BoolVar(&asJSON, "json", false, `print one JSON object per ID: {"id": "decimal"}`)
	fs.BoolVarP(&verbose, "verbose", "v", false, "also log the config file, the time guard directory and the machine ID (info, or log.level debug)")
	conf.AddFlags(fs, "machine", "layout", "type", "epoch", "data-dir", "servers", "log-level")
	dd := fs.Lookup("data-dir")
	dd.DefValue, dd.Usage = stateDir, `directory of the time guard's mark ("" = none; $XDG_STATE_HOME/vesta)`
	ll := fs.Lookup("log-level")
	ll.DefValue, ll.Usage = "warn", "log level: debug, info, warn or error (gen logs warnings only, without -v or this flag)"
	return cmd
}

// openIssuer opens gen's issuer, logging to log: the Go client of
// client.servers (with its embedded fallback) when there are servers,
// else an embedded issuer.
func openIssuer(ctx context.Context, cfg conf.Config, log *slog.Logger) (vesta.Issuer, error) {
	if len(cfg.Client.Servers) == 0 {
		ecfg, err := cfg.EmbedConfig()
		if err != nil {
			return nil, err
		}
		ecfg.Logger = log
		return opened(embed.Open(ctx, ecfg))
	}
	ccfg, err := cfg.ClientConfig()
	if err != nil {
		return nil, err
	}
	ccfg.Logger = log
	return opened(client.New(ctx, ccfg))
}

// opened is is as an Issuer, or nil with err: never a nil pointer in a
// non-nil Issuer.
func opened[T vesta.Issuer](is T, err error) (vesta.Issuer, error) {
	if err != nil {
		return nil, err
	}
	return is, nil
}

func orNone(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// legacyDataDir is where gen kept its time guard before it moved to the
// state directory, relative to where it ran: time_guard.dir's default.
var legacyDataDir = conf.DefaultConfig().TimeGuard.DataDir

// genDataDir is gen's time guard directory: time_guard.dir when a source
// set it; else stateDir, the user's state directory. The mark of a run
// may lie up to id.max_borrow ahead of the clock, so a run that started
// on an empty directory right after one that ended on another could
// issue its IDs again: a ./vesta-data holding a mark (of this machine ID
// when it is fixed, else any) while stateDir holds none is used, with a
// warning (moving the files there ends it); both holding one is refused,
// as gen cannot tell which is the one in use. Without HOME or
// XDG_STATE_HOME it is ./vesta-data, as before.
func genDataDir(l conf.Loaded, stateDir string, log *slog.Logger) (string, error) {
	if l.Source("time_guard.dir") != "" {
		return l.Config.TimeGuard.DataDir, nil
	}
	if stateDir == "" {
		return legacyDataDir, nil
	}
	mark := "machine-*.json"
	if m := l.Config.Machine; m.ID != nil && len(m.Providers) > 0 && m.Providers[0] == machineid.ProviderStatic {
		mark = "machine-" + strconv.Itoa(*m.ID) + ".json"
	}
	legacy, err := hasMark(legacyDataDir, mark)
	if err != nil || !legacy {
		return stateDir, err
	}
	current, err := hasMark(stateDir, mark)
	if err != nil {
		return "", err
	}
	if current {
		return "", fmt.Errorf("%w: time_guard.dir: unset, and both %s (the default of earlier versions) and %s (the default now) hold a time guard mark (%s); "+
			"choose the one in use with --data-dir or VESTA_TIME_GUARD_DIR, or move %s's files into %s keeping, of two machine-N.json, the one with the later mark",
			errConfig, legacyDataDir, stateDir, mark, legacyDataDir, stateDir)
	}
	log.Warn("time guard: using "+legacyDataDir+", the default of earlier versions, which holds a mark where "+stateDir+" has none; "+
		"move its files there (mkdir -p "+stateDir+" && mv "+legacyDataDir+"/* "+stateDir+"/), or set --data-dir, to silence this",
		"time_guard.dir", legacyDataDir)
	return legacyDataDir, nil
}

// hasMark reports whether dir holds a time guard mark matching pattern.
func hasMark(dir, pattern string) (bool, error) {
	m, err := fs.Glob(os.DirFS(dir), pattern) // a missing dir holds none
	if err != nil {
		return false, fmt.Errorf("time guard directory %s: %w", dir, err)
	}
	return len(m) > 0, nil
}

// configIf makes configuration mistakes (a machine ID outside its range,
// a bad field, settings unlike the fleet record's) configuration errors
// naming where the value came from, and leaves run-time failures alone.
func configIf(l conf.Loaded, err error) error {
	for _, sentinel := range []error{conf.ErrConfig, embed.ErrConfig, client.ErrConfig, machineid.ErrConfig, machineid.ErrRange, machineid.ErrNoMachineID, machineid.ErrFleet} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("%w: %w", errConfig, l.Attribute(err))
		}
	}
	return err
}

func writeIDs(cmd *cobra.Command, is vesta.Issuer, count uint64, asJSON bool) error {
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	for count > 0 {
		k := min(count, genBatch)
		ids, err := is.NextIDs(cmd.Context(), int(k))
		if err != nil {
			return errors.Join(err, w.Flush())
		}
		for _, id := range ids {
			b := w.AvailableBuffer()
			if asJSON {
				b = append(b, `{"id":"`...)
			}
			b = strconv.AppendUint(b, uint64(id), 10)
			if asJSON {
				b = append(b, `"}`...)
			}
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
		}
		count -= k
	}
	return w.Flush()
}
