package machineid

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// The hold history: which process held a machine ID, when, and how each
// hold ended, so that an ID decoded into "machine 937 at 21:50:33.862"
// names the host, pod, build and lease behind it (Lease.History,
// History.At, GET /v1/ids/{id}?holder=true).
//
// Like a member record, an entry is information only. Nothing reads the
// history for a safety decision: who may issue under a machine ID is what
// the lease key says, and only that; a conflict found in the history is
// detection after the fact, never a guard. Its writes never fail, fence
// or delay a claim or a renewal: the holder writes its entry from the
// member record's goroutine after each claim and renewal, and a failed
// write is logged once and changes nothing else.
//
// Only the holder writes, and only while the store confirms it holds the
// lease: on Redis a script compares the lease key's token first, on etcd
// a transaction compares the lease key's create revision. So an entry
// says what its holder knew while holding: when it claimed (started),
// where its IDs' time fields begin (from: the stored mark, a quarantine's
// floor or an exact end), its last renewal, the highest mark it saved, and
// when and how it ended: released (written at a clean release, still
// holding) or fenced (the lease was lost, written by the same process
// when it claims that machine ID again). A holder killed, or one that
// re-acquires another ID, cannot write its end: readers infer it, as
// expired, from the last renewal plus the TTL, or from a later hold of
// the same ID; the entry says how its end is known.
//
// The wire format, per machine ID (each store's history.go): on Redis a
// hash redislease.HoldsKey (the hold's name to its entry's JSON) and a
// sorted set redislease.HoldsOrderKey (the names, scored by each entry's
// last instant), both expiring History.MaxAge after the last write; on
// etcd one plain key per hold under etcdlease.HoldsPrefix, trimmed by each
// new holder of the ID in its first write. A write keeps the History.Holds
// latest entries and none older than MaxAge, the writer's own always. The
// entry is leasestore.HoldRecord's JSON; a reader skips one larger than
// leasestore.MaxHoldBytes, or not of its machine ID, and clips every field.

// Defaults and bounds of HistoryConfig.
const (
	DefaultHistoryHolds  = 32
	DefaultHistoryMaxAge = 30 * 24 * time.Hour
	minHistoryMaxAge     = time.Hour
	maxHistoryMaxAge     = 10 * 366 * 24 * time.Hour
)

// HistoryConfig bounds the hold history kept beside the leases, per
// machine ID. The defaults keep a month of daily restarts: 32 holds of
// about 600 bytes, 19 KB per machine ID, 2 MB for a server range of 100
// IDs that all restart daily.
type HistoryConfig struct {
	// Holds is how many holds of one machine ID are kept, the latest;
	// zero is 32, at most 256.
	Holds int
	// MaxAge drops a hold whose last renewal (or end) is older; zero is
	// 30 days, from 1h to 10 years. A machine ID nobody leases for that
	// long loses its history (Redis expires it; on etcd the next holder
	// trims it).
	MaxAge time.Duration
}

// resolve fills the defaults and checks the bounds, naming the field.
func (h HistoryConfig) resolve() (HistoryConfig, error) {
	h.Holds = cmp.Or(h.Holds, DefaultHistoryHolds)
	h.MaxAge = cmp.Or(h.MaxAge, DefaultHistoryMaxAge)
	switch {
	case h.Holds < 1 || h.Holds > leasestore.MaxHistoryHolds:
		return h, fmt.Errorf("%w: History.Holds: %d; want 1-%d (0 is %d)", ErrConfig, h.Holds, leasestore.MaxHistoryHolds, DefaultHistoryHolds)
	case h.MaxAge < minHistoryMaxAge || h.MaxAge > maxHistoryMaxAge:
		return h, fmt.Errorf("%w: History.MaxAge: %s; want %s to %s (0 is %s)", ErrConfig, h.MaxAge, minHistoryMaxAge, maxHistoryMaxAge, DefaultHistoryMaxAge)
	}
	return h, nil
}

// How a hold ended (HoldEntry.End), and how its end is known
// (HoldEntry.EndKnown).
const (
	EndHeld     = ""         // not ended: held as of its last renewal
	EndReleased = "released" // released cleanly, written by its holder
	EndFenced   = "fenced"   // its lease was lost; written by the same process at its next claim of the ID
	EndExpired  = "expired"  // inferred: its holder wrote no end

	KnownWritten   = "written by its holder"
	KnownTTL       = "inferred: its last renewal plus the lease TTL passed"
	KnownLaterHold = "inferred: a later hold of the machine ID started"
)

