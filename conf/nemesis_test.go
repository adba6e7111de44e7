//go:build nemesis

package conf_test

import (
	"testing"

	"github.com/vesta-go/vesta/conf"
)

// The nemesis build's clock file is no key: Load skips it, neither an
// unknown variable nor a source, whatever its value.
func TestNemesisEnvSkipped(t *testing.T) {
	l := mustLoad(t, conf.Options{Env: []string{conf.EnvNemesisClock + "=/no/such/file"}})
	if !l.Defaults() {
		t.Errorf("sources %v; want none", l.Sources())
	}
}
