package embedtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit/embedtest"
)

// TestStatic: the issuer serves on its machine ID until the test ends,
// then it is closed.
func TestStatic(t *testing.T) {
	var is *embed.Issuer
	t.Run("open", func(t *testing.T) {
		is = embedtest.Static(t, 42)
		id, err := is.NextID(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if m := is.Generator().Codec().Explain(id).Machine; m != 42 {
			t.Fatalf("machine %d; want 42", m)
		}
	})
	if _, err := is.NextID(context.Background()); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("NextID after the test ended: %v; want core.ErrClosed", err)
	}
}
