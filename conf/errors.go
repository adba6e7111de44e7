package conf

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error Load and Validate return for a bad value or
// key matches ErrConfig with errors.Is; the individual errors are
// *KeyError values, which name the key.
var (
	// ErrConfig: a configuration value that cannot be used.
	ErrConfig = errors.New("conf: invalid configuration")

	// ErrUnknownKey: a key in the YAML file, or a VESTA_* environment
	// variable, that names no setting (usually a typo). It wraps ErrConfig.
	ErrUnknownKey = fmt.Errorf("%w: unknown key", ErrConfig)
)

// KeyError reports one bad key.
type KeyError struct {
	// Key is the YAML path, e.g. "id.layout"; for an unknown environment
	// variable it is the variable's name.
	Key string
	// Msg shows the value and what is allowed, e.g.
	// `"foo"; want sorted, vesta or leaf`. Secrets are never shown.
	Msg string
	// Source says where the value came from, e.g. "file vesta.yaml",
	// "env VESTA_ID_LAYOUT" or "flag --layout"; "" when unknown (a Config
	// built in code, or the default).
	Source string

	unknown bool
	err     error // an error of another package it also matches, or nil
}

func (e *KeyError) Error() string {
	s := "conf: " + e.Msg
	if e.Key != "" {
		s = "conf: " + e.Key + ": " + e.Msg
	}
	if e.Source != "" {
		s += " (" + e.Source + ")"
	}
	return s
}

// Unwrap makes errors.Is(err, ErrConfig) true, errors.Is(err,
// ErrUnknownKey) true for an unknown key, errors.Is(err,
// machineid.ErrNoMachineID) true for the error of RequireMachine, and
// keeps the error of a type that refused its text (core.ErrUnknownName,
// machineid.ErrRange).
func (e *KeyError) Unwrap() []error {
	out := []error{ErrConfig}
	if e.unknown {
		out[0] = ErrUnknownKey
	}
	if e.err != nil {
		out = append(out, e.err)
	}
	return out
}

// KeyErrors returns the *KeyError values inside err (as joined by Load and
// Validate), in order, so a caller can tell which keys were rejected.
func KeyErrors(err error) []*KeyError {
	var out []*KeyError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *KeyError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, e := range e.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}
