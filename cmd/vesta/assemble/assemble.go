package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/capacity"
	"github.com/vesta-go/vesta/internal/connlimit"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/mask"
	"github.com/vesta-go/vesta/prommetrics"
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
	masks *mask.Maskers // nil: masking off (mask.go)
	// capacity samples what GET /v1/capacity and the vesta_capacity_*
	// metrics report (capacity.go).
	capacity *capacity.Tracker

	lnCentral, lnREST, lnMetrics net.Listener // nil: that server is off
	central                      *central.Server
	rest                         *rest.Server
	metrics                      *http.Server // metrics.listen: /metrics alone
	budget                       *connlimit.Budget
	stopClock                    func() // ends the nemesis build's clock hook; a no-op otherwise

	failed chan error // a Serve that returned for another reason than shutdown
	wg     sync.WaitGroup
}

// Assemble listens on cfg's addresses, takes the machine ID, opens the
// generator and the sequences, and serves until stop. On error, what it
// started is undone. The caller checks cfg (RequireMachine) and owns reg.
func Assemble(ctx context.Context, cfg conf.Config, log *slog.Logger, reg *prometheus.Registry) (_ *Assembled, err error) {
	a := &Assembled{failed: make(chan error, 3), stopClock: func() {}}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Stop(context.Background()))
		}
	}()

	// The configuration is judged before anything listens, so that a
	// refused one exits 2 naming its key even while a port is taken; then
	// listen, so that a port in use fails before a lease is taken.
	mcfg, err := cfg.MachineIDConfig() // the etcd TLS files read
	if err == nil {
		err = mcfg.ValidateFor(core.Central)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: machine (machine.id, machine.providers, machine.server_range, machine.redis.*, machine.etcd.*): %w", ErrConfig, err)
	}
	ccfg, err := cfg.CoreConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
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

	mcfg.Logger = log
	// nil (core.SystemClock) but in the test-only nemesis build, whose clock
	// a fault injector steps (nemesis.go); the lease and the generator read
	// the same one.
	var clk core.Clock
	clk, a.stopClock = nemesisClock(log)
	mcfg.Clock = clk
	lease, err := machineid.Acquire(ctx, mcfg, core.Central)
	if errors.Is(err, machineid.ErrRange) || errors.Is(err, machineid.ErrConfig) {
		return nil, fmt.Errorf("%w: machine (machine.id, machine.providers, machine.server_range, machine.redis.*, machine.etcd.*): %w", ErrConfig, err)
	}
	if err != nil {
		return nil, err
	}
	a.lease = lease
	if err := prommetrics.RegisterLease(reg, lease); err != nil {
		return nil, fmt.Errorf("assemble: metrics: %w", err)
	}
	ccfg.Logger, ccfg.Clock = log, clk
	if a.gen, err = lease.NewGenerator(ctx, ccfg, cfg.TimeGuard.DataDir); err != nil {
		if errors.Is(err, machineid.ErrFleet) {
			// Settings unlike the fleet's are the operator's to fix, as any
			// other refused configuration; the error names each setting.
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return nil, err
	}
	reg.MustRegister(prommetrics.NewGeneratorCollector(a.gen))
	// vesta_build_info, for a fleet's versions side by side; a caller that
	// registered it already keeps its own.
	var are prometheus.AlreadyRegisteredError
	if err := prommetrics.RegisterBuildInfo(reg); err != nil && !errors.As(err, &are) {
		return nil, fmt.Errorf("assemble: metrics: %w", err)
	}
	if a.seq, err = openSequences(ctx, cfg, log, reg); err != nil { // sequences.go
		return nil, err
	}
	if a.masks, err = openMasks(cfg, clk, log); err != nil { // mask.go
		return nil, err
	}
	if err := a.openCapacity(mcfg, log, reg); err != nil { // capacity.go
		return nil, err
	}
	if err := a.start(cfg, log, reg); err != nil {
		return nil, err
	}
	a.advertise(ctx) // fleet.go
	return a, nil
}

