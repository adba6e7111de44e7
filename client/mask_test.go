package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/masktest"
	"github.com/vesta-go/vesta/mask"
)

// maskServers starts two central servers sharing a masking key, as a
// fleet's servers share their configuration.
func maskServers(t testing.TB) ([]*centralServer, *mask.Maskers) {
	t.Helper()
	ms := masktest.Maskers(t, core.Config{MaxBorrow: time.Second})
	var out []*centralServer
	for i := range 2 {
		out = append(out, startCentral(t, core.MachineID(1000+i), central.Config{Masks: ms, MaxBatch: 300}))
	}
	return out, ms
}

// The client masks IDs and unmasks them through real servers, in pieces
// when a call holds more than a server takes, and a server's refusal comes
// back as invalid_argument naming the text; masking has no fallback.
func TestMaskUnmask(t *testing.T) {
	servers, ms := maskServers(t)
	cfg := testConfig(t, servers[0].addr, servers[1].addr)
	c := newClient(t, cfg)
	ctx := context.Background()
	ids, err := c.NextIDs(ctx, 2500) // pieces of the servers' max_batch, 300
	if err != nil {
		t.Fatal(err)
	}
	masks, err := c.Mask(ctx, "acme", "ord", ids...)
	if err != nil {
		t.Fatal(err)
	}
	orders, _ := ms.Masker("acme", "ord")
	for i, m := range masks {
		if m != orders.Mask(ids[i]) {
			t.Fatalf("mask %d: %s; want %s", i, m, orders.Mask(ids[i]))
		}
	}
	back, err := c.Unmask(ctx, "acme", "ord", masks...)
	if err != nil || !slices.Equal(back, ids) {
		t.Fatalf("Unmask: %d IDs, %v", len(back), err)
	}
	if got, err := c.Mask(ctx, "acme", "ord"); err != nil || len(got) != 0 {
		t.Fatalf("Mask of nothing: %v, %v", got, err)
	}

	bad := slices.Clone(masks[:1500])
	bad[1200] = "ord_0000000000000"
	_, err = c.Unmask(ctx, "acme", "ord", bad...)
	if !errtest.Wraps(err, &api.Error{Code: api.InvalidArgument}, "masks 1200-1499", "masks[0]", "not a masked ID of this deployment") {
		t.Fatalf("a bad mask: %v", err)
	}
	_, err = c.Unmask(ctx, "acme", "usr", masks[0])
	if !errtest.Wraps(err, &api.Error{Code: api.InvalidArgument}, `is a mask of kind "ord", not "usr"`) {
		t.Fatalf("another kind: %v", err)
	}
	if _, err := c.Mask(ctx, "acme", "o-rd", ids[0]); !errors.Is(err, &api.Error{Code: api.InvalidArgument}) {
		t.Fatalf("a bad kind: %v", err)
	}

	// Without a key: not_found, at once, from the first server asked.
	plain := startCentral(t, 1010, central.Config{})
	cfg = testConfig(t, plain.addr)
	c = newClient(t, cfg)
	if _, err := c.Mask(ctx, "", "", ids[0]); !errtest.Wraps(err, &api.Error{Code: api.NotFound}, "VESTA_MASK_KEY_FILE") {
		t.Fatalf("no key: %v", err)
	}
	// No server: unavailable, no fallback.
	plain.kill()
	if _, err := c.Unmask(ctx, "", "", masks[0]); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("no server: %v", err)
	}
}
