package assemble_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/assemble"
	"github.com/vesta-go/vesta/internal/buildinfo"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
)

// assembleConfig is conf's defaults with an explicit machine ID, the time
// guard in a temporary directory and every listener on 127.0.0.1:0.
func assembleConfig(tb testing.TB) conf.Config {
	tb.Helper()
	cfg := conf.DefaultConfig()
	cfg.Machine.ID = new(1000)
	cfg.TimeGuard.Dir = tb.TempDir()
	cfg.Central.Listen, cfg.REST.Listen, cfg.Metrics.Listen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

func TestAssembleServes(t *testing.T) {
	cfg := assembleConfig(t)
	reg := prometheus.NewRegistry()
	a, err := assemble.Assemble(context.Background(), cfg, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	ccfg := client.DefaultConfig(a.CentralAddr())
	ccfg.NoFallback, ccfg.Timeout = true, 30*time.Second
	cl, err := client.New(context.Background(), ccfg)
	if err != nil {
		a.Stop(context.Background())
		t.Fatal(err)
	}
	id, err := cl.NextID(context.Background())
	cl.Close()
	if err != nil {
		t.Errorf("NextID through the assembled central server: %v", err)
	} else if e := a.Generator().Codec().Explain(id); e.Machine != 1000 || e.Method != core.Central {
		t.Errorf("ID %d: machine %d, method %v; want 1000, central", id, e.Machine, e.Method)
	}
	// The registry vesta serve exposes: the build, and the ID counted once,
	// by its method.
	if v, ok := promtest.Value(t, reg, "vesta_build_info", "version", buildinfo.Read().Version); !ok || v != 1 {
		t.Errorf("vesta_build_info{version=%q} = %v (found %v); want 1", buildinfo.Read().Version, v, ok)
	}
	if v, _ := promtest.Value(t, reg, "vesta_ids_issued_total", "method", "central"); v != 1 {
		t.Errorf(`vesta_ids_issued_total{method="central"} = %v; want 1`, v)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Errorf("stop: %v", err)
	}
	// Stopped: the listeners are closed.
	if c, err := net.Dial("tcp", a.CentralAddr()); err == nil {
		c.Close()
		t.Errorf("central still accepts after stop")
	}
}

// A listener that cannot be opened fails assemble before the machine ID is
// taken or the generator opened, and the listeners opened before it are
// closed again.
func TestAssembleUndoes(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	centralAddr := free.Addr().String()
	free.Close()

	cfg := assembleConfig(t)
	cfg.Central.Listen, cfg.Metrics.Listen = centralAddr, busy.Addr().String()
	_, err = assemble.Assemble(context.Background(), cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("assemble with metrics.listen in use: %v; want EADDRINUSE", err)
	}
	if ln, err := net.Listen("tcp", centralAddr); err != nil {
		t.Errorf("central.listen not closed again: %v", err)
	} else {
		ln.Close()
	}
	if ents, err := os.ReadDir(cfg.TimeGuard.Dir); err != nil || len(ents) != 0 {
		t.Errorf("time guard directory: %v entries, %v; want none: no generator opened", len(ents), err)
	}
}
