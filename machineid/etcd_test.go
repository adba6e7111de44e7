package machineid_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/etcdtest"
	"github.com/vesta-go/vesta/internal/testkit/logtest"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/etcdlease"
)

// etcdConfig leases from the cluster with the given TTL, with the etcd
// provider only.
func etcdConfig(c *etcdtest.Cluster, ttl time.Duration) machineid.Config {
	m := machineid.DefaultConfig()
	m.Providers = []string{machineid.ProviderEtcd}
	m.Etcd.Endpoints = c.Endpoints()
	m.Etcd.LeaseTTL = ttl
	return m
}

// get reads one key linearizably ("" when missing).
func get(t testing.TB, cli *clientv3.Client, key string) (string, int64) {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", 0
	}
	return string(resp.Kvs[0].Value), resp.Kvs[0].Lease
}

// TestEtcdLease: a lease is claimed, renewed and released at once; the
// mark lives in etcd; the next holder of the ID starts at once, from the
// exact end the release wrote, above everything issued: etcd loses no
// acknowledged write, so there is no quarantine.
func TestEtcdLease(t *testing.T) {
	ec := etcdtest.Start(t)
	cli := ec.Client(t)
	c := etcdConfig(ec, 3*time.Second)
	c.ServerRange = oneID
	l := mustAcquire(t, c, core.Central)
	if l.Provider() != machineid.ProviderEtcd || l.ID() != oneID.First {
		t.Fatalf("Acquire: %s %d", l.Provider(), l.ID())
	}
	if q := l.Status().QuarantineUntil; !q.IsZero() {
		t.Fatalf("an etcd lease quarantined until %s", q)
	}
	gen := generator(t, l, core.Config{MaxBorrow: time.Second})
	first := l.Status().Deadline
	eventually(t, "a renewal", func() bool { return l.Status().Deadline.After(first) })
	ids := nextIDs(t, gen, 1000)
	leaseKey, markKey, shapeKey := etcdlease.Keys("vesta", l.ID())
	if v, lease := get(t, cli, leaseKey); v == "" || lease == 0 {
		t.Fatalf("lease key %q = %q, etcd lease %x", leaseKey, v, lease)
	}
	if v, _ := get(t, cli, markKey); len(v) != 20 {
		t.Fatalf("mark %q = %q; want 20 digits", markKey, v)
	}
	if v, _ := get(t, cli, shapeKey); !strings.Contains(v, `"layout":"sorted"`) {
		t.Fatalf("shape %q = %q", shapeKey, v)
	}
	reserved := gen.Stats().Mark
	release(t, gen, l)
	if v, _ := get(t, cli, leaseKey); v != "" {
		t.Fatalf("the lease outlived Close: %q", v)
	}
	// The exact end: the start of the unit after the last ID issued.
	last := gen.Codec().Explain(ids[len(ids)-1])
	exact := last.Instant.Add(time.Second)
	if v, _ := get(t, cli, markKey); v != fmt.Sprintf("%020d", exact.UnixMilli()) {
		t.Fatalf("mark after the release %q; want the exact end %s (the reservation was %s)", v,
			exact.Format(time.RFC3339Nano), reserved.Format(time.RFC3339Nano))
	}
	next := mustAcquire(t, c, core.Central)
	gen2 := generator(t, next, core.Config{MaxBorrow: time.Second})
	more := nextIDs(t, gen2, 1000)
	if more[0] <= ids[len(ids)-1] {
		t.Fatalf("the next holder's first ID %d is not above the last %d", more[0], ids[len(ids)-1])
	}
}

