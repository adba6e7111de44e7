// The embedded issuer on a Redis lease: the redis provider linked by its
// import. libdeps_test.go holds that it adds go-redis and nothing of etcd.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
	_ "github.com/vesta-go/vesta/machineid/redislease"
)

func main() {
	cfg := embed.DefaultConfig()
	cfg.Machine.Providers = []string{machineid.ProviderRedis}
	cfg.Machine.Redis.Addrs = []string{"127.0.0.1:6379"}
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
