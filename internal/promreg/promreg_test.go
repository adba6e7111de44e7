package promreg_test

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/internal/promreg"
)

// A second server's collector gives way to the one registered first; a
// collector of another kind under the name is refused.
func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	counter := func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"l"})
	}
	first, err := promreg.Register(reg, counter())
	if err != nil {
		t.Fatal(err)
	}
	second, err := promreg.Register(reg, counter())
	if err != nil || second != first {
		t.Fatalf("second Register = %p, %v; want the first, %p", second, err, first)
	}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x_total", Help: "x"}, []string{"l"})
	got, err := promreg.Register(reg, gauge)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) || got != gauge {
		t.Fatalf("a gauge under a counter's name: %p, %v; want it back with AlreadyRegisteredError", got, err)
	}
}