// TestEtcdKeyDeletedFencesAtOnce: the holder watches its key; deleted
// behind its back (an operator, or the etcd lease revoked), the generator
// is fenced at once, not at the deadline, then re-keyed to a new claim
// and issuing resumes above everything issued before.
func TestEtcdKeyDeletedFencesAtOnce(t *testing.T) {
	for _, how := range []string{"deleted", "revoked"} {
		t.Run(how, func(t *testing.T) {
			ec := etcdtest.Start(t)
			cli := ec.Client(t)
			c := etcdConfig(ec, 30*time.Second) // the next renewal is 10s away: only the watch fences at once
			c.ServerRange = oneID
			var log logtest.Buffer
			c.Logger = slog.New(slog.NewTextHandler(&log, nil))
			l := mustAcquire(t, c, core.Central)
			gen := generator(t, l, core.Config{MaxStartupWait: 10 * time.Second})
			before := nextIDs(t, gen, 100)
			leaseKey, _, _ := etcdlease.Keys("vesta", l.ID())
			_, lease := get(t, cli, leaseKey)
			var err error
			if how == "deleted" {
				_, err = cli.Delete(context.Background(), leaseKey)
			} else {
				_, err = cli.Revoke(context.Background(), clientv3.LeaseID(lease))
			}
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "the fence", func() bool { return l.Status().Fences > 0 })
			if !strings.Contains(log.String(), "was deleted or taken over in etcd") {
				t.Fatalf("the fence was not the watch's; the log:\n%s", log.String())
			}
			eventually(t, "the lease claimed again", func() bool { return gen.Ready() == nil && l.Status().State == machineid.StateHeld })
			after := nextIDs(t, gen, 100)
			if after[0] <= before[len(before)-1] {
				t.Fatalf("after the re-claim %d is not above %d", after[0], before[len(before)-1])
			}
		})
	}
}

// TestEtcdUnreachable: etcd down at start is "not available here": the
// chain passes to a fixed ID outside the lease range.
func TestEtcdUnreachable(t *testing.T) {
	c := machineid.DefaultConfig()
	c.Providers = []string{machineid.ProviderEtcd, machineid.ProviderStatic}
	c.Etcd.Endpoints = []string{deadAddr(t)}
	c.Etcd.LeaseTTL = 2 * time.Second
	c.ServerLeaseRange = core.MachineRange{First: 924, Count: 99}
	c.Static = new(core.MachineID(1023))
	l := mustAcquire(t, c, core.Central)
	if l.Provider() != machineid.ProviderStatic || l.ID() != 1023 {
		t.Fatalf("%s %d; want static 1023", l.Provider(), l.ID())
	}
	c.Providers = []string{machineid.ProviderEtcd}
	if _, err := acquire(t, c, core.Central); !errtest.Wraps(err, machineid.ErrUnavailable, "etcd") {
		t.Fatalf("Acquire with etcd down: %v; want ErrUnavailable naming etcd", err)
	}
}

// TestEtcdFleetRecord: etcd records the fleet's shape, and a host of
// another layout is refused naming both; etcd has no quarantine, so a
// host with another lease TTL is not refused.
func TestEtcdFleetRecord(t *testing.T) {
	ec := etcdtest.Start(t)
	c := etcdConfig(ec, 3*time.Second)
	generator(t, mustAcquire(t, c, core.Central), core.Config{})
	l := mustAcquire(t, c, core.Central)
	_, err := l.NewGenerator(context.Background(), core.Config{Layout: core.Vesta}, "")
	if !errtest.Wraps(err, machineid.ErrFleet, "id.layout vesta (the fleet's: sorted)", "vesta/fleet") {
		t.Fatalf("a Vesta-layout host in a sorted fleet: %v; want ErrFleet naming both layouts and the record", err)
	}
	c.Etcd.LeaseTTL = 5 * time.Second
	generator(t, mustAcquire(t, c, core.Central), core.Config{})
}

// TestEtcdKilledHolderIsOvertakenAtOnce: a holder killed with SIGKILL is
// overtaken once its etcd lease expires, without a quarantine, above
// everything it issued.
func TestEtcdKilledHolderIsOvertakenAtOnce(t *testing.T) {
	ec := etcdtest.Start(t)
	overtakenAtOnce(t, "etcd="+ec.Endpoints()[0])
}

