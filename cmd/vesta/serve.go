package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/cmd/vesta/assemble"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/internal/buildinfo"
)

// shutdownTimeout bounds a graceful stop: in-flight calls are answered
// within it, or their connections are closed.
const shutdownTimeout = 10 * time.Second

func newServeCmd() *cobra.Command {
	var configFile string
	cmd := &cobra.Command{
		Use:   "serve [--config FILE]",
		Short: "Run the central MessagePack-RPC server and the REST server on one generator",
		Long: `Run the central MessagePack-RPC server (central.listen, default 127.0.0.1:7070)
and the REST server (rest.listen, default 127.0.0.1:7080) on one generator.
Configuration comes from the YAML file (--config, else VESTA_CONFIG, else the
first of ./vesta.yaml, $XDG_CONFIG_HOME/vesta/vesta.yaml, /etc/vesta/vesta.yaml;
--config '' reads none), then VESTA_* variables, then flags; vesta config check
judges it as serve does, before any port is opened. There is no default machine ID: choose one unique to
this server from the server range 924-1023 (--machine, machine.id or
VESTA_MACHINE_ID), or set machine.providers to etcd or redis (a lease), k8s (the
StatefulSet ordinal) or iptable (machine.ip_table); without one it refuses to
start, as two servers left on one default would issue the same IDs. The rest
has defaults: sorted layout, max-peak, time guard in ./vesta-data. With
segment.store set it also serves segment sequences (Vesta.NextSeq,
GET /v1/seq/{tag} and Leaf's /api/segment/get/{key}). SIGTERM or SIGINT stops
it gracefully: calls already accepted are answered, the time guard's final
mark is saved and a lease is released.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := loadConfig(cmd, configFile, true)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), loaded, cmd.ErrOrStderr())
		},
	}
	addConfigFlag(cmd.Flags(), &configFile)
	conf.AddFlags(cmd.Flags(), serveFlags...)
	return cmd
}

// serve runs the servers of cfg until ctx ends, then stops them gracefully.
func serve(ctx context.Context, loaded conf.Loaded, stderr io.Writer) (err error) {
	cfg := loaded.Config
	log := newLogger(cfg, stderr, cfg.Log.SlogLevel())
	// The whole configuration is judged before anything listens: no
	// default machine ID, none from the embedded range, TLS files.
	if err := checkServe(loaded); err != nil {
		return err
	}
	log.Debug("configuration", "file", fileOf(loaded), "sources", loaded.Sources(), "config", cfg)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a, err := assemble.Assemble(ctx, cfg, log, reg)
	if errors.Is(err, assemble.ErrConfig) {
		return fmt.Errorf("%w: %w", errConfig, loaded.Attribute(err))
	}
	if err != nil {
		return err
	}
	// The one start-up line: what runs, as whom, where, from which file
	// (the whole configuration is the debug line above).
	log.Info("serving", "version", buildinfo.Read().String(), "machine", a.Generator().Machine(), "provider", a.Lease().Provider(),
		"central", a.CentralAddr(), "rest", a.RESTAddr(), "metrics", a.MetricsAddr(), "config", fileOf(loaded))

	select {
	case <-ctx.Done():
		signal.Reset() // a second signal stops the process at once
		log.Info("shutting down: finishing calls in flight", "timeout", shutdownTimeout)
	case err = <-a.Failed():
		log.Error("a server failed; shutting down", "err", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if stopErr := a.Stop(sctx); stopErr != nil {
		log.Error("stopped with errors", "err", stopErr)
		return errors.Join(err, stopErr)
	}
	log.Info("stopped")
	return err
}
