package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
)

// Error codes of the wire format (see the package comment). The first
// ones are the central server's (api.Code); the others exist only in
// HTTP.
const (
	codeInvalidArgument  = string(api.InvalidArgument)
	codeUnavailable      = string(api.Unavailable)
	codeInternal         = string(api.Internal)
	codeUnauthenticated  = "unauthenticated"
	codeNotFound         = string(api.NotFound)
	codeMethodNotAllowed = "method_not_allowed"
	codeTooManyRequests  = "too_many_requests"
	codeMisdirected      = "misdirected_request" // a Host not the server's (origin.go)
	codePermissionDenied = "permission_denied"   // a cross-site browser request (origin.go)
)

// statusOf is the HTTP status of each code of api.CodeOf: a caller's
// mistake is a 400, whatever another server may answer a 503, a bug a 500.
var statusOf = map[api.Code]int{
	api.InvalidArgument: http.StatusBadRequest,
	api.NotFound:        http.StatusNotFound,
	api.Unavailable:     http.StatusServiceUnavailable,
	api.LeaseLost:       http.StatusServiceUnavailable,
	api.Clock:           http.StatusServiceUnavailable,
	api.Internal:        http.StatusInternalServerError,
}

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

// fromCore answers an error of the generator or codec with the code of
// api.CodeOf, the one mapping the central server uses too.
func fromCore(err error) *apiError {
	we := api.ErrorOf(err)
	status, ok := statusOf[we.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	ae := &apiError{status: status, code: string(we.Code), message: we.Message}
	var re *core.RangeError
	switch {
	case errors.Is(err, core.ErrBusy):
		return busy(time.Second, we.Message)
	case we.Code == api.Internal:
		ae.cause = err
	case we.Code == api.InvalidArgument && errors.As(err, &re):
		// Named as every parameter error of this server is.
		return badParam(re.Field, "%d out of range 0-%d", re.Value, re.Max)
	case we.Code == api.Unavailable && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		ae.message, ae.cause = "request timed out: "+we.Message, err
	case we.Code == api.Unavailable:
		ae.cause = err // the store's or guard's failure, kept for errors.Is
	}
	return ae
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
