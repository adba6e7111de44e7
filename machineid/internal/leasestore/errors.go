package leasestore

import "errors"

// The errors the stores and the guard wrap. Package machineid exports each
// under the same name (machineid.ErrLeaseLost is ErrLeaseLost), with its
// documentation; callers test them with errors.Is.
var (
	ErrConfig      = errors.New("machineid: invalid config")
	ErrUnavailable = errors.New("machineid: provider not available here")
	ErrClockSkew   = errors.New("machineid: clock skew beyond max_clock_skew")
	ErrLeaseLost   = errors.New("machineid: lease lost")
	ErrNotHolder   = errors.New("machineid: not the lease holder")
	ErrReplicas    = errors.New("machineid: too few replicas acknowledged the write")
	ErrFleet       = errors.New("machineid: this host's settings differ from its fleet's")
)
