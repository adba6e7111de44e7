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
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/internal/assemble"
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
Configuration comes from the YAML file (--config or VESTA_CONFIG), then VESTA_*
variables, then flags. There is no default machine ID: choose one unique to
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
			loaded, err := conf.Load(conf.Options{File: configFile, Flags: cmd.Flags()})
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			return serve(cmd.Context(), loaded, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "YAML configuration file (default $"+conf.EnvFile+")")
	conf.AddFlags(cmd.Flags(), "machine", "layout", "type", "epoch", "data-dir",
		"central-listen", "rest-listen", "log-level", "log-format")
	return cmd
}

// serve runs the servers of cfg until ctx ends, then stops them gracefully.
func serve(ctx context.Context, loaded conf.Loaded, stderr io.Writer) (err error) {
	cfg := loaded.Config
	log := cfg.Logger(stderr)
	if cfg.Central.Listen == "" && cfg.REST.Listen == "" {
		return fmt.Errorf("%w: central.listen and rest.listen are both empty: nothing to serve", errUsage)
	}
	// No default machine ID: refused before anything listens.
	if err := cfg.RequireMachine(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	log.Info("configuration loaded", "sources", loaded.Sources(), "config", cfg)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a, err := assemble.Assemble(ctx, cfg, log, reg)
	if errors.Is(err, assemble.ErrConfig) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	log.Info("serving", "machine", a.Generator().Machine(), "provider", a.Lease().Provider(),
		"central", a.CentralAddr(), "rest", a.RESTAddr(), "metrics", a.MetricsAddr())

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
