// Package errtest is the one check of an error a test expects: that it
// wraps a package's sentinel (errors.Is, the contract callers rely on) and
// names what it is about (the config key, the value, the range), the
// check a test of bad input makes.
package errtest

import (
	"errors"
	"strings"
)

// Wraps reports whether err wraps target and its text contains each of
// names. A nil err wraps nothing.
func Wraps(err, target error, names ...string) bool {
	if !errors.Is(err, target) {
		return false
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			return false
		}
	}
	return true
}
