package mask_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/mask"
)

// A deployment's key text (in production: a file only the servers read,
// with 32 random bytes: openssl rand -base64 32), one tenant's orders, and
// the check of the IDs the deployment issues (here the sorted layout's
// defaults, read at a fixed instant).
func Example() {
	keys, err := mask.ParseKeys("slot 0 c2VjcmV0IGZvciB0aGUgZXhhbXBsZSBvbmx5IQ==")
	if err != nil {
		log.Fatal(err)
	}
	check := mask.Check{
		Embedded: core.MachineRange{First: 0, Count: 924}, Server: core.MachineRange{First: 924, Count: 100},
		MaxBorrow: time.Second,
		Now:       func() time.Time { return time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) },
	}
	orders, err := mask.New(mask.Config{Keys: keys, Tenant: "acme", Kind: "ord", Check: check})
	if err != nil {
		log.Fatal(err)
	}

	id := core.ID(259675389170810880) // issued 2026-12-01T18:33:08Z by embedded machine 7
	text := orders.Mask(id)
	fmt.Println(text)
	back, err := orders.Unmask(text)
	fmt.Println(back, err)

	users, _ := mask.New(mask.Config{Keys: keys, Tenant: "acme", Kind: "usr", Check: check})
	_, err = users.Unmask(text)
	fmt.Println(errors.Is(err, mask.ErrWrongKind), err)
	_, err = users.Unmask(text[len("ord_"):]) // without its prefix: decodes to no ID of the deployment
	fmt.Println(errors.Is(err, mask.ErrImplausible))
	fmt.Println(mask.RejectionText(orders.Rejection()), "of random texts refused")
	// Output:
	// ord_4yk3wzn2mvgn9
	// 259675389170810880 <nil>
	// true mask: a mask of another kind: "ord_4yk3wzn2mvgn9" is a mask of kind "ord", not "usr"
	// true
	// 99.8% of random texts refused
}
