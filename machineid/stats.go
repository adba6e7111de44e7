package machineid

import (
	"sync/atomic"
	"time"

	"github.com/vesta-go/vesta/latency"
)

// Stats is what a lease measured, for monitoring: package prommetrics
// exports it as the vesta_machine_* series, labelled with Range. Reading
// it costs the lease nothing but its mutex, as Status does.
type Stats struct {
	Status
	// Range names the lease's machine-ID range, "embedded" or "server".
	Range string
	// Renewals are the latencies of the renewals that reached the store
	// (Redis or etcd); none for a fixed ID.
	Renewals latency.Snapshot
	// ClockSkew is the local clock minus the store's (Redis's TIME),
	// measured when leasing and at every renewal; zero before.
	ClockSkew time.Duration
	// Quarantine is the time left before a newly claimed machine ID may
	// issue, while Prepare waits out a quarantine (a Redis claim that may
	// follow a holder whose lease Redis lost); zero otherwise.
	Quarantine time.Duration
	// Closed: Close was called.
	Closed bool
}

// renewBounds are the buckets of Stats.Renewals: 0.5ms to 4s, doubling.
var renewBounds = func() []time.Duration {
	b := make([]time.Duration, 14)
	for i := range b {
		b[i] = 500 * time.Microsecond << i
	}
	return b
}()

// leaseStats are what a lease measures besides its Status, shared by
// every copy of its leaseBase. Only renewals, claims and quarantines write
// them, never an issued ID.
type leaseStats struct {
	renew *latency.Histogram
	skew  atomic.Int64 // nanoseconds
	// quarantine is when, on the lease's clock (Unix nanoseconds), the
	// quarantine Prepare waits out ends; 0 when none is waited out.
	quarantine atomic.Int64
	closed     atomic.Bool
}

func newLeaseStats() *leaseStats { return &leaseStats{renew: latency.New(renewBounds...)} }

func (s *leaseStats) observeSkew(d time.Duration) { s.skew.Store(int64(d)) }

// Stats returns what the lease measured.
func (l *Lease) Stats() Stats {
	st := Stats{Status: l.Status(), Range: rangeName(l.method), Renewals: l.stats.renew.Snapshot(),
		ClockSkew: time.Duration(l.stats.skew.Load()), Closed: l.stats.closed.Load()}
	if q := l.stats.quarantine.Load(); q != 0 {
		st.Quarantine = max(time.Duration(q-st.At.UnixNano()), 0)
	}
	return st
}
