package api

import (
	"fmt"
	"strings"
)

// Code is the stable first word of an error string.
type Code string

// The error codes. A client decides on the code alone; the message after
// it is for people.
const (
	// InvalidArgument: the call cannot succeed as sent (unknown method,
	// bad params, a value out of range). Retrying elsewhere will not help.
	InvalidArgument Code = "invalid_argument"
	// Unavailable: this server cannot answer now (shutting down, closed
	// generator, time guard store failing, overloaded). Another may.
	Unavailable Code = "unavailable"
	// NotFound: the call names something this server does not have: an
	// unknown tag of segment sequences, sequences off, or masking off (no
	// key). Retrying elsewhere will not help (the servers of a fleet share
	// one store and one configuration).
	NotFound Code = "not_found"
	// LeaseLost: the server lost its machine-ID lease and is fenced.
	LeaseLost Code = "lease_lost"
	// Clock: the server's clock is unusable (behind its time guard, before
	// the epoch, past the end of time).
	Clock Code = "clock"
	// Internal: anything else; a bug or an unexpected failure.
	Internal Code = "internal"
)

var codes = [...]Code{InvalidArgument, NotFound, Unavailable, LeaseLost, Clock, Internal}

// Codes returns every code, in the order above.
func Codes() []Code { return codes[:] }

// Known reports whether c is one of the codes of this package.
func (c Code) Known() bool {
	for _, k := range codes {
		if c == k {
			return true
		}
	}
	return false
}

// Retryable reports whether another server may succeed where this one
// returned c: every server has its own machine ID, lease and clock.
func (c Code) Retryable() bool {
	return c == Unavailable || c == LeaseLost || c == Clock
}

// Error is an error as carried by a response: a code and a message.
type Error struct {
	Code    Code
	Message string
}

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error returns the wire form, "code: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is makes errors.Is(err, &Error{Code: c}) match any *Error with code c, so
// callers can test codes without string matching. A target with a message
// matches only that message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// ParseError splits an error string from a response into code and message.
// A string without a known code (a server of a later version, or not this
// server at all) is Internal with the whole string as message.
func ParseError(s string) *Error {
	code, msg, ok := strings.Cut(s, ":")
	if ok && Code(code).Known() {
		return &Error{Code: Code(code), Message: strings.TrimPrefix(msg, " ")}
	}
	if Code(s).Known() {
		return &Error{Code: Code(s)}
	}
	return &Error{Code: Internal, Message: s}
}
