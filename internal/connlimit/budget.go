package connlimit

import "math"

// DefaultFDReserve is how many file descriptors Descriptors keeps from
// connections: for the time guard's file (written and renamed on each
// save), the lease store's and the segment store's connections (pools
// that grow with concurrent use, a few each), DNS lookups, and headroom
// for what a newcomer costs before it is shed. A flood of connections
// must not take them: the guard that cannot save stops issuing.
const DefaultFDReserve = 64

// FD is the file-descriptor arithmetic of Descriptors.
type FD struct {
	// Limit is RLIMIT_NOFILE's soft limit (Go raises it to the hard limit
	// at start), or math.MaxInt where there is none.
	Limit int
	// Open is the descriptors open when Descriptors ran (0 when unknown).
	Open int
	// Reserve is the descriptors kept from connections.
	Reserve int
	// Budget is the connections every listener together may hold:
	// Limit − Open − Reserve, but never below half of Limit − Open (a
	// limit too low for the reserve halves it) nor below 1.
	Budget int
}

// Descriptors reads the descriptor limit and those open, and returns the
// budget of connections that keeps reserve descriptors free. Call it once
// everything but the connections is open (listeners, lease, stores).
func Descriptors(reserve int) (FD, error) {
	limit, open, err := fdLimit()
	if err != nil || limit == math.MaxInt {
		return FD{Limit: math.MaxInt, Open: open, Reserve: reserve, Budget: math.MaxInt}, err
	}
	free := max(limit-open, 0)
	return FD{Limit: limit, Open: open, Reserve: reserve, Budget: max(free-reserve, free/2, 1)}, nil
}
