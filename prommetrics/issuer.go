package prommetrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/issuedmetric"
)

// RegisterIssuer registers an embedded issuer's metrics on reg: its
// generator's (NewGeneratorCollector), its IDs issued
// (vesta_ids_issued_total{method="embedded"}, read from the generator's
// count, which stays once the issuer is closed) and its machine-ID lease's
// (RegisterLease). The generator's series are one issuer's: a second
// issuer needs a registry of its own, or reg wrapped with
// prometheus.WrapRegistererWith and a label.
func RegisterIssuer(reg prometheus.Registerer, is *embed.Issuer) error {
	gen := is.Generator()
	gc := NewGeneratorCollector(gen)
	if err := reg.Register(gc); err != nil {
		return fmt.Errorf("prommetrics: the issuer's generator: %w", err)
	}
	issued, err := issuedmetric.New(reg)
	if err == nil {
		err = RegisterLease(reg, is.Lease())
	}
	if err != nil {
		reg.Unregister(gc)
		return err
	}
	issued.Read(core.Embedded, func() uint64 { return gen.Stats().Issued })
	return nil
}
