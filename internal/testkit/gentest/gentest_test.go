package gentest_test

import (
	"context"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
)

func TestManual(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gen, clock := gentest.Manual(t, core.Config{Machine: 3}, start)
	id, err := gen.NextID(context.Background(), core.Embedded)
	if err != nil {
		t.Fatal(err)
	}
	if e := gen.Codec().Explain(id); !e.Instant.Equal(start) || e.Machine != 3 {
		t.Errorf("issued %+v; want machine 3 at %v", e, start)
	}
	clock.Advance(time.Hour)
	if id, err = gen.NextID(context.Background(), core.Embedded); err != nil {
		t.Fatal(err)
	}
	if e := gen.Codec().Explain(id); !e.Instant.Equal(start.Add(time.Hour)) {
		t.Errorf("after Advance issued at %v; want %v (the returned clock drives the generator)", e.Instant, start.Add(time.Hour))
	}
	own := core.NewManualClock(start.Add(time.Hour))
	if _, c := gentest.Manual(t, core.Config{Clock: own}, start); c != own {
		t.Error("Manual replaced the config's manual clock")
	}
}