// HoldEntry is one hold of a machine ID, as its holder recorded it (or,
// for this process's current hold, as it knows itself now).
type HoldEntry struct {
	Machine core.MachineID
	// Hold names it among the machine ID's holds: on Redis the start of
	// its token, on etcd its lease key's create revision. Lease says the
	// same for operators ("token …", "etcd lease … revision …").
	Hold, Lease string
	// Self: held by this process (Lease).
	Self bool
	// Provider, Range, Host, PID, Pod (POD_NAME, where set) and Version
	// (the build) name the holder.
	Provider, Range string
	Host            string
	PID             int
	Pod             string
	Version         string
	// Shape is the generator's layout, type, epoch and version; zero
	// before one was attached (HasShape false).
	Shape    core.Shape
	HasShape bool
	// TTL and MaxBorrow are the holder's lease TTL and the generator's
	// borrowing: an unended hold's IDs reach at most Renewed + TTL +
	// MaxBorrow.
	TTL, MaxBorrow time.Duration
	// Started is when the claim was sent; From is where its IDs' time
	// fields begin (the stored mark, a quarantine's floor, the previous
	// hold's exact end, or Started); Renewed its last renewal; Mark the
	// highest mark it saved (everything it issued lies below it). All on
	// the holder's clock.
	Started, From, Renewed, Mark time.Time
	// Ended is when it ended; End how (EndReleased, EndFenced, EndExpired;
	// EndHeld while held) and EndKnown how that is known.
	Ended    time.Time
	End      string
	EndKnown string
	// Note is what the holder said of its end (a fence's cause).
	Note string
}

// History is the hold history of one machine ID (Lease.History).
type History struct {
	Machine core.MachineID
	// Store is StoreRedis or StoreEtcd, or StoreNone for a fixed ID;
	// Prefix the key prefix.
	Store, Prefix string
	// Fixed: the machine ID is not leased here (a fixed ID: this
	// process's own, or another host's outside the lease ranges); Holds
	// then holds at most this process's own record.
	Fixed bool
	// Holds are oldest first (by From, then Started), their ends inferred.
	Holds []HoldEntry
	// Kept is the retention that bounds it; Full says the store held as
	// many holds as it keeps, so older ones may have been dropped.
	Kept HistoryConfig
	Full bool
	// Skipped says which entries could not be read and why.
	Skipped []string
}

// Match is what the history says of one instant (History.At).
type Match struct {
	// Holds are the holds whose interval contains the instant: one (the
	// holder), none, or several: a Conflict, two holds of one machine ID
	// that could both have issued then — a broken promise.
	Holds    []HoldEntry
	Conflict bool
	// Inferred: the one hold matched only through the inferred end of an
	// unended hold (its last renewal plus TTL and borrowing, cut at the
	// next hold's start).
	Inferred bool
	// Proven: no hold matched, and the history reaches back before the
	// instant: no hold recorded here covers it.
	Proven bool
	// Reason says why no hold (or more than one) matched.
	Reason string
}

// History reads the hold history of machine id under the lease's key
// prefix: oldest first, each end inferred where its holder wrote none,
// this process's current hold as it knows itself now. A fixed ID (static,
// iptable, k8s) and an ID outside the lease ranges keep no history: for
// this process's own ID the history is its own record since it started.
// A store that cannot be read is an error wrapping ErrUnavailable. It is
// for display and detection only.
func (l *Lease) History(ctx context.Context, id core.MachineID) (History, error) {
	if id > core.MaxMachine {
		return History{}, fmt.Errorf("%w: machine %d; want 0-%d", ErrRange, id, core.MaxMachine)
	}
	return l.h.history(ctx, id)
}

