package embed_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit/embedtest"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/mask"
)

// An embedded issuer masks its IDs and unmasks them, and refuses, before
// any lookup, the masks of IDs no issuer of its configuration writes:
// those of its own shape are read back, in every layout.
func TestIssuerMasker(t *testing.T) {
	keys, err := mask.ParseKeys("slot 0 " + base64.StdEncoding.EncodeToString([]byte("an embedded issuer's test secret!")))
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range []core.Layout{core.Sorted, core.Vesta, core.Leaf} {
		t.Run(layout.String(), func(t *testing.T) {
			cfg := embed.DefaultConfig()
			cfg.Machine.Static, cfg.DataDir, cfg.Layout = new(core.MachineID(3)), "", layout
			cfg.Machine.EmbeddedRange, _ = core.NewMachineRange(0, 99)
			if layout == core.Leaf {
				cfg.Type = core.MinGranularity
			}
			is := embedtest.Open(t, cfg)
			orders, err := is.Masker(keys, "acme", "ord")
			if err != nil {
				t.Fatal(err)
			}
			ids, err := is.NextIDs(context.Background(), 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				text := orders.Mask(id)
				if got, err := orders.Unmask(text); err != nil || got != id {
					t.Fatalf("Unmask(Mask(%d)) = %d, %v", id, got, err)
				}
			}
			c := is.MaskCheck()
			if c.Codec != is.Generator().Codec() || c.Type != cfg.Type || c.Embedded != (core.MachineRange{First: 0, Count: 100}) ||
				c.Server != machineid.DefaultServerRange || c.MaxBorrow != cfg.MaxBorrow {
				t.Errorf("MaskCheck = %+v", c)
			}

			// An ID of machine 500, outside the embedded range 0-99 (and,
			// for leaf, the server range too): refused.
			e := is.Explain(ids[0])
			f := e.Fields()
			f.Machine = 500
			other, err := is.Generator().Codec().Make(f)
			if err != nil {
				t.Fatal(err)
			}
			off, err := mask.New(mask.Config{Keys: keys, Tenant: "acme", Kind: "ord", Check: mask.Check{Off: true}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := orders.Unmask(off.Mask(other)); !errtest.Wraps(err, mask.ErrImplausible, "machine ID") {
				t.Errorf("machine 500: %v", err)
			}
			// Another tenant's masker reads none of them.
			globex, err := is.Masker(keys, "globex", "ord")
			if err != nil {
				t.Fatal(err)
			}
			read := 0
			for _, id := range ids {
				if got, err := globex.Unmask(orders.Mask(id)); err == nil {
					if got == id {
						t.Fatal("another tenant read a mask")
					}
					read++
				}
			}
			t.Logf("another tenant's masker took %d of %d masks for other IDs; Rejection %s", read, len(ids), mask.RejectionText(orders.Rejection()))
			// As random texts of a live slot are: binomial, within 5
			// standard deviations. Rejection counts every text, and a
			// text of a slot without a key is refused outright, so with
			// one live slot a text of the live one passes twice as often.
			p := 1 - orders.Rejection()
			if !keys.Has(0) || !keys.Has(1) {
				p *= 2
			}
			if n := float64(len(ids)); float64(read) > n*p+5*math.Sqrt(n*p) {
				t.Errorf("another tenant's masker took %d of %d masks; Rejection says %.1f", read, len(ids), n*p)
			}
		})
	}
}

// Masking beside issuing: each order gets an ID for the database and a
// mask for its public URL.
func ExampleIssuer_Masker() {
	keys, err := mask.ParseKeys("slot 0 c2VjcmV0IGZvciB0aGUgZXhhbXBsZSBvbmx5IQ==") // in production: mask.ReadKeyFile
	if err != nil {
		panic(err)
	}
	cfg := embed.DefaultConfig()
	cfg.Machine.Static, cfg.DataDir = new(core.MachineID(42)), ""
	ids, err := embed.Open(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	defer ids.Close()
	orders, err := ids.Masker(keys, "acme", "ord")
	if err != nil {
		panic(err)
	}

	id, _ := ids.NextID(context.Background())
	public := orders.Mask(id) // ord_ and 13 characters: no time, machine or count in it
	back, err := orders.Unmask(public)
	fmt.Println(strings.HasPrefix(public, "ord_"), len(public), back == id, err)
	// Output:
	// true 17 true <nil>
}
