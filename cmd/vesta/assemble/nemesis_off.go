//go:build !nemesis

package assemble

import (
	"log/slog"

	"github.com/vesta-go/vesta/core"
)

// nemesisClock is the clock-fault hook of the nemesis build (nemesis.go).
// The default build has none: the server runs on core.SystemClock, and
// conf refuses the hook's variable as unknown.
func nemesisClock(*slog.Logger) (core.Clock, func()) { return nil, func() {} }
