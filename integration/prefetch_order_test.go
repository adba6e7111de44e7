package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
)

// TestPrefetchBatchOrder: NextIDs promises n IDs in increasing order, also
// when it serves them from the prefetch buffer, which holds refills from
// several servers back to back (a batch of 999 straddles them).
func TestPrefetchBatchOrder(t *testing.T) {
	a := serve(t, "a", serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1000"))
	b := serve(t, "b", serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1001"))
	cfg := client.DefaultConfig(b.Central, a.Central)
	cfg.NoFallback, cfg.Prefetch = true, 20000
	c := clienttest.Open(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 400 {
		ids, err := c.NextIDs(ctx, 999)
		if err != nil {
			t.Fatal(err)
		}
		if err := increasing(ids); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
}
