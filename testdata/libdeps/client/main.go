// A Go client of central servers with its embedded fallback on a static
// machine ID, printing one ID (the fallback's while no server answers).
// libdeps_test.go holds what it links to the goals.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
)

func main() {
	cfg := client.DefaultConfig("127.0.0.1:7070")
	cfg.FallbackConfig.Machine.Static = new(core.MachineID(43))
	cfg.FallbackConfig.DataDir = "./vesta-data"
	c, err := client.New(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	id, err := c.NextID(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(id)
}
