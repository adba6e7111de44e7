package central

import (
	"errors"
)

// Sentinel errors.
var (
	// ErrServerClosed: Serve was called on, or returned because of, a
	// server that was shut down or closed.
	ErrServerClosed = errors.New("central: server closed")

	// ErrConfig: a Config field has a value the server cannot use.
	ErrConfig = errors.New("central: invalid config")
)
