package api_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/mask"
)

// One mapping serves the central and REST servers: every error a call can
// end with gets its code, wrapped or not, and the earlier row wins.
func TestCodeOf(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("issuing: %w", err) }
	for _, tc := range []struct {
		err  error
		want api.Code
	}{
		{core.ErrFenced, api.LeaseLost},
		{fmt.Errorf("%w: %w", core.ErrFenced, core.ErrGuard), api.LeaseLost}, // a fence wraps its cause
		{core.ErrClockBehind, api.Clock},
		{core.ErrBeforeEpoch, api.Clock},
		{core.ErrEndOfTime, api.Clock},
		{core.ErrGuard, api.Unavailable},
		{core.ErrClosed, api.Unavailable},
		{context.DeadlineExceeded, api.Unavailable},
		{context.Canceled, api.Unavailable},
		{&core.RangeError{Field: "machine", Value: 1024, Max: 1023}, api.InvalidArgument},
		{core.ErrInvalidCount, api.InvalidArgument},
		{core.ErrInvalidID, api.InvalidArgument},
		{core.ErrUnknownName, api.InvalidArgument},
		{mask.ErrSyntax, api.InvalidArgument},
		{mask.ErrWrongKind, api.InvalidArgument},
		{mask.ErrRetired, api.InvalidArgument},
		{mask.ErrImplausible, api.InvalidArgument},
		{mask.ErrName, api.InvalidArgument},
		{mask.ErrNoKeys, api.NotFound},
		{api.Errorf(api.Unavailable, "too many waiting calls"), api.Unavailable},
		{errors.New("disk on fire"), api.Internal},
		{nil, ""},
	} {
		if got := api.CodeOf(tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %q; want %q", tc.err, got, tc.want)
		}
		if tc.err == nil {
			continue
		}
		if got := api.CodeOf(wrap(tc.err)); got != tc.want {
			t.Errorf("CodeOf(wrapped %v) = %q; want %q", tc.err, got, tc.want)
		}
	}
}

func TestErrorOf(t *testing.T) {
	if e := api.ErrorOf(core.ErrFenced); e.Code != api.LeaseLost || e.Message != core.ErrFenced.Error() {
		t.Errorf("ErrorOf(ErrFenced) = %+v; want lease_lost with the error's text", e)
	}
	if e := api.ErrorOf(errors.New("secret detail")); e.Code != api.Internal || e.Message != "internal error" {
		t.Errorf("ErrorOf(unexpected) = %+v; want internal without the details", e)
	}
	own := api.Errorf(api.InvalidArgument, "count 0; want 1-10")
	if e := api.ErrorOf(fmt.Errorf("params: %w", own)); e != own {
		t.Errorf("ErrorOf(wrapped *Error) = %+v; want it as it is", e)
	}
	if api.ErrorOf(nil) != nil {
		t.Error("ErrorOf(nil) != nil")
	}
}