// At says which holds cover instant t, the instant of an ID of the
// machine (the start of its time unit): first by what their holders
// recorded, then, for an unended hold, by its inferred end. A hold's
// recorded span runs from From to its Mark (exclusive: no ID of the hold
// lies at or after a mark it saved, and the next holder starts at or
// after it) once it ended, and to the later of its last renewal and its
// Mark while unended; a hold that recorded no Mark (no generator had
// loaded it) recorded no span. An unended hold's inferred end is its last
// renewal plus its TTL and borrowing, cut at the next hold's From. now is the reader's clock, which says whether an
// unended hold is still live. Two recorded spans that contain t are a
// Conflict: a broken promise.
func (h History) At(t, now time.Time) Match {
	type span struct {
		e          HoldEntry
		from, last time.Time // what the holder recorded: [from, last)
		tailTo     time.Time // the inferred end; zero: none
		open       bool      // live: the tail has no end
	}
	spans := make([]span, len(h.Holds))
	for i, e := range h.Holds {
		s := span{e: e, from: e.From, last: e.Mark}
		if e.End != EndReleased && e.End != EndFenced {
			// Unended: once a generator loaded it (a Mark), it issued at
			// least until its last renewal; before, nothing is recorded
			// (the floor it will start from is not known yet either).
			if !e.Mark.IsZero() {
				s.last = leasestore.Latest(e.Mark, e.Renewed.Add(time.Millisecond))
			}
			s.tailTo = e.Renewed.Add(e.TTL + e.MaxBorrow)
			s.open = e.End == EndHeld
			if i+1 < len(h.Holds) {
				s.open = false
				s.tailTo = leasestore.Earliest(s.tailTo, h.Holds[i+1].From)
			}
		}
		spans[i] = s
	}
	var m Match
	for _, s := range spans {
		if !t.Before(s.from) && t.Before(s.last) {
			m.Holds = append(m.Holds, s.e)
		}
	}
	if len(m.Holds) == 0 {
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if s.e.End == EndReleased || s.e.End == EndFenced || t.Before(s.from) || t.Before(s.last) {
				continue
			}
			if s.open || t.Before(s.tailTo) {
				m.Holds, m.Inferred = []HoldEntry{s.e}, true
				break
			}
		}
	}
	switch {
	case len(m.Holds) > 1:
		m.Conflict = true
		m.Reason = fmt.Sprintf("%d holds of machine %d cover %s: two holders could both have issued then", len(m.Holds), h.Machine, t.UTC().Format(time.RFC3339Nano))
	case len(m.Holds) == 1:
	case h.Fixed:
		m.Reason = h.fixedReason(t)
	case len(h.Holds) == 0:
		m.Reason = fmt.Sprintf("no hold of machine %d is recorded in %s under %q: it was not leased here in the last %s, or under another store or key prefix",
			h.Machine, h.Store, h.Prefix, h.Kept.MaxAge)
	case t.Before(h.Holds[0].From) && (h.Full || !now.Add(-h.Kept.MaxAge).Before(t)):
		m.Reason = fmt.Sprintf("older than the history kept: it begins at %s (%d holds of machine %d, at most %d and %s kept)",
			h.Holds[0].From.UTC().Format(time.RFC3339Nano), len(h.Holds), h.Machine, h.Kept.Holds, h.Kept.MaxAge)
	default:
		m.Proven = true
		m.Reason = fmt.Sprintf("no hold of machine %d recorded in %s covers %s; its history reaches back to %s",
			h.Machine, h.Store, t.UTC().Format(time.RFC3339Nano), h.Holds[0].From.UTC().Format(time.RFC3339Nano))
	}
	return m
}

// fixedReason says why a fixed ID's history does not cover t.
func (h History) fixedReason(t time.Time) string {
	if len(h.Holds) == 0 {
		return fmt.Sprintf("machine %d is a fixed ID (static, iptable or k8s) or lies outside the lease ranges: fixed IDs keep no history, and this server does not hold it", h.Machine)
	}
	return fmt.Sprintf("machine %d is a fixed ID (%s): no history before this process started at %s", h.Machine, h.Holds[0].Provider,
		h.Holds[0].Started.UTC().Format(time.RFC3339Nano))
}

// recordOfHold is e's stored form, with run naming its process.
func recordOfHold(e HoldEntry, run string) leasestore.HoldRecord {
	r := leasestore.HoldRecord{V: 1, Machine: int(e.Machine), Hold: e.Hold, Lease: e.Lease, Run: run, Provider: e.Provider, Range: e.Range,
		Host: e.Host, PID: e.PID, Pod: e.Pod, Version: e.Version, TTLMs: e.TTL.Milliseconds(), BorrowMs: e.MaxBorrow.Milliseconds(),
		StartedMs: msOf(e.Started), FromMs: msOf(e.From), RenewedMs: msOf(e.Renewed), MarkMs: msOf(e.Mark), EndedMs: msOf(e.Ended),
		End: e.End, Note: leasestore.Clip(e.Note, leasestore.MaxNoteBytes)}
	if e.HasShape {
		r.Shape = leasestore.EncodeShape(e.Shape)
	}
	return r
}

// msOf is t in unix milliseconds, rounded up (a mark must not fall below
// what it bounds); 0 for the zero time.
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}

