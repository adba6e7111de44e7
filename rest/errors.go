package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vesta-go/vesta/core"
)

// Error codes of the wire format (see the package comment). The first
// ones are the central server's; the others exist only in HTTP.
const (
	codeInvalidArgument  = "invalid_argument"
	codeUnauthenticated  = "unauthenticated"
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codeUnavailable      = "unavailable"
	codeLeaseLost        = "lease_lost"
	codeClock            = "clock"
	codeInternal         = "internal"
)

// apiError is an error answer: its status, code and the message the
// caller sees. cause, when set, is logged and never sent.
type apiError struct {
	status     int
	code       string
	message    string
	cause      error
	retryAfter int // seconds; > 0 sends Retry-After
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func (e *apiError) Unwrap() error { return e.cause }

// badParam is a 400 whose message starts with the parameter's name.
func badParam(name, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: codeInvalidArgument, message: name + ": " + fmt.Sprintf(format, args...)}
}

var errInternal = &apiError{status: http.StatusInternalServerError, code: codeInternal, message: "internal error"}

// classify turns any error a handler returns into its answer.
func classify(err error, c echo.Context) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return fromEcho(he, c)
	}
	return fromCore(err)
}

// fromCore maps the generator's errors with errors.Is; the order matters,
// since a fenced error wraps whatever cause the fencer gave.
func fromCore(err error) *apiError {
	unavailable := func(code string) *apiError {
		return &apiError{status: http.StatusServiceUnavailable, code: code, message: strings.TrimPrefix(err.Error(), "core: ")}
	}
	var re *core.RangeError
	switch {
	case errors.Is(err, core.ErrFenced):
		return unavailable(codeLeaseLost)
	case errors.Is(err, core.ErrEndOfTime), errors.Is(err, core.ErrBeforeEpoch), errors.Is(err, core.ErrClockBehind):
		return unavailable(codeClock)
	case errors.Is(err, core.ErrBusy):
		return busy(time.Second, strings.TrimPrefix(err.Error(), "core: "))
	case errors.Is(err, core.ErrGuard), errors.Is(err, core.ErrClosed):
		return unavailable(codeUnavailable)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			message: "request timed out: " + strings.TrimPrefix(err.Error(), "core: "), cause: err}
	case errors.As(err, &re):
		return badParam(re.Field, "%d out of range 0-%d", re.Value, re.Max)
	case errors.Is(err, core.ErrInvalidID), errors.Is(err, core.ErrUnknownName), errors.Is(err, core.ErrInvalidCount):
		return &apiError{status: http.StatusBadRequest, code: codeInvalidArgument, message: strings.TrimPrefix(err.Error(), "core: ")}
	}
	e := *errInternal
	e.cause = err
	return &e
}

// fromEcho maps the errors echo itself raises: unknown routes, wrong
// methods, and anything else with an HTTP status.
func fromEcho(he *echo.HTTPError, c echo.Context) *apiError {
	r := c.Request()
	switch he.Code {
	case http.StatusNotFound:
		return &apiError{status: he.Code, code: codeNotFound, message: fmt.Sprintf("no route %s %q", r.Method, clip(r.URL.Path))}
	case http.StatusMethodNotAllowed:
		return &apiError{status: he.Code, code: codeMethodNotAllowed,
			message: fmt.Sprintf("method %q not allowed on %q; allowed: %s", clip(r.Method), clip(r.URL.Path), c.Response().Header().Get(echo.HeaderAllow))}
	case http.StatusServiceUnavailable:
		return &apiError{status: he.Code, code: codeUnavailable, message: fmt.Sprint(he.Message), cause: he}
	}
	if he.Code >= 400 && he.Code < 500 {
		return &apiError{status: he.Code, code: codeInvalidArgument, message: strings.ToLower(fmt.Sprint(he.Message))}
	}
	e := *errInternal
	e.cause = he
	return &e
}

// clip keeps hostile input from flooding answers and logs.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
