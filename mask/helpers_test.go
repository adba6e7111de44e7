package mask_test

import (
	"bytes"
	"encoding/base64"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/mask"
)

// now is the tests' clock: the README's examples were made then.
var now = time.Date(2026, 12, 1, 18, 33, 8, 0, time.UTC)

func fixedNow() time.Time { return now }

// secret is a fixed secret of n bytes, different per seed.
func secret(seed byte) []byte { return bytes.Repeat([]byte{seed, seed ^ 0x5a, 0x17, seed + 3}, 8) }

// keyLine is the "slot N SECRET" line of secret(seed).
func keyLine(slot int, seed byte) string {
	return "slot " + string(rune('0'+slot)) + " " + base64.StdEncoding.EncodeToString(secret(seed))
}

func mustKeys(t testing.TB, text string) *mask.Keys {
	t.Helper()
	k, err := mask.ParseKeys(text)
	if err != nil {
		t.Fatalf("ParseKeys: %v", err)
	}
	return k
}

// serverCheck is the check of vesta serve's defaults: sorted, max-peak,
// the default ranges, a 1s borrow, at now.
func serverCheck() mask.Check {
	return mask.Check{
		Embedded: core.MachineRange{First: 0, Count: 924}, Server: core.MachineRange{First: 924, Count: 100},
		MaxBorrow: time.Second, Now: fixedNow,
	}
}

func mustMasker(t testing.TB, keys *mask.Keys, tenant, kind string, check mask.Check) *mask.Masker {
	t.Helper()
	m, err := mask.New(mask.Config{Keys: keys, Tenant: tenant, Kind: kind, Check: check})
	if err != nil {
		t.Fatalf("New(%q, %q): %v", tenant, kind, err)
	}
	return m
}

// issued is an ID a server of serverCheck could have issued at now:
// method rest, machine 1023, seq.
func issued(t testing.TB, seq uint64) core.ID {
	t.Helper()
	var c core.Codec
	u, err := c.Units(core.MaxPeak, now)
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Make(core.Fields{Method: uint64(core.REST), Machine: 1023, Time: u, Seq: seq})
	if err != nil {
		t.Fatal(err)
	}
	return id
}
