package machineid_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/machineid"
)

// TestSentinelFailoverLosesTheHold: a lease through Sentinel lives on the
// master a majority names; once the Sentinels fail over (a new config
// epoch), a renewal, even one that finds the key on the promoted replica,
// no longer counts: the hold is lost, the lease re-claims on the new
// master, quarantined (its replid is new), and the generator continues
// above everything it issued.
func TestSentinelFailoverLosesTheHold(t *testing.T) {
	g, c := startSentinels(t, 2*time.Second)
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{MaxStartupWait: 10 * time.Second})
	out := &issued{}
	issue(t, gen, out)
	eventually(t, "IDs", func() bool { n, _ := out.count(); return n > 100 })
	if rdb := g.Master; rdb == nil {
		t.Fatal("no master")
	}
	fences := l.Status().Fences
	g.Failover()
	eventually(t, "the hold lost", func() bool { return l.Status().Fences > fences })
	eventually(t, "issuing on the new master", func() bool {
		return gen.Ready() == nil && l.Status().State == machineid.StateHeld
	})
	n0, _ := out.count()
	eventually(t, "more IDs", func() bool { n, _ := out.count(); return n > n0+100 })
	strictlyIncreasing(t, snapshot(out))
	if v, err := g.Replica.Do("GET", leaseKeyOf(l.ID())); err != nil || v == "" {
		t.Fatalf("the lease on the promoted replica: %q, %v", v, err)
	}
}

// TestSentinelMajorityRequired: with two of three Sentinels stopped, no
// majority can confirm a renewal, so the holder is fenced at its deadline
// although the master still takes its writes; a claim is unavailable.
func TestSentinelMajorityRequired(t *testing.T) {
	g, c := startSentinels(t, 2*time.Second)
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	if _, err := gen.NextID(context.Background(), core.Central); err != nil {
		t.Fatal(err)
	}
	g.Sentinel(1).Stop()
	g.Sentinel(2).Stop()
	eventually(t, "the fence", func() bool { return l.Status().State == machineid.StateFenced })
	if s := l.Status(); !errors.Is(s.Err, machineid.ErrLeaseLost) || !strings.Contains(s.Err.Error(), "no majority") {
		t.Fatalf("status %+v; want fenced, the last attempt finding no majority of the Sentinels", s)
	}
	if _, err := gen.NextID(context.Background(), core.Central); !errors.Is(err, core.ErrFenced) {
		t.Fatalf("NextID while fenced: %v; want ErrFenced", err)
	}
	c.ServerRange = core.MachineRange{First: 1001, Count: 1}
	if _, err := acquire(t, c, core.Central); !errtest.Wraps(err, machineid.ErrUnavailable, "no majority") {
		t.Fatalf("Acquire without a majority of the Sentinels: %v; want ErrUnavailable naming the missing majority", err)
	}
}
