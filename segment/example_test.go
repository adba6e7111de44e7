package segment_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/vesta-go/vesta/segment"
)

// The embedded quick start: a tag created with start 1000 and step 100
// hands out 1000, 1001, ... from ranges reserved in the store.
func Example() {
	ctx := context.Background()
	store := segment.NewMemStore() // segment/mysqlstore or segment/redisstore in production
	if err := store.Create(ctx, segment.TagInfo{Tag: "order", MaxID: 1000, Step: 100, Description: "order numbers"}); err != nil {
		panic(err)
	}
	cfg := segment.DefaultConfig()
	cfg.Preload = []string{"order"}
	seq, err := segment.Open(ctx, store, cfg)
	if err != nil {
		panic(err)
	}
	defer seq.Close()

	n, err := seq.Next(ctx, "order")
	if err != nil {
		panic(err)
	}
	more, err := seq.NextN(ctx, "order", 3)
	if err != nil {
		panic(err)
	}
	fmt.Println(n, more)
	_, err = seq.Next(ctx, "no-such-tag")
	fmt.Println(errors.Is(err, segment.ErrUnknownTag))
	// Output:
	// 1000 [1001 1002 1003]
	// true
}
