package prommetrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/buildinfo"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
	"github.com/vesta-go/vesta/internal/testkit/embedtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/promtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/machineid"
	_ "github.com/vesta-go/vesta/machineid/redislease"
	"github.com/vesta-go/vesta/prommetrics"
)

// TestIssuer: an issuer's IDs, generator and lease; the count stays when
// it closes (a counter never goes down).
func TestIssuer(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	is := embedtest.Static(t, 1)
	if err := prommetrics.RegisterIssuer(reg, is); err != nil {
		t.Fatal(err)
	}
	if _, err := is.NextIDs(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	if v, _ := promtest.Value(t, reg, "vesta_ids_issued_total", "method", "embedded"); v != 10 {
		t.Fatalf("ids issued = %v; want 10", v)
	}
	if n := len(promtest.Series(t, reg, "vesta_ids_issued_total")); n != 1 {
		t.Fatalf("%d series of vesta_ids_issued_total; want embedded alone", n)
	}
	if v, _ := promtest.Value(t, reg, "vesta_generator_time_guard_mark_timestamp_seconds"); v < float64(time.Now().Unix()) {
		t.Fatalf("mark %v is not ahead of now", v)
	}
	if v, ok := promtest.Value(t, reg, "vesta_machine_id", "range", "embedded"); !ok || v != 1 {
		t.Fatalf("vesta_machine_id{range=embedded} = %v (%t); want 1", v, ok)
	}
	if v, _ := promtest.Value(t, reg, "vesta_machine_lease_state", "range", "embedded", "state", "none"); v != 1 {
		t.Fatalf(`vesta_machine_lease_state{state="none"} = %v; want 1 (a fixed ID)`, v)
	}
	// A second issuer's generator series would collide.
	if err := prommetrics.RegisterIssuer(reg, embedtest.Static(t, 2)); err == nil {
		t.Fatal("a second issuer on one registry: no error")
	}
	if err := is.Close(); err != nil {
		t.Fatal(err)
	}
	if v, _ := promtest.Value(t, reg, "vesta_ids_issued_total", "method", "embedded"); v != 10 {
		t.Fatalf("ids issued after Close = %v; want 10", v)
	}
}

// TestLease: a Redis lease's series; a second lease of the range shares
// them (its counts add up, the gauges follow the open one), and a closed
// lease's counts stay once it is dropped.
func TestLease(t *testing.T) {
	srv := redistest.Start(t)
	srv.Established("vesta")
	c := machineid.DefaultConfig()
	c.Providers, c.Redis.Addrs = []string{machineid.ProviderRedis}, []string{srv.Addr()}
	c.Redis.LeaseTTL = time.Second
	acquire := func() *machineid.Lease {
		l, err := machineid.Acquire(context.Background(), c, core.Central)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close(context.Background()) })
		return l
	}
	reg := prometheus.NewPedanticRegistry()
	a := acquire()
	if err := prommetrics.RegisterLease(reg, a); err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels ...string) float64 {
		v, _ := promtest.Value(t, reg, name, append([]string{"range", "server"}, labels...)...)
		return v
	}
	if v := value("vesta_machine_lease_state", "state", "held"); v != 1 {
		t.Fatalf("held state %v", v)
	}
	if v := value("vesta_machine_id"); v != float64(a.ID()) {
		t.Fatalf("machine %v; want %d", v, a.ID())
	}
	if _, ok := promtest.Value(t, reg, "vesta_machine_clock_skew_seconds", "range", "server"); !ok {
		t.Fatal("no clock skew series")
	}
	waittest.Until(t, "a renewal of a", func() bool { return value("vesta_machine_lease_renew_seconds") >= 1 })

	b := acquire()
	if err := prommetrics.RegisterLease(reg, b); err != nil {
		t.Fatal(err)
	}
	if v := value("vesta_machine_id"); v != float64(b.ID()) {
		t.Fatalf("machine %v; want the last lease's %d", v, b.ID())
	}
	waittest.Until(t, "a renewal of b", func() bool { return b.Stats().Renewals.Count() >= 1 })
	b.Close(context.Background())
	if v := value("vesta_machine_id"); v != float64(a.ID()) {
		t.Fatalf("machine %v once b closed; want the open lease's %d", v, a.ID())
	}
	renewed := a.Stats().Renewals.Count() + b.Stats().Renewals.Count()
	if v := value("vesta_machine_lease_renew_seconds"); v < float64(renewed) {
		t.Fatalf("renewals %v; want both leases' %d", v, renewed)
	}
	a.Close(context.Background())
	if v := value("vesta_machine_lease_state", "state", "none"); v != 1 {
		t.Fatalf("none state after Close %v", v)
	}
	if v := value("vesta_machine_lease_renew_seconds"); v < float64(renewed) {
		t.Fatalf("renewals %v after Close; want at least %d: counts never go down", v, renewed)
	}
}

