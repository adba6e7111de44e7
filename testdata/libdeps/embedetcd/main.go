// The embedded issuer on an etcd lease: the etcd provider linked by its
// import. libdeps_test.go holds that it adds the etcd client and nothing
// of go-redis.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
	_ "github.com/vesta-go/vesta/machineid/etcdlease"
)

func main() {
	cfg := embed.DefaultConfig()
	cfg.Machine.Providers = []string{machineid.ProviderEtcd}
	cfg.Machine.Etcd.Endpoints = []string{"127.0.0.1:2379"}
	is, err := embed.Open(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer is.Close()
	id, err := is.NextID(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(id)
}
