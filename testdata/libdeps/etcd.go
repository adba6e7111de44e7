//go:build etcd

package main

import (
	"github.com/vesta-go/vesta/machineid"
	_ "github.com/vesta-go/vesta/machineid/etcdlease" // links the etcd provider
)

func init() { provider = machineid.ProviderEtcd }
