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

// FallbackWaiters is how many calls wait for the fallback to be ready, so
// that tests move a fake clock only once a call really waits.
func (c *Client) FallbackWaiters() int64 { return c.fb.waiting.Load() }
