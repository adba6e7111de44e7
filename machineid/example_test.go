package machineid_test

import (
	"context"
	"fmt"
	"os"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// The order of operations for a server; an embedded issuer passes
// core.Embedded. With Providers [redis, static] the same code leases
// an ID from Redis and keeps its time guard there.
func Example() {
	ctx := context.Background()
	cfg := machineid.DefaultConfig()
	cfg.Static = new(core.MachineID(1023)) // this host's own; there is no default
	lease, err := machineid.Acquire(ctx, cfg, core.Central)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lease.Close(ctx) // after the generator's Close
	dir, _ := os.MkdirTemp("", "vesta-example")
	defer os.RemoveAll(dir)
	guard, err := lease.TimeGuard(dir) // a file here; Redis for a Redis lease
	if err != nil {
		fmt.Println(err)
		return
	}
	gen, err := core.New(ctx, core.Config{Machine: lease.ID(), Guard: guard})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gen.Close()
	if err := lease.Attach(gen); err != nil {
		fmt.Println(err)
		return
	}
	id, _ := gen.NextID(ctx, core.Central)
	fmt.Println(lease.Provider(), lease.ID(), gen.Codec().Explain(id).Machine)
	// Output: static 1023 1023
}

func ExampleAcquire_outsideTheRange() {
	cfg := machineid.DefaultConfig()
	cfg.Static = new(core.MachineID(7))
	_, err := machineid.Acquire(context.Background(), cfg, core.Central)
	fmt.Println(err)
	// Output: machineid: invalid config: Static: core: bad machine-ID range: machine ID 7 is outside the server range 924-1023
}

func ExampleAcquire_chain() {
	cfg := machineid.DefaultConfig()
	cfg.Providers = []string{machineid.ProviderK8s, machineid.ProviderStatic}
	cfg.Hostname, cfg.K8sOffset, cfg.Static = "laptop", 924, new(core.MachineID(1000))
	lease, err := machineid.Acquire(context.Background(), cfg, core.Central)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lease.Close(context.Background())
	fmt.Println(lease.Provider(), lease.ID())
	cfg.Providers = []string{machineid.ProviderK8s}
	_, err = machineid.Acquire(context.Background(), cfg, core.Central)
	fmt.Println(err)
	// Output:
	// static 1000
	// machineid: no provider gave a machine ID: k8s: machineid: provider not available here: hostname "laptop" has no StatefulSet ordinal (a -N suffix)
}

// The fleet view: once listening, a server advertises its addresses, and
// Fleet lists every holder under the key prefix from the store (a fixed ID
// has none, so it lists itself alone).
func ExampleLease_Fleet() {
	ctx := context.Background()
	cfg := machineid.DefaultConfig()
	cfg.Static = new(core.MachineID(1023))
	lease, err := machineid.Acquire(ctx, cfg, core.Central)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lease.Close(ctx)
	_ = lease.Advertise(ctx, machineid.Listeners{RPC: "10.0.0.1:7070", HTTP: "10.0.0.1:7080", Host: "node-a"})
	fleet, err := lease.Fleet(ctx)
	if err != nil {
		fmt.Println(err) // the store is down: fleet.List is this process alone
	}
	fmt.Println("store:", fleet.Store)
	for _, m := range fleet.List {
		fmt.Println(m.Machine, m.Self, m.State, m.Host, m.RPC, m.HTTP)
	}
	// Output:
	// store: none
	// 1023 true none node-a 10.0.0.1:7070 10.0.0.1:7080
}
