package api

import (
	"context"
	"errors"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/coalesce"
)

// The holder of an ID, asked over either protocol (REST's GET
// /v1/ids/{id}?holder=true, the central server's Vesta.Holder): the hold
// of the ID's machine whose span contains the ID's instant, from the
// lease store's hold history (machineid's Lease.History), or why none is
// known. Display and detection only: nothing decides anything on it.

// HoldHistory is one machine ID's hold history, as a HoldersFunc reads
// it: Match says which holds cover an instant.
type HoldHistory struct {
	// Store is "redis", "etcd", or "none" (a fixed ID, or no store).
	Store string
	// Match says which holds cover instant t (the start of an ID's time
	// unit), read at now.
	Match func(t, now time.Time) HolderMatch
	// Skipped notes the entries that could not be read.
	Skipped []string
}

// HolderMatch is what a history says of one instant.
type HolderMatch struct {
	// Holds cover the instant: one (the holder), none, or several (a
	// Conflict: two holders could both have issued then).
	Holds    []Hold
	Conflict bool
	// Inferred: the one hold matched only through the inferred end of
	// an unended hold.
	Inferred bool
	// Reason says why none (or several) matched.
	Reason string
}

// Hold is one hold of a machine ID: who held it, when, how it ended.
type Hold struct {
	Hold, Lease     string
	Self            bool
	Provider, Range string
	Host, Pod       string
	PID             int
	Version, Layout string
	Started, From   time.Time
	Renewed, Mark   time.Time
	Ended           time.Time
	End, EndKnown   string
	Note            string
	TTL, MaxBorrow  time.Duration
}

// HoldersFunc reads machine's hold history, within ctx.
type HoldersFunc func(ctx context.Context, machine uint16) (HoldHistory, error)

// Holder is the answer about one ID: the one hold that covers its instant
// (Known), several (Conflict: a broken promise of uniqueness), or none,
// and why (Reason).
type Holder struct {
	Known    bool
	Conflict bool
	Inferred bool
	Reason   string
	// Store is the history's store: "redis", "etcd", or "none".
	Store string
	// Holds are the holds that cover the instant; never nil.
	Holds []Hold
	// Skipped notes the history's entries that could not be read; never
	// nil.
	Skipped []string
}

// NoHistory is the Reason of a server without a hold history.
const NoHistory = "this server keeps no hold history: its machine IDs are not leased from a store (fixed IDs keep no history)"

// Bounds of the history reads: one read serves every question about its
// machine ID for holdersFresh, so that explains in a loop are not reads
// of the store the leases renew in; holdersReads bounds the reads under
// way at once (over every machine ID) and holdersKeys the histories kept.
const (
	// holdersAhead is how far after now an ID's instant may lie: no
	// generator issues further ahead than its MaxBorrow, at most a day
	// (core.Config), so a later one was made by another layout or epoch.
	holdersAhead = 24 * time.Hour

	holdersFresh = time.Second
	holdersReads = 4
	holdersKeys  = 64
)

// Holders answers which hold issued an ID, reading the hold histories
// through one cache: at most one read per machine ID a second, and a few
// at once over all, however many callers ask and over whichever
// protocol. A server given none answers NoHistory. Its methods are safe
// for concurrent use; a nil *Holders is a server without history.
type Holders struct {
	read  HoldersFunc
	cache coalesce.Cache[uint16, HoldHistory]
}

// NewHolders returns the Holders of read; nil read is nil.
func NewHolders(read HoldersFunc) *Holders {
	if read == nil {
		return nil
	}
	h := &Holders{read: read}
	h.cache.Fresh, h.cache.Reads, h.cache.Keys = holdersFresh, holdersReads, holdersKeys
	return h
}

// Of answers the holder of explained ID e at now, reading its machine's
// history (within timeout, coalesced). An ID whose instant lies more than
// a day after now, which no generator of this layout and epoch issues, is
// an InvalidArgument *Error naming id, and reads nothing. A history that
// cannot be read is an Unavailable *Error naming the machine ID (its
// cause wrapped); a caller whose ctx ends gets ctx's error.
func (h *Holders) Of(ctx context.Context, e core.Explanation, timeout time.Duration, now time.Time) (Holder, error) {
	out := Holder{Store: "none", Holds: []Hold{}, Skipped: []string{}}
	if e.Instant.After(now.Add(holdersAhead)) {
		return Holder{}, Errorf(InvalidArgument, "id: %d decodes to %s, after now: not an ID of this server's layout and epoch", uint64(e.ID), e.Timestamp())
	}
	if h == nil {
		out.Reason = NoHistory
		return out, nil
	}
	machine := uint16(e.Machine)
	hist, err := h.cache.Get(ctx, machine, timeout, func(ctx context.Context) (HoldHistory, error) {
		return h.read(ctx, machine)
	})
	if err != nil {
		if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return Holder{}, err
		}
		return Holder{}, Errorf(Unavailable, "the hold history of machine %d cannot be read: %v", machine, err)
	}
	out.Store = hist.Store
	if hist.Skipped != nil {
		out.Skipped = hist.Skipped
	}
	m := hist.Match(e.Instant, now)
	out.Known, out.Conflict, out.Inferred, out.Reason = len(m.Holds) == 1, m.Conflict, m.Inferred, m.Reason
	out.Holds = append(out.Holds, m.Holds...)
	return out, nil
}
