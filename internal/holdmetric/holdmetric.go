// Package holdmetric holds vesta_hold_conflicts_total, the one count of
// the explains with the holder that found an ID inside two holds of its
// machine ID (a broken promise of uniqueness; the alert
// VestaHoldConflict). The REST and central servers of a process add to
// the same counter of a registry, whichever protocol asked.
package holdmetric

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/promreg"
)

// Name is the metric's name; the alert rule and the dashboard query it.
const Name = "vesta_hold_conflicts_total"

// Conflicts returns the counter of reg: registered by the first caller,
// the same one for every later caller of the same registry.
func Conflicts(reg prometheus.Registerer) (prometheus.Counter, error) {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: Name,
		Help: "Explains with the holder that found an ID's instant inside two holds of its machine ID: a broken promise of uniqueness.",
	})
	c, err := promreg.Register(reg, c)
	if err != nil {
		return nil, fmt.Errorf("holdmetric: %w", err)
	}
	return c, nil
}
