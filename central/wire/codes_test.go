package wire_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// One mapping serves the central and REST servers: every error a call can
// end with gets its code, wrapped or not, and the earlier row wins.
func TestCodeOf(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("issuing: %w", err) }
	for _, tc := range []struct {
		err  error
		want wire.Code
	}{
		{core.ErrFenced, wire.LeaseLost},
		{fmt.Errorf("%w: %w", core.ErrFenced, core.ErrGuard), wire.LeaseLost}, // a fence wraps its cause
		{core.ErrClockBehind, wire.Clock},
		{core.ErrBeforeEpoch, wire.Clock},
		{core.ErrEndOfTime, wire.Clock},
		{core.ErrGuard, wire.Unavailable},
		{core.ErrClosed, wire.Unavailable},
		{context.DeadlineExceeded, wire.Unavailable},
		{context.Canceled, wire.Unavailable},
		{&core.RangeError{Field: "machine", Value: 1024, Max: 1023}, wire.InvalidArgument},
		{core.ErrInvalidCount, wire.InvalidArgument},
		{core.ErrInvalidID, wire.InvalidArgument},
		{core.ErrUnknownName, wire.InvalidArgument},
		{wire.Errorf(wire.Unavailable, "too many waiting calls"), wire.Unavailable},
		{errors.New("disk on fire"), wire.Internal},
		{nil, ""},
	} {
		if got := wire.CodeOf(tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %q; want %q", tc.err, got, tc.want)
		}
		if tc.err == nil {
			continue
		}
		if got := wire.CodeOf(wrap(tc.err)); got != tc.want {
			t.Errorf("CodeOf(wrapped %v) = %q; want %q", tc.err, got, tc.want)
		}
	}
}

func TestErrorOf(t *testing.T) {
	if e := wire.ErrorOf(core.ErrFenced); e.Code != wire.LeaseLost || e.Message != core.ErrFenced.Error() {
		t.Errorf("ErrorOf(ErrFenced) = %+v; want lease_lost with the error's text", e)
	}
	if e := wire.ErrorOf(errors.New("secret detail")); e.Code != wire.Internal || e.Message != "internal error" {
		t.Errorf("ErrorOf(unexpected) = %+v; want internal without the details", e)
	}
	own := wire.Errorf(wire.InvalidArgument, "count 0; want 1-10")
	if e := wire.ErrorOf(fmt.Errorf("params: %w", own)); e != own {
		t.Errorf("ErrorOf(wrapped *Error) = %+v; want it as it is", e)
	}
	if wire.ErrorOf(nil) != nil {
		t.Error("ErrorOf(nil) != nil")
	}
}
