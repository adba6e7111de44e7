//go:build !client

package main

import (
	"context"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
)

// provider, when a variant sets it, is the leasing provider to take the
// machine ID from, its store at the default address (Redis at
// 127.0.0.1:6379, etcd at 127.0.0.1:2379); "" is static machine ID 42.
var provider string

// open opens an embedded issuer.
func open(ctx context.Context) (issuer, error) {
	cfg := embed.DefaultConfig()
	if provider == "" {
		cfg.Machine.Static = new(core.MachineID(42))
	} else {
		cfg.Machine.Providers = []string{provider}
	}
	return embed.Open(ctx, cfg)
}