// TestEtcdQuorumLost: with two of three members stopped no renewal can
// count (the read needs a quorum), so the holder is fenced at its
// deadline; with the quorum back, a renewal finds the lease still its own
// (a new leader extends every lease) and issuing resumes.
func TestEtcdQuorumLost(t *testing.T) {
	ec := etcdtest.StartCluster(t, 3, etcdtest.Options{})
	c := etcdConfig(ec, 3*time.Second)
	c.ServerRange = oneID
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	out := &issued{}
	issue(t, gen, out)
	eventually(t, "IDs", func() bool { n, _ := out.count(); return n > 100 })
	ec.Member(1).Stop()
	ec.Member(2).Stop()
	eventually(t, "the fence", func() bool { return l.Status().State == machineid.StateFenced })
	if s := l.Status(); !errors.Is(s.Err, machineid.ErrLeaseLost) || !errors.Is(gen.Ready(), core.ErrFenced) {
		t.Fatalf("status %+v, Ready %v; want fenced with ErrLeaseLost", s, gen.Ready())
	}
	ec.Member(1).Restart()
	ec.Member(2).Restart()
	eventually(t, "issuing again", func() bool { return gen.Ready() == nil })
	n0, _ := out.count()
	eventually(t, "more IDs", func() bool { n, _ := out.count(); return n > n0+100 })
	strictlyIncreasing(t, snapshot(out))
}

// TestEtcdTLS: a lease from members that serve clients over mutual TLS,
// with the configuration conf loads from machine.etcd.tls.*; without the
// client certificate the members refuse the connection and etcd is
// unavailable.
func TestEtcdTLS(t *testing.T) {
	files := tlstest.New(t).WriteFiles(t, t.TempDir())
	ec := etcdtest.StartCluster(t, 1, etcdtest.Options{TLS: &files})
	c := etcdConfig(ec, 3*time.Second)
	var err error
	c.Etcd.TLS, err = conf.EtcdTLS{CA: files.CA, Cert: files.ClientCert, Key: files.ClientKey}.Load()
	if err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{})
	nextIDs(t, gen, 100)
	c.Etcd.TLS, _ = conf.EtcdTLS{CA: files.CA}.Load()
	if _, err := acquire(t, c, core.Central); err == nil {
		t.Fatal("Acquire without a client certificate succeeded against members requiring one")
	}
}

// TestEtcdWatchSurvivesLeaderLoss: the watch of the lease key ends when
// the member the lease talks to loses its leader; it begins again once a
// leader is back, so a key deleted afterwards still fences at once.
func TestEtcdWatchSurvivesLeaderLoss(t *testing.T) {
	ec := etcdtest.StartCluster(t, 3, etcdtest.Options{})
	cli := ec.Client(t)
	c := etcdConfig(ec, 30*time.Second) // renewals 10s apart: only the watch fences at once
	c.Etcd.Endpoints = ec.Endpoints()[:1]
	c.ServerRange = oneID
	var log logtest.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	l := mustAcquire(t, c, core.Central)
	gen := generator(t, l, core.Config{MaxStartupWait: 10 * time.Second})
	ec.Member(1).Stop()
	ec.Member(2).Stop()
	eventually(t, "the member to lose its leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err := ec.Member(0).Status(ctx)
		return err == nil && st.Leader == 0
	})
	// etcd cancels the watches that require a leader once a member has
	// had none for three election timeouts (3 s here).
	time.Sleep(4 * time.Second)
	ec.Member(1).Restart()
	ec.Member(2).Restart()
	ec.Member(1).WaitServing()
	ec.Member(0).WaitServing()
	eventually(t, "issuing", func() bool { return gen.Ready() == nil })
	leaseKey, _, _ := etcdlease.Keys("vesta", l.ID())
	time.Sleep(time.Second) // the lease begins a watch again 500 ms after one ended
	if _, err := cli.Delete(context.Background(), leaseKey); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fence", func() bool { return l.Status().Fences > 0 })
	if !strings.Contains(log.String(), "was deleted or taken over in etcd") {
		t.Fatalf("the fence was not the watch's; the log:\n%s", log.String())
	}
}
