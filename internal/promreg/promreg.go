// Package promreg registers a Prometheus collector that another server
// of the process may have registered on the same registry already (the
// REST and central servers share vesta_ids_issued_total; two servers, or
// a server and a client's fallback, may share one registry): the one
// already there is reused, so both add to the same series.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it, or returns the collector
// already registered there with the same descriptions when it is a C too.
// Any other error (a collector of another kind under the name, an
// inconsistent description) is returned, unwrapped, with c.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
