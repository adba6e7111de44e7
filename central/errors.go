package central

import (
	"context"
	"errors"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// Sentinel errors.
var (
	// ErrServerClosed: Serve was called on, or returned because of, a
	// server that was shut down or closed.
	ErrServerClosed = errors.New("central: server closed")

	// ErrInvalidConfig: a Config field has a value the server cannot use.
	ErrInvalidConfig = errors.New("central: invalid config")
)

// wireError turns an error of the generator or codec into the error a
// response carries; the order matters, as some errors wrap others.
func wireError(err error) *wire.Error {
	var code wire.Code
	switch {
	case errors.Is(err, core.ErrFenced):
		code = wire.LeaseLost
	case errors.Is(err, core.ErrClockBehind), errors.Is(err, core.ErrBeforeEpoch), errors.Is(err, core.ErrEndOfTime):
		code = wire.Clock
	case errors.Is(err, core.ErrGuard), errors.Is(err, core.ErrClosed), errors.Is(err, core.ErrBusy),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code = wire.Unavailable
	case errors.Is(err, core.ErrOutOfRange), errors.Is(err, core.ErrInvalidCount):
		code = wire.InvalidArgument
	default:
		// Unexpected: the details go to the log, not to the caller.
		return &wire.Error{Code: wire.Internal, Message: "internal error"}
	}
	return &wire.Error{Code: code, Message: err.Error()}
}
