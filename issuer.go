package vesta

import (
	"context"
	"time"

	"github.com/vesta-go/vesta/core"
)

// Issuer issues and decodes IDs. The embedded issuer (embed.Issuer) and the
// central client (client.Client) both implement it.
type Issuer interface {
	// NextID issues one ID.
	NextID(ctx context.Context) (core.ID, error)
	// NextIDs issues n IDs in increasing order.
	NextIDs(ctx context.Context, n int) ([]core.ID, error)
	// Explain takes an ID apart with the issuer's layout and epoch.
	Explain(id core.ID) core.Explanation
	// Make builds an ID from fields; missing ones take the issuer's own.
	Make(p core.Partial) (core.ID, error)
	// TransTime turns a time field of the issuer's type into an instant.
	TransTime(units uint64) (time.Time, error)
	// Close releases the issuer; it is idempotent.
	Close() error
}