// TestClient: one open client per registry; a closed one's series go and
// leave the registry to the next.
func TestClient(t *testing.T) {
	ln := nettest.Loopback(t)
	dead := ln.Addr().String()
	ln.Close()
	newClient := func(machine core.MachineID) *client.Client {
		cfg := client.DefaultConfig(dead)
		cfg.FallbackConfig.Machine.Static, cfg.FallbackConfig.DataDir = new(machine), t.TempDir()
		return clienttest.Open(t, cfg)
	}
	reg := prometheus.NewPedanticRegistry()
	first := newClient(6)
	if err := prommetrics.RegisterClient(reg, first); err != nil {
		t.Fatal(err)
	}
	if _, err := first.NextIDs(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"vesta_client_fallback_machine_id", nil, 6},
		{"vesta_client_fallback_ready", nil, 1},
		{"vesta_client_method", nil, float64(core.Embedded)},
		{"vesta_client_calls_total", []string{"server", dead, "result", "network"}, 1},
		{"vesta_client_breaker_state", []string{"server", dead}, 0},
		{"vesta_ids_issued_total", []string{"method", "embedded"}, 3},
		{"vesta_ceiling_waits_total", []string{"method", "central"}, 0},
		{"vesta_machine_id", []string{"range", "embedded"}, 6},
	} {
		if v, ok := promtest.Value(t, reg, m.name, m.labels...); !ok || v != m.want {
			t.Errorf("%s%v = %v (found %t); want %v", m.name, m.labels, v, ok, m.want)
		}
	}
	if err := prommetrics.RegisterClient(reg, newClient(7)); !errors.Is(err, prommetrics.ErrClientRegistered) {
		t.Fatalf("a second open client: %v; want ErrClientRegistered", err)
	}
	first.Close()
	if s := promtest.Series(t, reg, "vesta_client_method"); len(s) != 0 {
		t.Fatalf("a closed client's series: %v", s)
	}
	if err := prommetrics.RegisterClient(reg, newClient(8)); err != nil {
		t.Fatalf("a client after the first closed: %v", err)
	}
	if v, _ := promtest.Value(t, reg, "vesta_client_fallback_machine_id"); v != 8 {
		t.Fatalf("fallback machine %v; want the new client's 8", v)
	}
	if v, _ := promtest.Value(t, reg, "vesta_ids_issued_total", "method", "embedded"); v != 3 {
		t.Fatalf("ids issued %v; want the closed client's 3 kept", v)
	}
}

func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := prommetrics.RegisterBuildInfo(reg); err != nil {
		t.Fatal(err)
	}
	in := buildinfo.Read()
	want := `# HELP vesta_build_info The running build: always 1, with its version, VCS revision and Go version as labels.
# TYPE vesta_build_info gauge
vesta_build_info{goversion="` + in.GoVersion + `",revision="` + in.Revision + `",version="` + in.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vesta_build_info"); err != nil {
		t.Error(err)
	}
}
