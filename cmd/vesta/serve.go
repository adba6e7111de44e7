package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/rest"
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
VESTA_MACHINE_ID), or set machine.providers to redis (a lease), k8s (the
StatefulSet ordinal) or iptable (machine.ip_table); without one it refuses to
start, as two servers left on one default would issue the same IDs. The rest
has defaults: sorted layout, max-peak, time guard in ./vesta-data. With
segment.store set it also serves segment sequences (Vesta.NextSeq,
GET /v1/seq/{tag} and Leaf's /api/segment/get/{key}). SIGTERM or SIGINT stops
it gracefully: calls already accepted are answered, the time guard's final
mark is saved and a Redis lease is released.`,
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

	// Listen first: a port in use fails before a lease is taken.
	var lnCentral, lnREST, lnMetrics net.Listener
	defer func() {
		for _, ln := range []net.Listener{lnCentral, lnREST, lnMetrics} {
			if ln != nil && err != nil {
				ln.Close()
			}
		}
	}()
	if cfg.Central.Listen != "" {
		if lnCentral, err = net.Listen("tcp", cfg.Central.Listen); err != nil {
			return fmt.Errorf("central.listen: %w", err)
		}
	}
	if cfg.REST.Listen != "" {
		if lnREST, err = net.Listen("tcp", cfg.REST.Listen); err != nil {
			return fmt.Errorf("rest.listen: %w", err)
		}
	}

	if cfg.Metrics.Listen != "" {
		if lnMetrics, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			return fmt.Errorf("metrics.listen: %w", err)
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	mcfg := cfg.MachineID(core.Central)
	mcfg.Logger, mcfg.Registerer = log, reg
	lease, err := machineid.Acquire(ctx, mcfg, machineid.Server)
	if errors.Is(err, machineid.ErrRange) || errors.Is(err, machineid.ErrConfig) {
		return fmt.Errorf("%w: machine (machine.id, machine.providers, machine.server_range, machine.redis.server_range): %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	ccfg, err := cfg.Core(core.Central)
	if err != nil {
		lease.Close(context.Background())
		return err
	}
	ccfg.Logger = log
	gen, err := lease.NewGenerator(ctx, ccfg, cfg.TimeGuard.Dir)
	if err != nil {
		lease.Close(context.Background())
		return err
	}
	reg.MustRegister(embed.NewCollector(gen))
	seq, err := openSequences(ctx, cfg, log, reg) // nil with segment.store off (seq.go)
	if err != nil {
		gen.Close()
		lease.Close(context.Background())
		return err
	}

	servers, err := startServers(cfg, gen, lease, seq, log, reg, lnCentral, lnREST, lnMetrics)
	if err != nil {
		seq.close()
		gen.Close()
		lease.Close(context.Background())
		return err
	}
	log.Info("serving", "machine", gen.Machine(), "provider", lease.Provider(),
		"central", addrOf(lnCentral), "rest", addrOf(lnREST), "metrics", addrOf(lnMetrics))

	select {
	case <-ctx.Done():
		signal.Reset() // a second signal stops the process at once
		log.Info("shutting down: finishing calls in flight", "timeout", shutdownTimeout)
	case err = <-servers.failed:
		log.Error("a server failed; shutting down", "err", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	stopErr := servers.shutdown(sctx)
	stopErr = errors.Join(stopErr, seq.close()) // after the servers: nobody calls it any more
	// Close the generator while the lease is held, so the final mark is
	// saved; then release the machine ID.
	stopErr = errors.Join(stopErr, gen.Close(), lease.Close(sctx))
	if stopErr != nil {
		log.Error("stopped with errors", "err", stopErr)
	} else {
		log.Info("stopped")
	}
	return errors.Join(err, stopErr)
}

// running are the servers of one `vesta serve`.
type running struct {
	central *central.Server
	rest    *rest.Server
	metrics *http.Server // metrics.listen: /metrics alone
	failed  chan error   // a Serve that returned for another reason than shutdown
	wg      sync.WaitGroup
}

func startServers(cfg conf.Config, gen *core.Generator, lease *machineid.Lease, seq *sequences, log *slog.Logger,
	reg *prometheus.Registry, lnCentral, lnREST, lnMetrics net.Listener) (*running, error) {
	r := &running{failed: make(chan error, 3)}
	if lnCentral != nil {
		ccfg, err := cfg.CentralConfig()
		if err != nil {
			return nil, err
		}
		ccfg.Logger, ccfg.Registerer = log.With("server", "central"), reg
		if seq != nil { // a nil *segment.Issuer in the interface would not be nil
			ccfg.Sequences = seq.is
		}
		if r.central, err = central.NewServer(gen, ccfg); err != nil {
			return nil, err
		}
	}
	if lnREST != nil {
		rcfg, err := cfg.RESTConfig()
		if err != nil {
			return nil, err
		}
		rcfg.Logger, rcfg.Registerer, rcfg.Gatherer = log.With("server", "rest"), reg, reg
		rcfg.Ready = func() error { return lease.Status().Err }
		if seq != nil {
			rcfg.Sequences = seq.is
		}
		if r.rest, err = rest.NewServer(gen, rcfg); err != nil {
			return nil, err
		}
	}
	if lnMetrics != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		r.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		r.wg.Go(func() {
			if err := r.metrics.Serve(lnMetrics); !errors.Is(err, http.ErrServerClosed) {
				r.failed <- fmt.Errorf("metrics: %w", err)
			}
		})
	}
	if r.central != nil {
		r.wg.Go(func() {
			if err := r.central.Serve(lnCentral); err != nil && !errors.Is(err, central.ErrServerClosed) {
				r.failed <- fmt.Errorf("central: %w", err)
			}
		})
	}
	if r.rest != nil {
		r.wg.Go(func() {
			if err := r.rest.Serve(lnREST); err != nil {
				r.failed <- fmt.Errorf("rest: %w", err)
			}
		})
	}
	return r, nil
}

// shutdown stops both servers at once: no new connections, calls in flight
// answered, then connections closed.
func (r *running) shutdown(ctx context.Context) error {
	var errs [3]error
	var wg sync.WaitGroup
	if r.metrics != nil {
		wg.Go(func() { errs[2] = r.metrics.Shutdown(ctx) })
	}
	if r.central != nil {
		wg.Go(func() { errs[0] = r.central.Shutdown(ctx) })
	}
	if r.rest != nil {
		wg.Go(func() { errs[1] = r.rest.Shutdown(ctx) })
	}
	wg.Wait()
	r.wg.Wait()
	return errors.Join(errs[:]...)
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return "off"
	}
	return ln.Addr().String()
}
