package vesta_test

import (
	vesta "github.com/vesta-go/vesta"
	"github.com/vesta-go/vesta/embed"
)

// The embedded issuer is an Issuer; so is the central client.
var _ vesta.Issuer = (*embed.Issuer)(nil)
