package conf_test

import (
	"fmt"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
)

func ExampleLoad() {
	l, err := conf.Load(conf.Options{
		// A file would come first: File: "vesta.yaml".
		Env: []string{
			"VESTA_ID_LAYOUT=vesta",
			"VESTA_MACHINE_PROVIDERS=redis,static",
			"VESTA_MACHINE_ID=1023",
			"VESTA_MACHINE_REDIS_SERVER_RANGE=924-1003", // leases hand out 924-1003; 1004-1023 are for fixed IDs
			"VESTA_MACHINE_REDIS_PASSWORD=hunter2",
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := l.Config
	fmt.Println(c.ID.Layout, c.Machine.Providers, *c.Machine.ID, c.Machine.LeaseRange(core.Central), c.Machine.LeaseRange(core.Embedded))
	fmt.Println("password:", c.Machine.Redis.Password)
	fmt.Println(l.Sources())
	// Output:
	// vesta [redis static] 1023 924-1003 0-923
	// password: [redacted]
	// [env VESTA_ID_LAYOUT env VESTA_MACHINE_ID env VESTA_MACHINE_PROVIDERS env VESTA_MACHINE_REDIS_PASSWORD env VESTA_MACHINE_REDIS_SERVER_RANGE]
}

// A static ID that Redis leases could also hand out is refused, naming
// both keys.
func ExampleConfig_Validate_leaseRange() {
	c := conf.DefaultConfig()
	c.Machine.Providers, c.Machine.ID = []string{"redis", "static"}, new(1023)
	fmt.Println(c.Validate())
	// Output:
	// conf: machine.id: 1023 lies in the IDs leases hand out (machine.redis.server_range 924-1023, all of machine.server_range by default with the redis provider), so a leasing host could take it while this one holds it; narrow machine.redis.server_range (e.g. 924-1022) and take fixed IDs from the rest
}

func ExampleConfig_Validate() {
	c := conf.DefaultConfig()
	c.Machine.Providers = []string{"redis", "staic"}
	c.Central.MaxBatch = 2_000_000
	fmt.Println(c.Validate())
	// Output:
	// conf: machine.providers: "staic"; want static, iptable, redis, k8s or etcd
	// conf: central.max_batch: central: invalid config: MaxBatch: 2000000; want 0 (meaning 10000) to 1000000
}
