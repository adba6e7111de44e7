package machineid

import (
	"errors"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// Sentinel errors. Callers test them with errors.Is; returned errors add the
// details (the provider, the ID, the range, the instants). Those the
// stores return too are leasestore's, the same values.
var (
	// ErrRange: a machine-ID range that cannot be used, or an ID outside
	// the range its publish method must use; core.ErrMachineRange, the
	// same value, which core.MachineRange's parsers and Check return.
	ErrRange = core.ErrMachineRange

	// ErrConfig: a Config field that cannot be used; the message names it.
	ErrConfig = leasestore.ErrConfig

	// ErrNoMachineID: the static provider is listed but no static ID was
	// chosen. There is no default machine ID: two hosts on a default would
	// issue the same IDs. The message lists the ways to choose one.
	ErrNoMachineID = errors.New("machineid: no machine ID chosen; choose a static ID unique to this instance (Machine.Static, machine.id, --machine or VESTA_MACHINE_ID), a lease in etcd (providers [etcd]) or Redis (providers [redis]), the Kubernetes StatefulSet ordinal (providers [k8s]) or the IP table (providers [iptable])")

	// ErrUnavailable: a provider cannot give an ID on this host (Redis
	// unreachable, no ordinal in the hostname, no address in the IP
	// table). A chain then tries its next provider.
	ErrUnavailable = leasestore.ErrUnavailable

	// ErrNoProvider: every provider of the chain was unavailable. The
	// error also wraps each provider's reason.
	ErrNoProvider = errors.New("machineid: no provider gave a machine ID")

	// ErrAmbiguous: the host's addresses match IP-table entries with
	// different IDs.
	ErrAmbiguous = errors.New("machineid: ambiguous IP table match")

	// ErrRangeFull: every machine ID of the range is leased.
	ErrRangeFull = errors.New("machineid: every machine ID of the range is taken")

	// ErrClockSkew: the local clock and Redis's TIME differ by more than
	// MaxClockSkew.
	ErrClockSkew = leasestore.ErrClockSkew

	// ErrLeaseLost: the lease could not be proven held (renewal failed
	// past the deadline, or the key was stolen or expired). The generator
	// is fenced with it (core.ErrFenced wraps it).
	ErrLeaseLost = leasestore.ErrLeaseLost

	// ErrNotHolder: a write of the time guard's mark by a process that no
	// longer holds the lease was refused.
	ErrNotHolder = leasestore.ErrNotHolder

	// ErrReplicas: fewer replicas than Redis.MinReplicas acknowledged a
	// write in time (WAIT), so a failover could lose it: the write counts
	// as failed (a claim is released and the provider unavailable).
	ErrReplicas = leasestore.ErrReplicas

	// ErrFleet: this host's shape (layout, type, epoch, version) differs
	// from the fleet record of its key prefix, written by the first host
	// leasing there (see Lease.Prepare). The message names each setting
	// and both values.
	ErrFleet = leasestore.ErrFleet

	// ErrAttached: Attach was called twice, or with a generator of
	// another machine ID.
	ErrAttached = errors.New("machineid: bad attach")

	// ErrClosed: the lease was closed.
	ErrClosed = errors.New("machineid: lease closed")
)
