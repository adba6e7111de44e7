//go:build redis

package main

import (
	"github.com/vesta-go/vesta/machineid"
	_ "github.com/vesta-go/vesta/machineid/redislease" // links the redis provider
)

func init() { provider = machineid.ProviderRedis }
