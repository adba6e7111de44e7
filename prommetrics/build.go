package prommetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/buildinfo"
)

// RegisterBuildInfo adds vesta_build_info, a gauge of 1 whose labels are
// vesta's version, its revision and the Go version (the Prometheus
// convention for build information: join on it, alert on a fleet running
// two versions). In a program that imports vesta, the version is the one
// its go.mod requires.
func RegisterBuildInfo(reg prometheus.Registerer) error {
	in := buildinfo.Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vesta_build_info",
		Help: "The running build: always 1, with its version, VCS revision and Go version as labels.",
		ConstLabels: prometheus.Labels{
			"version":   in.Version,
			"revision":  in.Revision,
			"goversion": in.GoVersion,
		},
	})
	g.Set(1)
	return reg.Register(g)
}
