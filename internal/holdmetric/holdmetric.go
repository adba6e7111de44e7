// Package holdmetric holds vesta_hold_conflicts_total, the one count of
// the explains with the holder that found an ID inside two holds of its
// machine ID (a broken promise of uniqueness; the alert
// VestaHoldConflict). The REST and central servers of a process add to
// the same counter of a registry, whichever protocol asked.
package holdmetric

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
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
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(prometheus.Counter); ok {
			return existing, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("holdmetric: %w", err)
	}
	return c, nil
}
