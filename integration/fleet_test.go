package integration_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
)

// fleetIDs is how many IDs the fleet must issue without a duplicate.
const fleetIDs = 5_000_000

// TestFleet runs three central servers (the first also serving REST), two
// Go clients with prefetch and two embedded issuers, all leasing their
// machine IDs from one Redis, under sustained load until at least five
// million IDs were issued: none twice, each from a machine ID its issuer
// holds, and per machine ID increasing for every sequential caller.
func TestFleet(t *testing.T) {
	// Begun before anything issues: the clients prefetch at New, and a
	// fresh lease's quarantine makes New and Open take seconds each.
	led := newLedger(core.MaxPeak)
	rds := redistest.Start(t)
	const prefix, ttl = "fleet", 10 * time.Second
	rds.Established(prefix) // start at once: no data loss here
	servers := []*proc{
		launch(t, "central-1+rest", serverEnv(t, rds, prefix, ttl, "VESTA_REST_LISTEN", "127.0.0.1:0")),
		launch(t, "central-2", serverEnv(t, rds, prefix, ttl)),
		launch(t, "central-3", serverEnv(t, rds, prefix, ttl)),
	}
	addrs := waitAll(t, servers...)
	// Opened at once, as each waits out its fresh lease's quarantine.
	clients := make([]*client.Client, 2)
	issuers := make([]*embed.Issuer, 2)
	errs := make([]error, 4)
	var opening sync.WaitGroup
	for i := range 2 {
		cfg := clientConfig(t, addrs, 2*time.Second, rds, prefix, ttl)
		cfg.Prefetch = 20000
		ecfg := embedConfig(t, rds, prefix, ttl)
		opening.Go(func() { clients[i], errs[i] = client.New(context.Background(), cfg) })
		opening.Go(func() { issuers[i], errs[2+i] = embed.Open(context.Background(), ecfg) })
	}
	opening.Wait()
	for i := range 2 {
		if c := clients[i]; c != nil {
			t.Cleanup(func() { c.Close() })
		}
		if is := issuers[i]; is != nil {
			t.Cleanup(func() { is.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal("opening the clients and embedded issuers:", err)
	}
	machines := map[string]int{}
	for _, s := range servers {
		machines[s.name] = s.Machine
	}
	for i, is := range issuers {
		machines[fmt.Sprintf("embedded-%d", i+1)] = int(is.Generator().Machine())
	}
	if !distinct(machines) {
		t.Fatalf("two issuers lease the same machine ID: %v", machines)
	}
	t.Logf("machine IDs: %v", machines)

	ld := newLoad(10 * time.Second)
	for i, c := range clients {
		// More than the prefetch buffer holds: always from the servers, in
		// sequential GenIDs calls, so the stream is ordered per machine ID.
		for w := range 2 {
			direct := led.stream(fmt.Sprintf("client-%d/NextIDs(25000)-%d", i+1, w+1), true, core.Central)
			ld.batches(direct, func(ctx context.Context) ([]core.ID, error) { return c.NextIDs(ctx, 25000) })
		}
		// Taken from the prefetch buffer, which holds refills from several
		// servers back to back: each batch increases (NextIDs sorts it),
		// successive batches need not.
		buffered := led.stream(fmt.Sprintf("client-%d/NextIDs(999)", i+1), false, core.Central)
		ld.batches(buffered, func(ctx context.Context) ([]core.ID, error) { return c.NextIDs(ctx, 999) })
		ld.singles(led.stream(fmt.Sprintf("client-%d/NextID", i+1), false, core.Central), c.NextID)
	}
	// The embedded issuers cost the test process alone and would take
	// the CPU from the servers: they are held to 150k IDs/s each.
	for i, is := range issuers {
		many := led.stream(fmt.Sprintf("embedded-%d/NextIDs(1000)", i+1), true, core.Embedded)
		pace := newPacer(150_000)
		ld.worker(many.name, func(ctx context.Context, _ int) (int, error) {
			n, err := batch(many, func() ([]core.ID, error) { return is.NextIDs(ctx, 1000) })
			pace.took(n)
			return n, err
		})
		ld.singles(led.stream(fmt.Sprintf("embedded-%d/NextID", i+1), true, core.Embedded), is.NextID)
	}
	rc := newREST(t, servers[0].restEndpoint())
	ld.batches(led.stream("rest/v1/ids?count=10000", true, core.REST), func(ctx context.Context) ([]core.ID, error) { return rc.ids(ctx, 10000) })
	ld.singles(led.stream("rest/genid", true, core.REST), rc.genid)
	ld.singles(led.stream("rest/v1/id", true, core.REST), rc.id)

	took := ld.waitIDs(fleetIDs*11/10, 3*time.Second, 60*time.Second)
	ld.stop()
	ld.report(t, "fleet")
	ld.requireNoErrors(t)
	for _, c := range clients {
		if err := c.Close(); err != nil {
			t.Error("client Close:", err)
		}
	}
	for _, is := range issuers {
		if err := is.Close(); err != nil {
			t.Error("embedded Close:", err)
		}
	}
	stopAll(t, servers...)

	n := led.total()
	t.Logf("%d IDs in %v (%.0f IDs/s); by method: %v", n, took.Round(time.Millisecond),
		float64(n)/took.Seconds(), led.byMethod(""))
	if n < fleetIDs {
		t.Errorf("%d IDs issued in %v; want at least %d", n, took, fleetIDs)
	}
	led.check(t)
	// Each kind of issuer used only its own machine IDs.
	serverMachines := []uint64{uint64(servers[0].Machine), uint64(servers[1].Machine), uint64(servers[2].Machine)}
	led.requireMachines(t, "client-", serverMachines...)
	led.requireMachines(t, "rest/", uint64(servers[0].Machine))
	for i, is := range issuers {
		led.requireMachines(t, fmt.Sprintf("embedded-%d/", i+1), uint64(is.Generator().Machine()))
	}
}

// batch records a batch call's IDs in s, failing a batch that does not
// strictly increase.
func batch(s *stream, call func() ([]core.ID, error)) (int, error) {
	ids, err := call()
	if err != nil {
		return 0, err
	}
	s.add(ids...)
	return len(ids), increasing(ids)
}

// single records one call's ID in s.
func single(s *stream, call func() (core.ID, error)) (int, error) {
	id, err := call()
	if err != nil {
		return 0, err
	}
	s.add(id)
	return 1, nil
}

// batches runs a worker of l (batch) whose calls' IDs go to s.
func (l *load) batches(s *stream, call func(context.Context) ([]core.ID, error)) {
	l.worker(s.name, func(ctx context.Context, _ int) (int, error) {
		return batch(s, func() ([]core.ID, error) { return call(ctx) })
	})
}

// singles runs a worker of l (single) whose calls' IDs go to s.
func (l *load) singles(s *stream, call func(context.Context) (core.ID, error)) {
	l.worker(s.name, func(ctx context.Context, _ int) (int, error) {
		return single(s, func() (core.ID, error) { return call(ctx) })
	})
}

func distinct(m map[string]int) bool {
	seen := map[int]bool{}
	for _, v := range m {
		if seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

// requireMachines fails t when an ID of the streams whose name has prefix
// carries a machine ID other than machines.
func (l *ledger) requireMachines(t testing.TB, prefix string, machines ...uint64) {
	t.Helper()
	lo, _ := l.keyRange(prefix)
	for m := range lo {
		if !slices.Contains(machines, m) {
			t.Errorf("streams %s*: IDs of machine %d; want only %v", prefix, m, machines)
		}
	}
	if len(lo) == 0 {
		t.Errorf("streams %s*: no ID at all", prefix)
	}
}
