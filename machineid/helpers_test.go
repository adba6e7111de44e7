package machineid_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/promtest"
	"github.com/vesta-go/vesta/internal/redistest"
	"github.com/vesta-go/vesta/internal/waittest"
	"github.com/vesta-go/vesta/machineid"
)

// redisConfig leases from srv with the given TTL, with the redis provider
// only and no clock-skew check.
func redisConfig(srv *redistest.Server, ttl time.Duration) machineid.Config {
	c := machineid.DefaultConfig()
	c.Providers = []string{machineid.ProviderRedis}
	c.Redis.Addrs = []string{srv.Addr()}
	c.Redis.LeaseTTL = ttl
	c.Redis.MaxClockSkew = 0
	return c
}

// client is a plain go-redis client of srv, closed at the end of the test.
func client(t testing.TB, srv *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// generator starts a generator on the lease's ID and time guard and
// attaches it; both are closed at the end of the test, generator first.
func generator(t testing.TB, l *machineid.Lease, cfg core.Config) *core.Generator {
	t.Helper()
	g, err := l.TimeGuard("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Machine, cfg.Guard = l.ID(), g
	gen, err := core.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	t.Cleanup(func() { gen.Close() }) // runs before the lease's Close
	if err := l.Attach(gen); err != nil {
		t.Fatal(err)
	}
	return gen
}

// eventually polls cond until it holds (waittest.Until: it waits for
// things that must happen, never to judge speed).
var eventually = waittest.Until

// gauge reads one series of a registry; the series' labels must include
// those given (the mode label is implied).
func gauge(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	var pairs []string
	for k, v := range labels {
		pairs = append(pairs, k, v)
	}
	return promtest.Value(t, reg, name, pairs...)
}
