package assemble_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/cmd/vesta/assemble"
	"github.com/vesta-go/vesta/cmd/vesta/assemble/assembletest"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/buildinfo"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
)

// assembleConfig is conf's defaults with an explicit machine ID, the time
// guard in a temporary directory and every listener on 127.0.0.1:0.
func assembleConfig(tb testing.TB) conf.Config {
	tb.Helper()
	cfg := assembletest.Config(tb)
	cfg.Machine.ID = new(1000)
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
	if ents, err := os.ReadDir(cfg.TimeGuard.DataDir); err != nil || len(ents) != 0 {
		t.Errorf("time guard directory: %v entries, %v; want none: no generator opened", len(ents), err)
	}
}

// TestAssembleStatus: the REST server's /v1/status names every listener
// at its address and counts the central server's IDs by method, read from
// the registry the servers share.
func TestAssembleStatus(t *testing.T) {
	a := assembletest.Start(t, assembleConfig(t))
	ccfg := clienttest.Direct(a.CentralAddr())
	ccfg.Timeout = 30 * time.Second
	cl := clienttest.Open(t, ccfg)
	for range 5 {
		if _, err := cl.NextID(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	res, err := hc.Get("http://" + a.RESTAddr() + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st struct {
		Listeners []struct {
			Name, Addr string
			Open       *int64
		} `json:"listeners"`
		IDsByMethod map[string]uint64 `json:"ids_by_method"`
		Connections *struct{ Open, Budget int }
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rpc": a.CentralAddr(), "http": a.RESTAddr(), "metrics": a.MetricsAddr()}
	if len(st.Listeners) != 3 {
		t.Fatalf("listeners %+v, want %v", st.Listeners, want)
	}
	for _, l := range st.Listeners {
		if want[l.Name] != l.Addr {
			t.Errorf("listener %s at %s, want %s", l.Name, l.Addr, want[l.Name])
		}
		if l.Name == "rpc" && (l.Open == nil || *l.Open < 1) {
			t.Errorf("rpc: open %v with a client connected", l.Open)
		}
	}
	if st.IDsByMethod["central"] != 5 {
		t.Errorf("ids_by_method %v, want central 5", st.IDsByMethod)
	}
	if st.Connections == nil || st.Connections.Open < 2 || st.Connections.Budget < st.Connections.Open {
		t.Errorf("connections %+v", st.Connections)
	}
}
