//go:build prom

package main

import (
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/prommetrics"
)

func init() { afterID = serveMetrics }

// serveMetrics registers the embedded issuer's metrics (package
// prommetrics) and serves them on /metrics.
func serveMetrics(is issuer) {
	reg := prometheus.NewRegistry()
	exitOn(prommetrics.RegisterIssuer(reg, is.(*embed.Issuer)))
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	fmt.Fprintln(os.Stderr, http.ListenAndServe("127.0.0.1:9090", nil))
}
