package client_test

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
)

// The quick start: a central server (normally `vesta serve`), and an
// application that issues IDs through the client, with the embedded
// fallback ready for when no server answers.
func Example() {
	ctx := context.Background()

	// The server side, here in-process so that the example runs.
	gen, err := core.New(ctx, core.Config{Machine: 1000})
	if err != nil {
		panic(err)
	}
	defer gen.Close()
	srv, err := central.NewServer(gen, central.Config{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)

	// The application side.
	dir, err := os.MkdirTemp("", "vesta-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfg := client.DefaultConfig(ln.Addr().String())            // every server's host:port
	cfg.FallbackConfig.Machine.Static = new(core.MachineID(1)) // this instance's own embedded machine ID; there is no default
	cfg.FallbackConfig.DataDir = dir                           // the fallback's time guard
	c, err := client.New(ctx, cfg)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	id, err := c.NextID(ctx)
	if err != nil {
		panic(err)
	}
	e := c.Explain(id)
	fmt.Println(e.Method, e.Machine)
	// Output: central 1000
}
