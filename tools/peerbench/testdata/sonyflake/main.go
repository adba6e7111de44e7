// sony/sonyflake's counterpart of vesta's testdata/libdeps (no tag): a
// generator on a fixed machine ID, printing one ID (sizes_test.go).
package main

import (
	"fmt"
	"os"

	"github.com/sony/sonyflake/v2"
)

func main() {
	sf, err := sonyflake.New(sonyflake.Settings{MachineID: func() (int, error) { return 42, nil }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	id, err := sf.NextID()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(id)
}
