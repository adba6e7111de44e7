//go:build !nemesis

package conf_test

import (
	"errors"
	"testing"

	"github.com/vesta-go/vesta/conf"
)

// The default build has no test hooks: the nemesis build's clock variable
// is unknown to it, refused by name as any other.
func TestNemesisEnvUnknown(t *testing.T) {
	_, err := conf.Load(conf.Options{Env: []string{"VESTA_NEMESIS_CLOCK_FILE=/no/such/file"}})
	if !errors.Is(err, conf.ErrUnknownKey) {
		t.Fatalf("err = %v; want ErrUnknownKey", err)
	}
	if kes := conf.KeyErrors(err); len(kes) != 1 || kes[0].Key != "VESTA_NEMESIS_CLOCK_FILE" {
		t.Fatalf("errors %v; want VESTA_NEMESIS_CLOCK_FILE alone", err)
	}
}
