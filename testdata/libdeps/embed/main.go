// The program a new user writes first: an embedded issuer on a static
// machine ID, printing one ID. libdeps_test.go holds what it links to the
// goals (no Redis, etcd, gRPC, zap, protobuf or Prometheus client; at most
// 15 non-standard packages; at most 5 MB built with a plain go build).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
)

func main() {
	cfg := embed.DefaultConfig()
	cfg.Machine.Static = new(core.MachineID(42))
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
