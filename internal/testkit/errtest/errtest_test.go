package errtest_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit/errtest"
)

func TestWraps(t *testing.T) {
	errBad := errors.New("pkg: bad")
	err := fmt.Errorf("%w: Field: 5 is not in 924-1023", errBad)
	for _, tc := range []struct {
		err    error
		target error
		names  []string
		want   bool
	}{
		{err, errBad, nil, true},
		{err, errBad, []string{"Field", "924-1023"}, true},
		{err, errBad, []string{"Field", "Other"}, false},
		{err, errors.New("pkg: bad"), nil, false},
		{nil, errBad, nil, false},
		{errBad, errBad, []string{""}, true},
	} {
		if got := errtest.Wraps(tc.err, tc.target, tc.names...); got != tc.want {
			t.Errorf("Wraps(%v, %v, %q) = %v; want %v", tc.err, tc.target, tc.names, got, tc.want)
		}
	}
}
