// Package masktest makes masking keys and maskers for tests: one fixed
// secret (never a deployment's), and the check of a generator's shape
// with the default machine ranges, as a server of the shape has.
package masktest

import (
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/mask"
)

// KeyText is the tests' key text: slot 0 only, its secret reading
// "secret for the example only!".
const KeyText = "slot 0 c2VjcmV0IGZvciB0aGUgZXhhbXBsZSBvbmx5IQ=="

// Keys are the keys of KeyText.
func Keys(tb testing.TB) *mask.Keys {
	tb.Helper()
	k, err := mask.ParseKeys(KeyText)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// Maskers are the maskers of KeyText checked against generators of cfg
// (its layout, epoch, type, version, MaxBorrow and Clock) and the default
// machine ranges.
func Maskers(tb testing.TB, cfg core.Config) *mask.Maskers {
	tb.Helper()
	check, err := mask.CheckOf(cfg, machineid.DefaultEmbeddedRange, machineid.DefaultServerRange)
	if err != nil {
		tb.Fatal(err)
	}
	ms, err := mask.NewMaskers(Keys(tb), check)
	if err != nil {
		tb.Fatal(err)
	}
	return ms
}
