package api

import (
	"context"
	"errors"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/mask"
	"github.com/vesta-go/vesta/segment"
)

// errorCodes is the one mapping from the errors a call can end with to
// their codes, shared by the central server (its answers), the REST server
// (its codes and HTTP statuses) and Leaf's routes (Leaf's result codes).
// Rows are tried in order and the first whose error matches (errors.Is)
// wins: a fenced error wraps the fencer's cause, so it comes first; an
// unavailable sequence store's error may wrap a context's, which is
// unavailable too. An error of a new kind gets its row here; whatever
// matches no row is Internal.
var errorCodes = []struct {
	code Code
	errs []error
}{
	{LeaseLost, []error{core.ErrFenced}},
	{Clock, []error{core.ErrClockBehind, core.ErrBeforeEpoch, core.ErrEndOfTime}},
	// Masking off (no key) is answered as sequences off are: the server
	// lacks what the call names, and the servers of a fleet share one
	// configuration.
	{NotFound, []error{segment.ErrUnknownTag, mask.ErrNoKeys}},
	{Unavailable, []error{core.ErrGuard, core.ErrClosed, core.ErrBusy, segment.ErrUnavailable, segment.ErrClosed,
		context.DeadlineExceeded, context.Canceled}},
	{InvalidArgument, []error{core.ErrOutOfRange, core.ErrInvalidCount, core.ErrInvalidID, core.ErrUnknownName,
		segment.ErrInvalidTag, segment.ErrInvalidCount,
		mask.ErrSyntax, mask.ErrWrongKind, mask.ErrRetired, mask.ErrImplausible, mask.ErrName}},
}

// CodeOf returns the code err is answered with: the code of an *Error it
// holds, else that of the first row of the mapping above it matches, else
// Internal. CodeOf(nil) is "".
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var we *Error
	if errors.As(err, &we) {
		return we.Code
	}
	for _, row := range errorCodes {
		for _, target := range row.errs {
			if errors.Is(err, target) {
				return row.code
			}
		}
	}
	return Internal
}

// ErrorOf returns the error an answer carries for err: an *Error it holds
// as it is; else CodeOf(err) with err's text as the message, except that
// an Internal error says only "internal error" (the details are for the
// server's log, not for callers). ErrorOf(nil) is nil.
func ErrorOf(err error) *Error {
	if err == nil {
		return nil
	}
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	code := CodeOf(err)
	if code == Internal {
		return &Error{Code: Internal, Message: "internal error"}
	}
	return &Error{Code: code, Message: err.Error()}
}
