// Package assemble builds the servers one configuration runs: the
// machine-ID lease, the generator on it, the segment sequences and the
// central, REST and metrics servers. `vesta serve`, the load generator
// (bench/load) and so every integration test build their servers here, so a
// benchmark measures the server as it is served.
package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/rest"
)

// ErrConfig marks a configuration assemble cannot run (a machine ID out of
// range, settings unlike the fleet record's, an unknown segment store): the
// caller's usage error, not a fault.
var ErrConfig = errors.New("assemble: configuration")

// Assembled is what one configuration runs: the machine-ID lease, the
// generator on it, the segment sequences (nil with segment.store off) and
// the servers on their listeners.
type Assembled struct {
	lease *machineid.Lease
	gen   *core.Generator
	seq   *sequences

	lnCentral, lnREST, lnMetrics net.Listener // nil: that server is off
	central                      *central.Server
	rest                         *rest.Server
	metrics                      *http.Server // metrics.listen: /metrics alone

	failed chan error // a Serve that returned for another reason than shutdown
	wg     sync.WaitGroup
}

// Assemble listens on cfg's addresses, takes the machine ID, opens the
// generator and the sequences, and serves until stop. On error, what it
// started is undone. The caller checks cfg (RequireMachine) and owns reg.
func Assemble(ctx context.Context, cfg conf.Config, log *slog.Logger, reg *prometheus.Registry) (_ *Assembled, err error) {
	a := &Assembled{failed: make(chan error, 3)}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Stop(context.Background()))
		}
	}()

	// Listen first: a port in use fails before a lease is taken.
	if cfg.Central.Listen != "" {
		if a.lnCentral, err = net.Listen("tcp", cfg.Central.Listen); err != nil {
			return nil, fmt.Errorf("central.listen: %w", err)
		}
	}
	if cfg.REST.Listen != "" {
		if a.lnREST, err = net.Listen("tcp", cfg.REST.Listen); err != nil {
			return nil, fmt.Errorf("rest.listen: %w", err)
		}
	}
	if cfg.Metrics.Listen != "" {
		if a.lnMetrics, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			return nil, fmt.Errorf("metrics.listen: %w", err)
		}
	}

	mcfg, err := cfg.Lease() // the etcd TLS files read
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	mcfg.Logger, mcfg.Registerer = log, reg
	lease, err := machineid.Acquire(ctx, mcfg, core.Central)
	if errors.Is(err, machineid.ErrRange) || errors.Is(err, machineid.ErrConfig) {
		return nil, fmt.Errorf("%w: machine (machine.id, machine.providers, machine.server_range, machine.redis.*, machine.etcd.*): %w", ErrConfig, err)
	}
	if err != nil {
		return nil, err
	}
	a.lease = lease
	ccfg, err := cfg.Core()
	if err != nil {
		return nil, err
	}
	ccfg.Logger = log
	if a.gen, err = lease.NewGenerator(ctx, ccfg, cfg.TimeGuard.Dir); err != nil {
		if errors.Is(err, machineid.ErrFleet) {
			// Settings unlike the fleet's are the operator's to fix, as any
			// other refused configuration; the error names each setting.
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return nil, err
	}
	reg.MustRegister(embed.NewCollector(a.gen))
	if a.seq, err = openSequences(ctx, cfg, log, reg); err != nil { // sequences.go
		return nil, err
	}
	if err := a.start(cfg, log, reg); err != nil {
		return nil, err
	}
	return a, nil
}

// start builds the servers of the open listeners and serves them.
func (a *Assembled) start(cfg conf.Config, log *slog.Logger, reg *prometheus.Registry) error {
	if a.lnCentral != nil {
		ccfg, err := cfg.CentralConfig() // the keys, validated, and the TLS files
		if err != nil {
			return err
		}
		ccfg.Logger, ccfg.Registerer = log.With("server", "central"), reg
		if a.seq != nil { // a nil *segment.Issuer in the interface would not be nil
			ccfg.Sequences = a.seq.is
		}
		if a.central, err = central.NewServer(a.gen, ccfg); err != nil {
			return err
		}
	}
	if a.lnREST != nil {
		rcfg, err := cfg.RESTConfig()
		if err != nil {
			return err
		}
		rcfg.Logger, rcfg.Registerer, rcfg.Gatherer = log.With("server", "rest"), reg, reg
		lease := a.lease
		rcfg.Ready = func() error { return lease.Status().Err }
		rcfg.Lease = leaseStatus(lease) // status.go
		if a.seq != nil {
			rcfg.Sequences = a.seq.is
		}
		if a.rest, err = rest.NewServer(a.gen, rcfg); err != nil {
			return err
		}
	}
	if a.lnMetrics != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		a.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		ln := a.lnMetrics
		a.wg.Go(func() {
			if err := a.metrics.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				a.failed <- fmt.Errorf("metrics: %w", err)
			}
		})
	}
	if a.central != nil {
		ln := a.lnCentral
		a.wg.Go(func() {
			if err := a.central.Serve(ln); err != nil && !errors.Is(err, central.ErrServerClosed) {
				a.failed <- fmt.Errorf("central: %w", err)
			}
		})
	}
	if a.rest != nil {
		ln := a.lnREST
		a.wg.Go(func() {
			if err := a.rest.Serve(ln); err != nil {
				a.failed <- fmt.Errorf("rest: %w", err)
			}
		})
	}
	return nil
}

// Stop stops the servers at once (no new connections, calls in flight
// answered, then connections closed), then the sequences, the generator
// while the lease is held (so the final mark is saved) and the lease. It
// undoes a partial assemble too: a listener no server took is closed.
func (a *Assembled) Stop(ctx context.Context) error {
	var errs [3]error
	var wg sync.WaitGroup
	if a.metrics != nil {
		wg.Go(func() { errs[2] = a.metrics.Shutdown(ctx) })
	} else if a.lnMetrics != nil {
		a.lnMetrics.Close()
	}
	if a.central != nil {
		wg.Go(func() { errs[0] = a.central.Shutdown(ctx) })
	} else if a.lnCentral != nil {
		a.lnCentral.Close()
	}
	if a.rest != nil {
		wg.Go(func() { errs[1] = a.rest.Shutdown(ctx) })
	} else if a.lnREST != nil {
		a.lnREST.Close()
	}
	wg.Wait()
	a.wg.Wait()
	err := errors.Join(errs[:]...)
	err = errors.Join(err, a.seq.close()) // after the servers: nobody calls it any more
	if a.gen != nil {
		err = errors.Join(err, a.gen.Close())
	}
	if a.lease != nil {
		err = errors.Join(err, a.lease.Close(ctx))
	}
	return err
}

// Generator is the generator the servers issue from.
func (a *Assembled) Generator() *core.Generator { return a.gen }

// Lease is the machine-ID lease the generator runs on.
func (a *Assembled) Lease() *machineid.Lease { return a.lease }

// Failed receives the error of a server that stopped serving for another
// reason than Stop; the caller then stops the rest.
func (a *Assembled) Failed() <-chan error { return a.failed }

// CentralAddr, RESTAddr and MetricsAddr are the addresses the servers
// listen on (a ":0" port resolved), or "off".
func (a *Assembled) CentralAddr() string { return addr(a.lnCentral) }

// RESTAddr: see CentralAddr.
func (a *Assembled) RESTAddr() string { return addr(a.lnREST) }

// MetricsAddr: see CentralAddr.
func (a *Assembled) MetricsAddr() string { return addr(a.lnMetrics) }

// addr is ln's address, or "off".
func addr(ln net.Listener) string {
	if ln == nil {
		return "off"
	}
	return ln.Addr().String()
}
