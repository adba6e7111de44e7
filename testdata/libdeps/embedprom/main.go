// The embedded issuer on a static machine ID with its Prometheus metrics
// (package prommetrics) served on /metrics: what the metrics cost a
// program that wants them. libdeps_test.go holds that they add the
// Prometheus client and nothing of Redis or etcd.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/prommetrics"
)

func main() {
	cfg := embed.DefaultConfig()
	cfg.Machine.Static = new(core.MachineID(44))
	is, err := embed.Open(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer is.Close()
	reg := prometheus.NewRegistry()
	if err := prommetrics.RegisterIssuer(reg, is); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	id, err := is.NextID(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(id)
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	fmt.Fprintln(os.Stderr, http.ListenAndServe("127.0.0.1:9090", nil))
}
