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
		want api.Code
		errs []error
	}{
		{api.LeaseLost, []error{core.ErrFenced, fmt.Errorf("%w: %w", core.ErrFenced, core.ErrGuard)}}, // a fence wraps its cause
		{api.Clock, []error{core.ErrClockBehind, core.ErrBeforeEpoch, core.ErrEndOfTime}},
		{api.Unavailable, []error{core.ErrGuard, core.ErrClosed, context.DeadlineExceeded, context.Canceled,
			api.Errorf(api.Unavailable, "too many waiting calls")}},
		{api.InvalidArgument, []error{&core.RangeError{Field: "machine", Value: 1024, Max: 1023},
			core.ErrInvalidCount, core.ErrInvalidID, core.ErrUnknownName,
			mask.ErrSyntax, mask.ErrWrongKind, mask.ErrRetired, mask.ErrImplausible, mask.ErrName}},
		{api.NotFound, []error{mask.ErrNoKeys}},
		{api.Internal, []error{errors.New("disk on fire")}},
		{"", []error{nil}},
	} {
		for _, err := range tc.errs {
			if got := api.CodeOf(err); got != tc.want {
				t.Errorf("CodeOf(%v) = %q; want %q", err, got, tc.want)
			}
			if err == nil {
				continue
			}
			if got := api.CodeOf(wrap(err)); got != tc.want {
				t.Errorf("CodeOf(wrapped %v) = %q; want %q", err, got, tc.want)
			}
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
