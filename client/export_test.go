package client

import (
	"context"

	"github.com/vesta-go/vesta/core"
)

// NewWithClock is New with the clock that times the waits at the ceiling
// and the servers' busy marks, so that tests can share a core.ManualClock
// with the servers' generators.
func NewWithClock(ctx context.Context, cfg Config, clock core.Clock) (*Client, error) {
	return newClient(ctx, cfg, clock)
}
