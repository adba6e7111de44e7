//go:build client

package main

import (
	"context"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
)

// open makes a client of the central server at 127.0.0.1:7070 whose
// embedded fallback runs on static machine ID 43.
func open(ctx context.Context) (issuer, error) {
	cfg := client.DefaultConfig("127.0.0.1:7070")
	cfg.FallbackConfig.Machine.Static = new(core.MachineID(43))
	cfg.FallbackConfig.DataDir = "./vesta-data"
	return client.New(ctx, cfg)
}
