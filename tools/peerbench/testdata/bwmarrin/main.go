// bwmarrin/snowflake's counterpart of vesta's testdata/libdeps (no tag): a
// node on a fixed number, printing one ID (sizes_test.go).
package main

import (
	"fmt"
	"os"

	"github.com/bwmarrin/snowflake"
)

func main() {
	node, err := snowflake.NewNode(42)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(node.Generate().Int64())
}