// decodeHold reads a stored entry of machine id, clipping every field.
func decodeHold(id core.MachineID, raw string) (HoldEntry, string, error) {
	if len(raw) > leasestore.MaxHoldBytes {
		return HoldEntry{}, "", fmt.Errorf("%d bytes or more, above %d: skipped unread", len(raw), leasestore.MaxHoldBytes)
	}
	var r leasestore.HoldRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return HoldEntry{}, "", fmt.Errorf("not a hold entry: %v", err)
	}
	if r.Machine != int(id) {
		return HoldEntry{}, "", fmt.Errorf("names machine %d, not %d", r.Machine, id)
	}
	e := HoldEntry{Machine: id, Hold: leasestore.Clip(r.Hold, leasestore.MaxTextBytes), Lease: leasestore.Clip(r.Lease, leasestore.MaxAddrBytes), Provider: leasestore.Clip(r.Provider, leasestore.MaxTextBytes),
		Range: leasestore.Clip(r.Range, leasestore.MaxTextBytes), Host: leasestore.Clip(r.Host, leasestore.MaxHostBytes), PID: max(r.PID, 0), Pod: leasestore.Clip(r.Pod, leasestore.MaxHostBytes),
		Version: leasestore.Clip(r.Version, leasestore.MaxTextBytes), TTL: msDuration(r.TTLMs), MaxBorrow: msDuration(r.BorrowMs),
		Started: msTime(r.StartedMs), From: msTime(r.FromMs), Renewed: msTime(r.RenewedMs), Mark: msTime(r.MarkMs),
		Ended: msTime(r.EndedMs), Note: leasestore.Clip(r.Note, leasestore.MaxNoteBytes)}
	if sh, err := leasestore.DecodeShape(r.Shape); r.Shape != "" && err == nil {
		e.Shape, e.HasShape = sh, true
	}
	switch r.End {
	case EndReleased, EndFenced:
		e.End, e.EndKnown = r.End, KnownWritten
	default:
		e.Ended = time.Time{} // no end written: the reader infers it
	}
	if e.From.IsZero() {
		e.From = e.Started
	}
	if e.Renewed.Before(e.Started) {
		e.Renewed = e.Started
	}
	return e, leasestore.Clip(r.Run, leasestore.MaxTextBytes), nil
}

// msDuration is a stored duration; negative or absurd ones are zero.
func msDuration(ms int64) time.Duration {
	if ms < 0 || ms > int64(maxHistoryMaxAge/time.Millisecond) {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// buildHistory makes the history of id from what a store read: entries
// decoded, sorted oldest first, this process's current hold (self, with
// run naming its record) replacing its stored one, the ends inferred at
// now.
func buildHistory(store, prefix string, id core.MachineID, kept HistoryConfig, raws []leasestore.RawHold, self *HoldEntry, run string, now time.Time) History {
	h := History{Machine: id, Store: store, Prefix: prefix, Kept: kept, Full: len(raws) >= kept.Holds}
	skipped := 0
	for _, r := range raws {
		if r.Skip != "" {
			skipped++
			if len(h.Skipped) < maxSkipNotes {
				h.Skipped = append(h.Skipped, fmt.Sprintf("%s: %s", r.Key, r.Skip))
			}
			continue
		}
		e, rrun, err := decodeHold(id, r.Value)
		switch {
		case err != nil:
			skipped++
			if len(h.Skipped) < maxSkipNotes {
				h.Skipped = append(h.Skipped, fmt.Sprintf("%s: %v", r.Key, err))
			}
		case self != nil && rrun == run && e.Hold == self.Hold:
			// this process's current hold: self below is current
		default:
			e.Self = run != "" && rrun == run
			h.Holds = append(h.Holds, e)
		}
	}
	if skipped > len(h.Skipped) {
		h.Skipped = append(h.Skipped, fmt.Sprintf("and %d more", skipped-len(h.Skipped)))
	}
	if self != nil {
		h.Holds = append(h.Holds, *self)
	}
	// By From first: each hold starts at or after the marks of those
	// before it, whatever its host's clock said when it claimed.
	slices.SortStableFunc(h.Holds, func(a, b HoldEntry) int {
		if c := a.From.Compare(b.From); c != 0 {
			return c
		}
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return cmp.Compare(a.Hold, b.Hold)
	})
	for i := range h.Holds {
		e := &h.Holds[i]
		if e.End != EndHeld {
			continue
		}
		switch {
		case i+1 < len(h.Holds):
			e.End, e.EndKnown, e.Ended = EndExpired, KnownLaterHold, leasestore.Earliest(e.Renewed.Add(e.TTL), h.Holds[i+1].Started)
		case !e.Self && !e.Renewed.Add(e.TTL).After(now):
			e.End, e.EndKnown, e.Ended = EndExpired, KnownTTL, e.Renewed.Add(e.TTL)
		}
	}
	return h
}

// podName is the pod the process runs in, where the Kubernetes downward
// API sets POD_NAME; "" elsewhere.
func podName() string { return leasestore.Clip(os.Getenv("POD_NAME"), leasestore.MaxHostBytes) }
