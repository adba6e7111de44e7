package prommetrics_test

import (
	"context"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/prommetrics"
)

// An application's embedded issuer with its metrics: the issuer counts
// nothing more for them; the registry reads its Stats when gathered.
func ExampleRegisterIssuer() {
	dir, _ := os.MkdirTemp("", "vesta-example")
	defer os.RemoveAll(dir)
	cfg := embed.DefaultConfig()
	cfg.Machine.Static, cfg.DataDir = new(core.MachineID(42)), dir
	is, err := embed.Open(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	defer is.Close()

	reg := prometheus.NewRegistry()
	if err := prommetrics.RegisterIssuer(reg, is); err != nil {
		panic(err)
	}
	is.NextIDs(context.Background(), 3)

	families, _ := reg.Gather()
	for _, f := range families {
		switch f.GetName() {
		case "vesta_ids_issued_total", "vesta_machine_id":
			m := f.GetMetric()[0]
			fmt.Println(f.GetName(), m.GetLabel()[0].GetValue(), m.GetCounter().GetValue()+m.GetGauge().GetValue())
		}
	}
	// Output:
	// vesta_ids_issued_total embedded 3
	// vesta_machine_id embedded 42
}
