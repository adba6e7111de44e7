package embed_test

import (
	"context"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit/embedtest"
)

var sink core.ID

// BenchmarkNextID is the embedded issuer's cost per ID, alone and from
// every core at once: what the issuer adds to core's BenchmarkNextID (its
// metrics add nothing: package prommetrics reads the generator's Stats
// when scraped). MaxBorrow is large enough that the sequence ceiling never
// makes a caller wait.
func BenchmarkNextID(b *testing.B) {
	ctx := context.Background()
	issuer := func(b *testing.B) *embed.Issuer {
		cfg := embed.DefaultConfig()
		cfg.DataDir, cfg.MaxBorrow, cfg.Machine.Static = "", 24*time.Hour, new(core.MachineID(1))
		return embedtest.Open(b, cfg)
	}
	b.Run("serial", func(b *testing.B) {
		is := issuer(b)
		for b.Loop() {
			id, err := is.NextID(ctx)
			if err != nil {
				b.Fatal(err)
			}
			sink = id
		}
	})
	b.Run("parallel", func(b *testing.B) {
		is := issuer(b)
		b.RunParallel(func(pb *testing.PB) {
			var local core.ID
			for pb.Next() {
				id, err := is.NextID(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				local = id
			}
			sink = local
		})
	})
}
