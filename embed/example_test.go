package embed_test

import (
	"context"
	"fmt"
	"os"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
)

// The README's embedded quick start: issue IDs in-process.
func Example() {
	dir, _ := os.MkdirTemp("", "vesta-example")
	defer os.RemoveAll(dir)

	cfg := embed.DefaultConfig()
	cfg.Machine.Static = new(core.MachineID(42)) // this instance's own ID, from the embedded range 0-923; there is no default
	cfg.DataDir = dir                            // the time guard: restarts never re-issue IDs
	ids, err := embed.Open(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	defer ids.Close()

	id, err := ids.NextID(context.Background())
	if err != nil {
		panic(err)
	}
	e := ids.Explain(id)
	fmt.Println(e.Machine, e.Method, e.Type)

	batch, _ := ids.NextIDs(context.Background(), 3)
	fmt.Println(len(batch), batch[0] < batch[1] && batch[1] < batch[2])

	made, _ := ids.Make(core.Partial{Time: e.Time, Seq: e.Seq})
	fmt.Println(made == id)
	// Output:
	// 42 embedded max-peak
	// 3 true
	// true
}
