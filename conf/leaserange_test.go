package conf_test

import (
	"strings"
	"testing"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// machine.redis.embedded_range and server_range: "" and null are unset,
// a range is read, printed and passed to machineid; a chain [redis,
// static] on the default ranges is refused naming both keys, and accepted
// with the lease range narrowed.
func TestLeaseRangeKeys(t *testing.T) {
	for _, unset := range []string{`""`, "null", "~"} {
		l, err := loadYAML(t, "machine: {redis: {server_range: "+unset+", embedded_range: "+unset+"}}")
		if err != nil {
			t.Fatalf("%s: %v", unset, err)
		}
		if r := l.Config.Machine.Redis; !r.ServerRange.IsZero() || !r.EmbeddedRange.IsZero() {
			t.Fatalf("%s: lease ranges %v, %v; want unset", unset, r.EmbeddedRange, r.ServerRange)
		}
		if s := l.Config.String(); !strings.Contains(s, ` machine.redis.server_range="" `) {
			t.Fatalf("%s: String() = %s; want server_range printed as \"\"", unset, s)
		}
	}

	_, err := loadYAML(t, "machine: {providers: [redis, static], id: 1023}")
	wantKeyErrors(t, err, "machine.id", "machine.redis.server_range 924-1023, all of machine.server_range by default", "(file ")

	l, err := loadYAML(t, "machine: {providers: [redis, static], id: 1023, redis: {server_range: 924-1003}}")
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if r := c.Machine.LeaseRange(core.Central); r != mustRange(t, "924-1003") {
		t.Fatalf("LeaseRange(central) = %v", r)
	}
	if r := c.Machine.LeaseRange(core.Embedded); r != machineid.DefaultEmbeddedRange {
		t.Fatalf("LeaseRange(embedded) = %v; want all of the embedded range (redis listed)", r)
	}
	mc, err := c.MachineIDConfig()
	if err != nil {
		t.Fatal(err)
	}
	if mc.ServerLeaseRange != mustRange(t, "924-1003") || !mc.EmbeddedLeaseRange.IsZero() || mc.Static == nil || *mc.Static != 1023 {
		t.Fatalf("MachineIDConfig() = %+v", mc)
	}
	if err := mc.ValidateFor(core.Central); err != nil {
		t.Fatalf("machineid refuses what conf accepted: %v", err)
	}
	if s := c.String(); !strings.Contains(s, " machine.redis.server_range=924-1003 ") {
		t.Fatalf("String() = %s", s)
	}

	_, err = loadYAML(t, "machine: {providers: [redis], redis: {server_range: 5-9}}", "VESTA_MACHINE_REDIS_EMBEDDED_RANGE=1-2000")
	kes := conf.KeyErrors(err)
	if len(kes) != 2 {
		t.Fatalf("errors %v; want machine.redis.embedded_range and server_range", err)
	}
}