// start builds the servers of the open listeners and serves them.
func (a *Assembled) start(cfg conf.Config, log *slog.Logger, reg *prometheus.Registry) error {
	if err := a.fdBudget(cfg, log, reg); err != nil {
		return err
	}
	// The hold histories, read through one cache for both servers'
	// explains with the holder (fleet.go).
	holders := api.NewHolders(holdersView(a.lease))
	if a.lnCentral != nil {
		ccfg, err := cfg.CentralConfig() // the keys, validated, and the TLS files
		if err != nil {
			return err
		}
		ccfg.Logger, ccfg.Registerer, ccfg.Budget = log.With("server", "central"), reg, a.budget
		if a.seq != nil { // a nil *segment.Sequencer in the interface would not be nil
			ccfg.Sequences = a.seq.is
		}
		ccfg.Masks = a.masks
		ccfg.Holders = holders
		if a.central, err = central.NewServer(a.gen, ccfg); err != nil {
			return err
		}
	}
	if a.lnREST != nil {
		rcfg, err := cfg.RESTConfig()
		if err != nil {
			return err
		}
		rcfg.Logger, rcfg.Registerer, rcfg.Gatherer, rcfg.Budget = log.With("server", "rest"), reg, reg, a.budget
		lease := a.lease
		rcfg.Fleet = fleetView(lease) // fleet.go
		rcfg.Holders = holders
		rcfg.Ready = func() error { return lease.Status().Err }
		rcfg.Lease = leaseStatus(lease) // status.go
		rcfg.Listeners = a.listeners()  // status.go
		if a.seq != nil {
			rcfg.Sequences = a.seq.is
			rcfg.SegmentStore = storeInfo(cfg.Segment) // status.go
		}
		rcfg.Masks = a.masks
		rcfg.Capacity = a.capacity.Report
		if a.rest, err = rest.NewServer(a.gen, rcfg); err != nil {
			return err
		}
	}
	a.warnLocks(cfg, log)
	if a.lnMetrics != nil {
		ln, err := a.metricsServer(cfg, log, reg)
		if err != nil {
			return err
		}
		a.wg.Go(func() {
			serve := a.metrics.Serve
			if a.metrics.TLSConfig != nil {
				serve = func(ln net.Listener) error { return a.metrics.ServeTLS(ln, "", "") }
			}
			if err := serve(ln); !errors.Is(err, http.ErrServerClosed) {
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

// warnLocks warns, at start, of a lock one listener has and another
// lacks, where others may reach it: RPC open while REST is locked (a
// token or client certificates) — the RPC protocol has no token, mutual
// TLS is its credential (docs/design/central.md) — and the token sent in clear to
// the metrics listener. Loopback listeners are reached from the host
// only; a network that keeps others out (a published loopback port, a
// NetworkPolicy) makes the warning moot, which vesta cannot see.
func (a *Assembled) warnLocks(cfg conf.Config, log *slog.Logger) {
	restLocked := cfg.REST.Token.Reveal() != "" || cfg.REST.TLS.ClientCA != ""
	if a.lnREST != nil && restLocked && a.lnCentral != nil && cfg.Central.TLS.ClientCA == "" && !onLoopback(a.lnCentral) {
		log.Warn("central.listen issues IDs to anyone who reaches it, while REST is locked (rest.token, rest.tls.client_ca): "+
			"set central.tls.client_ca (mutual TLS, RPC's credential), listen on loopback, or keep others out at the network",
			"central", a.lnCentral.Addr().String())
	}
	if a.lnMetrics != nil && cfg.REST.MetricsAuth && !cfg.Metrics.TLS.Enabled() && !onLoopback(a.lnMetrics) {
		log.Warn("metrics.listen speaks plain HTTP on the network: each scrape sends rest.token in clear (rest.metrics_auth); "+
			"set metrics.tls.cert and metrics.tls.key", "metrics", a.lnMetrics.Addr().String())
	}
}

// onLoopback reports whether ln listens on a loopback address.
func onLoopback(ln net.Listener) bool {
	ta, ok := ln.Addr().(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// fdBudget caps the connections of every listener together at what the
// file descriptors allow, less those open now (listeners, lease, stores)
// and a reserve for what the time guard, the lease and the stores open
// later: a flood of connections on one port cannot starve another, nor
// the guard's saves.
func (a *Assembled) fdBudget(cfg conf.Config, log *slog.Logger, reg *prometheus.Registry) error {
	fd, err := connlimit.Descriptors(connlimit.DefaultFDReserve)
	if err != nil {
		log.Warn("file descriptors: the limit is unknown; connections are capped by max_conns alone", "err", err)
	}
	a.budget = connlimit.NewBudget(fd.Budget)
	if err := a.budget.Register(reg); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	caps, largest := 0, 0
	for _, l := range []struct {
		ln net.Listener
		n  int
	}{{a.lnCentral, cfg.Central.MaxConns}, {a.lnREST, cfg.REST.MaxConns}, {a.lnMetrics, cfg.Metrics.MaxConns}} {
		if l.ln != nil {
			caps += l.n
			largest = max(largest, l.n)
		}
	}
	if fd.Limit == math.MaxInt {
		return nil
	}
	attrs := []any{"limit", fd.Limit, "open", fd.Open, "reserve", fd.Reserve, "budget", fd.Budget, "max_conns_total", caps}
	// The listeners share the budget by design, so their caps adding up
	// past it is normal (the defaults' 20,100 against a common limit of
	// 20,000) and said at Debug, as the plain budget is (the start-up
	// line stays one); a budget below one listener's own cap
	// means that cap can never be reached, which an operator should hear.
	switch {
	case fd.Budget < largest:
		log.Warn("file descriptors: the limit caps connections below a listener's max_conns; at the budget the oldest silent or idle connection of any listener is shed (raise it with ulimit -n, LimitNOFILE)", attrs...)
	case fd.Budget < caps:
		log.Debug("file descriptors: the listeners share a budget below their max_conns together; at it the oldest silent or idle connection of any listener is shed", attrs...)
	default:
		log.Debug("file descriptors: connection budget", attrs...)
	}
	return nil
}

// metricsServer builds the server of metrics.listen: GET /metrics alone,
// under the listener policy of the metrics.* caps, HTTPS with
// metrics.tls, REST's Host allow-list (rest.allowed_hosts), and REST's
// token when rest.metrics_auth asks for it; it returns the listener to
// serve.
func (a *Assembled) metricsServer(cfg conf.Config, log *slog.Logger, reg *prometheus.Registry) (net.Listener, error) {
	lcfg, err := cfg.MetricsConfig()
	if err != nil {
		return nil, err
	}
	if lcfg.Metrics, err = connlimit.NewMetrics(reg, connlimit.Names{
		Rejected: "vesta_metrics_connections_rejected_total", Shed: "vesta_metrics_connections_shed_total",
		Unsent: "vesta_metrics_unsent_bytes", Protocol: "Metrics listener HTTP",
	}); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mlog := log.With("server", "metrics")
	lcfg.Budget, lcfg.Logger, lcfg.Name = a.budget, mlog, "metrics"
	token := ""
	if cfg.REST.MetricsAuth {
		token = cfg.REST.Token.Reveal()
	}
	h, err := rest.MetricsHandler(reg, rest.MetricsConfig{
		Token: token, AllowedHosts: cfg.REST.AllowedHosts, Addr: a.lnMetrics.Addr(), Logger: mlog,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: rest.allowed_hosts: %w", ErrConfig, err)
	}
	tlsCfg, err := cfg.Metrics.TLS.Load()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	lim := connlimit.NewLimiter(lcfg)
	a.metrics = lim.HTTPServer(connlimit.HTTPConfig{
		Handler:        mux,
		TLS:            tlsCfg,
		RequestTimeout: rest.DefaultRequestTimeout,
		MaxHeaderBytes: rest.MaxHeaderBytes,
		HeaderTooLarge: rest.HeaderTooLarge(),
		ErrorLog:       rest.ErrorLog(mlog, "metrics"), // a peer's failed handshakes once a minute
	})
	return lim.Listen(a.lnMetrics), nil
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
	if a.capacity != nil {
		a.capacity.Close() // before the sequences and the generator it samples
	}
	err = errors.Join(err, a.seq.close()) // after the servers: nobody calls it any more
	if a.gen != nil {
		err = errors.Join(err, a.gen.Close())
	}
	if a.lease != nil {
		err = errors.Join(err, a.lease.Close(ctx))
	}
	a.stopClock() // last: the generator and the lease read it until closed
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
