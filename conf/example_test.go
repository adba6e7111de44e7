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
			"VESTA_MACHINE_REDIS_PASSWORD=hunter2",
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := l.Config
	fmt.Println(c.ID.Layout, c.Machine.Providers, c.Machine.ResolveID(core.Central), c.Machine.ResolveID(core.Embedded))
	fmt.Println("password:", c.Machine.Redis.Password)
	fmt.Println(l.Sources())
	// Output:
	// vesta [redis static] 1023 0
	// password: [redacted]
	// [env VESTA_ID_LAYOUT env VESTA_MACHINE_PROVIDERS env VESTA_MACHINE_REDIS_PASSWORD]
}

func ExampleConfig_Validate() {
	c := conf.DefaultConfig()
	c.Machine.Providers = []string{"redis", "staic"}
	c.Central.MaxBatch = 0
	fmt.Println(c.Validate())
	// Output:
	// conf: machine.providers: "staic"; want redis, k8s, iptable or static
	// conf: central.max_batch: 0; want 1-1000000
}
