package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
)

// Client.Holder through real servers: the hold that covers an ID; a
// history no server can read is ErrUnavailable naming the machine ID; a
// server without a history says so.
func TestHolder(t *testing.T) {
	hold := api.Hold{Hold: "AAAA", Host: "node-a", PID: 7, Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), TTL: 15 * time.Second}
	hs := api.NewHolders(func(ctx context.Context, machine uint16) (api.HoldHistory, error) {
		return api.HoldHistory{Store: "redis", Match: func(_, _ time.Time) api.HolderMatch {
			return api.HolderMatch{Holds: []api.Hold{hold}}
		}}, nil
	})
	srv := startCentral(t, 1000, central.Config{Holders: hs})
	c := newClient(t, testConfig(t, srv.addr))
	ctx := context.Background()
	id, err := c.NextID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Holder(ctx, id)
	if err != nil || h.Known != 1 || len(h.Holds) != 1 || h.Holds[0].Hold != "AAAA" || h.Holds[0].Started != "2026-12-01T00:00:00Z" || h.Holds[0].TTLMS != 15000 {
		t.Fatalf("Holder = %+v, %v", h, err)
	}

	downSrv := startCentral(t, 1001, central.Config{Holders: api.NewHolders(func(context.Context, uint16) (api.HoldHistory, error) {
		return api.HoldHistory{}, errors.New("redis [127.0.0.1:1]: connection refused")
	})})
	cd := newClient(t, testConfig(t, downSrv.addr))
	_, err = cd.Holder(ctx, id)
	if !errors.Is(err, client.ErrUnavailable) || !errtest.Wraps(err, &api.Error{Code: api.Unavailable}, "the hold history of machine 1000 cannot be read") {
		t.Fatalf("Holder with the store down: %v", err)
	}

	plain := startCentral(t, 1002, central.Config{})
	h, err = newClient(t, testConfig(t, plain.addr)).Holder(ctx, id)
	if err != nil || h.Known != 0 || h.Reason != api.NoHistory || h.Store != "none" {
		t.Fatalf("Holder of a server without history = %+v, %v", h, err)
	}
}
