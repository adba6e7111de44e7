package issuedmetric_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/issuedmetric"
)

const head = `# HELP vesta_ids_issued_total IDs issued by this process, by publish method (embedded, central, rest).
# TYPE vesta_ids_issued_total counter
`

// TestSharedRegistry: the servers and an embedded issuer of one registry
// count into one counter; only the methods in use are exported, and a
// stopped source's last reading stays.
func TestSharedRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	var cs []*issuedmetric.Counter
	for range 3 {
		c, err := issuedmetric.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	if cs[0] != cs[1] || cs[1] != cs[2] {
		t.Fatal("New on one registry returned different counters")
	}
	cs[0].Of(core.Central).Add(5)
	cs[1].Of(core.Central).Add(2)
	var gen atomic.Uint64
	gen.Store(3)
	stop := cs[2].Read(core.Embedded, gen.Load)
	for _, tc := range []struct {
		name string
		step func()
		want string
	}{
		{"counted and read", func() {}, `vesta_ids_issued_total{method="central"} 7
vesta_ids_issued_total{method="embedded"} 3
`},
		{"read again", func() { gen.Add(4) }, `vesta_ids_issued_total{method="central"} 7
vesta_ids_issued_total{method="embedded"} 7
`},
		{"stopped keeps its last reading", func() { stop(); stop(); gen.Add(100) }, `vesta_ids_issued_total{method="central"} 7
vesta_ids_issued_total{method="embedded"} 7
`},
		{"a second source adds to it", func() {
			var other atomic.Uint64
			other.Store(1)
			cs[0].Read(core.Embedded, other.Load)
			cs[0].Of(core.REST).Add(1)
		}, `vesta_ids_issued_total{method="central"} 7
vesta_ids_issued_total{method="embedded"} 8
vesta_ids_issued_total{method="rest"} 1
`},
	} {
		tc.step()
		if err := testutil.GatherAndCompare(reg, strings.NewReader(head+tc.want), issuedmetric.Name); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestNilRegistryCounts(t *testing.T) {
	c, err := issuedmetric.New(nil)
	if err != nil || c == nil {
		t.Fatalf("New(nil) = %v, %v", c, err)
	}
	c.Of(core.REST).Add(1)
	if n := testutil.CollectAndCount(c); n != 1 {
		t.Errorf("%d series; want 1", n)
	}
}

// TestConflict: another metric of the name is an error, not a panic.
func TestConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: issuedmetric.Name, Help: "something else"}))
	if _, err := issuedmetric.New(reg); err == nil {
		t.Fatal("New with a conflicting vesta_ids_issued_total: no error")
	}
}
