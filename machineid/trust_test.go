package machineid_test

import (
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// The tests of starting at once where it is safe: a claim waits out the
// quarantine only when Redis may have lost a lease since the ID's mark was
// written.

// TestCrashRestartStartsAtOnce: a holder killed with SIGKILL leaves no
// release record, but its mark was written by this very Redis instance
// (nothing restarted, failed over or was flushed since): the next holder
// trusts it and starts from it without a quarantine, above everything the
// dead holder issued.
func TestCrashRestartStartsAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	overtakenAtOnce(t, srv.Addr())
}

// overtakenAtOnce kills a holder of the store at addr (see holderConfig)
// with SIGKILL and takes its ID over once its lease expired: the claim is
// not quarantined, and its first ID lies above everything the dead holder
// issued.
func overtakenAtOnce(t testing.TB, addr string) {
	t.Helper()
	h := startHolder(t, addr)
	h.read(t, 200)
	h.kill(t)
	l := takeOver(t, addr)
	if q := l.Status().QuarantineUntil; !q.IsZero() {
		t.Fatalf("quarantined until %s after a crash on an intact store", q.Format(time.RFC3339Nano))
	}
	gen := generator(t, l, core.Config{MaxBorrow: time.Second, MaxStartupWait: 10 * time.Second})
	ids := nextIDs(t, gen, 1000)
	if ids[0] <= h.max {
		t.Fatalf("the next holder's first ID %d is not above the dead holder's %d", ids[0], h.max)
	}
}

// TestNewIDOnAnOldStoreStartsAtOnce: an ID never held before, claimed on a
// Redis instance that claims have seen for longer than a quarantine,
// starts at once: a lease Redis lost before it was first seen has expired
// and fenced by now. On a fresh instance the first claim is quarantined.
func TestNewIDOnAnOldStoreStartsAtOnce(t *testing.T) {
	srv, c := startRedis(t, 2*time.Second)
	c.ServerRange = core.MachineRange{First: 1000, Count: 2}
	gc := core.Config{MaxBorrow: 100 * time.Millisecond}
	first := mustAcquire(t, c, core.Central)
	q := first.Status().QuarantineUntil
	if q.IsZero() {
		t.Fatal("the first claim on a fresh Redis has no quarantine")
	}
	since := storeSince(t, srv)
	generator(t, first, gc) // waits the quarantine out
	second := mustAcquire(t, c, core.Central)
	if second.ID() == first.ID() {
		t.Fatalf("both leases hold %d", first.ID())
	}
	before := time.Now()
	generator(t, second, gc)
	floor := second.Status().QuarantineUntil
	if bound := since.Add(machineid.Reach() + time.Millisecond); floor.After(bound) {
		t.Fatalf("the second claim's floor %s is past the store's since %s + a quarantine (%s)", floor.Format(time.RFC3339Nano),
			since.Format(time.RFC3339Nano), bound.Format(time.RFC3339Nano))
	}
	if !floor.Before(before) {
		t.Fatalf("the second claim's floor %s is not in the past (%s): it waited a quarantine", floor.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano))
	}
}

// TestEvictingRedisIsNotTrusted: under maxmemory with an allkeys-* policy
// Redis may evict a lease and its mark unseen, so a claim after a crash is
// quarantined even on the same instance.
func TestEvictingRedisIsNotTrusted(t *testing.T) {
	srv := redistest.Start(t)
	mustCommand(t, srv, "CONFIG", "SET", "maxmemory", "1gb")
	mustCommand(t, srv, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	h := startHolder(t, srv.Addr())
	h.read(t, 50)
	h.kill(t)
	claimed := time.Now()
	l := takeOver(t, srv.Addr())
	c := holderConfig(srv.Addr())
	q := l.Status().QuarantineUntil
	if min := claimed.Add(c.Redis.LeaseTTL); q.Before(min) {
		t.Fatalf("quarantined until %s on an evicting Redis; want at least %s (claim + lease TTL)", q.Format(time.RFC3339Nano), min.Format(time.RFC3339Nano))
	}
}

// TestKeysDeletedByHandAreNotTrusted: an operator deleting one machine
// ID's keys (lease, mark, instance) while its holder still issues cannot
// make the next claim trust what is left: the ID was claimed on this
// instance before, so the claim waits out the quarantine from the claim.
func TestKeysDeletedByHandAreNotTrusted(t *testing.T) {
	srv := redistest.Start(t)
	h := startHolder(t, srv.Addr())
	h.read(t, 50)
	leaseKey, markKey := redislease.Keys("vesta", 1000)
	mustCommand(t, srv, "DEL", leaseKey, markKey, redislease.InstanceKey("vesta", 1000))
	claimed := time.Now()
	c := holderConfig(srv.Addr())
	l := mustAcquire(t, c, core.Central)
	q := l.Status().QuarantineUntil
	if min := claimed.Add(c.Redis.LeaseTTL); q.Before(min) {
		t.Fatalf("quarantined until %s after the ID's keys were deleted under a live holder; want at least %s (claim + lease TTL)",
			q.Format(time.RFC3339Nano), min.Format(time.RFC3339Nano))
	}
}
