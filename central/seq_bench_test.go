package central_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/segment"
)

// seqBenchServer serves a segment sequencer on an in-memory store (tag
// "bench", step 1,000,000): the server's own cost of Vesta.NextSeq, to
// compare with BenchmarkGenID at the same callers.
func seqBenchServer(b *testing.B) string {
	store := segment.NewMemStore()
	if err := store.Create(context.Background(), segment.TagInfo{Tag: "bench", MaxID: 1, Step: 1_000_000}); err != nil {
		b.Fatal(err)
	}
	is := seqIssuer(b, store)
	_, addr := serve(b, newGen(b, core.DefaultConfig()), central.Config{Sequences: is})
	return addr.String()
}

// BenchmarkNextSeq: Vesta.NextSeq through a pipelining client over one
// loopback connection (as BenchmarkGenID), and through the Go client with
// and without its per-tag prefetch.
func BenchmarkNextSeq(b *testing.B) {
	for _, callers := range benchCallers {
		b.Run(fmt.Sprintf("rpc/callers=%d", callers), func(b *testing.B) {
			c := newPipeConn(b, seqBenchServer(b))
			chans := replyChans(callers)
			params := &wire.NextSeqParams{Tag: "bench"}
			run(b, callers, func(i int) error {
				_, err := c.call(wire.ProcNextSeq, params, chans[i])
				return err
			})
		})
	}
	for _, prefetch := range []int{0, 10000} {
		for _, callers := range benchCallers {
			b.Run(fmt.Sprintf("client-prefetch=%d/callers=%d", prefetch, callers), func(b *testing.B) {
				cl := benchClient(b, seqBenchServer(b), prefetch)
				ctx := context.Background()
				run(b, callers, func(int) error {
					_, err := cl.NextSeq(ctx, "bench")
					return err
				})
			})
		}
	}
}
