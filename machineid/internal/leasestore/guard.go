package leasestore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/vesta-go/vesta/core"
)

// MarkStore reads and writes one machine ID's time-guard mark and shape
// in a lease store; a write succeeds only while the hold's lease is still
// the one in the store.
type MarkStore interface {
	// Read returns the stored mark in unix milliseconds (0: none) and the
	// shape's JSON ("" when none). A damaged value is an error.
	Read(ctx context.Context) (ms int64, shape string, err error)
	// Write raises the mark to ms (a lower ms leaves it) and records shape
	// unless it is "". held is false when the lease is not the hold's.
	Write(ctx context.Context, ms int64, shape string) (held bool, err error)
	// Names are the keys of the mark and the lease, for messages.
	Names() (mark, lease string)
}

// Quarantine is what a claim knows about the ID's previous holders, and
// so where the new holder's time fields must start.
type Quarantine struct {
	// Trusted: the stored mark lies above everything ever issued with the
	// ID (etcd never loses an acknowledged write; on Redis, the mark was
	// written by this very Redis instance and nothing could evict it).
	Trusted bool
	// Exact, when not zero, is the exact end of the previous hold, from a
	// release on this same store: it replaces the stored mark, which
	// exceeds it only by that holder's unused reservation.
	Exact time.Time
	// Otherwise a live holder may exist whose lease the store lost. From
	// is an instant, on this host's clock, by which every such holder's
	// lease was lost, plus the error in reading it on this clock (this
	// host's max_clock_skew, twice over when from came from another
	// master's TIME); the floor is Reach past it (see Floor).
	From time.Time
	// Reach is machineid.MaxRedisReach (Base.Reach), or, only under the
	// planted bug OwnTiming (PlantedBugs), this host's own lease TTL and
	// max_clock_skew, for the lease simulation to find.
	Reach time.Duration
}

// Waits reports whether the floor depends on the clock: no clean release
// and no trusted mark.
func (q Quarantine) Waits() bool { return !q.Trusted && q.Exact.IsZero() }

// Floor is the instant the new holder's time fields must lie above; zero
// when the stored mark alone is enough.
//
// Without a trusted mark or a clean release, a live holder H may still
// exist whose lease the store lost by From. H fences at its next renewal
// and in any case by its deadline, less than its LeaseTTL after the loss;
// until then its clock is within its MaxClockSkew of the store's, and its
// time fields run at most its MaxBorrow ahead of its clock. Those three
// are H's settings, which this host cannot know: the fleet record that
// held them may have gone with the data, and H may run another build. So
// the floor counts Reach, machineid.MaxRedisReach, the bound every host's
// three settings are held to at validation, never this host's own.
func (q Quarantine) Floor() time.Time {
	switch {
	case !q.Exact.IsZero():
		return q.Exact
	case q.Trusted:
		return time.Time{}
	}
	return q.From.Add(q.Reach + time.Millisecond)
}

// Guard is the time guard's store beside a lease: the mark of one
// machine ID, which only the holder of the lease may write. Its Load never
// returns less than the quarantine's floor.
type Guard struct {
	ms      MarkStore
	machine core.MachineID
	q       Quarantine
	// NotHolder, when set, is called when a save finds the lease gone, so
	// the lease checks at once instead of at its next renewal. The lease
	// sets it before the guard is used.
	NotHolder func()

	// mu is held across every write, so that the release reads the last
	// one that succeeded and none succeeds after it.
	mu       sync.Mutex
	shape    string    // JSON recorded with every write; "" before LoadFor
	loaded   bool      // a generator loaded the mark
	floor    time.Time // what Load returned (the highest), zero before
	saved    time.Time // the last mark written, exact end included
	released bool      // no write succeeds any more
}

// NewGuard is the guard of machine id's mark in ms, for a claim that
// knows q of the ID's previous holders.
func NewGuard(ms MarkStore, id core.MachineID, q Quarantine) *Guard {
	return &Guard{ms: ms, machine: id, q: q}
}

// shapeJSON is the stored form of a core.Shape.
type shapeJSON struct {
	Layout  string `json:"layout"`
	Type    uint8  `json:"type"` // a number: core.Type's text form would change the stored format
	EpochMs int64  `json:"epoch_ms"`
	Version uint8  `json:"version"`
}

func encodeShape(s core.Shape) string {
	b, _ := json.Marshal(shapeJSON{Layout: s.Layout.String(), Type: uint8(s.Type), EpochMs: s.EpochMs, Version: s.Version})
	return string(b)
}

func decodeShape(s string) (core.Shape, error) {
	var j shapeJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return core.Shape{}, err
	}
	l, err := core.ParseLayout(j.Layout)
	if err != nil {
		return core.Shape{}, err
	}
	if core.Type(j.Type) > core.MinGranularity || j.Version > 1 {
		return core.Shape{}, fmt.Errorf("type %d or version %d out of range", j.Type, j.Version)
	}
	return core.Shape{Layout: l, Type: core.Type(j.Type), EpochMs: j.EpochMs, Version: j.Version}, nil
}

// Load reads the mark: the higher of the stored mark and the quarantine's
// floor. None is the zero Time, a damaged one an error (guessing could
// re-issue IDs).
func (g *Guard) Load(ctx context.Context) (time.Time, error) {
	m, err := g.LoadFor(ctx, core.GuardUse{Machine: g.machine})
	return m.At, err
}

// LoadFor is Load with the shape the mark was written with; every later
// write records use.Shape (unless use.Shape is the zero Shape of a plain
// Load).
func (g *Guard) LoadFor(ctx context.Context, use core.GuardUse) (core.Mark, error) {
	ms, sh, err := g.ms.Read(ctx)
	if err != nil {
		return core.Mark{}, err
	}
	var m core.Mark
	if ms > 0 {
		m.At = time.UnixMilli(ms).UTC()
		if sh != "" {
			if m.Shape, err = decodeShape(sh); err != nil {
				markKey, _ := g.ms.Names()
				return core.Mark{}, fmt.Errorf("machineid: the shape beside %s is damaged (%q: %v); delete it only if every generator of machine ID %d had the same layout, type, epoch and version",
					markKey, sh, err, g.machine)
			}
			m.HasShape = true
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if use.Shape != (core.Shape{}) {
		g.shape = encodeShape(use.Shape)
	}
	if !g.q.Exact.IsZero() {
		m.At = g.q.Exact
	}
	m.At = Latest(m.At, g.q.Floor())
	g.floor = Latest(g.floor, m.At)
	g.loaded = true
	return m, nil
}

// Save raises the mark to mark if the lease is still ours. A lower mark
// (a generator's exact end, below its last reservation) leaves the stored
// one and is kept for the release.
func (g *Guard) Save(ctx context.Context, mark time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	markKey, leaseKey := g.ms.Names()
	if g.released {
		return fmt.Errorf("%w: %s was released; the mark %s was not written", ErrNotHolder, leaseKey, markKey)
	}
	// A hold that may follow a holder the store lost never stores a mark
	// below its quarantine's floor: the mark is written with this store
	// instance's identity, so the next claim trusts it, and a lost holder
	// may have issued up to the floor.
	if g.q.Waits() {
		mark = Latest(mark, g.q.Floor())
	}
	ms := mark.UnixMilli()
	if mark.Sub(time.UnixMilli(ms)) > 0 {
		ms++ // round up: the mark must not fall below what was issued
	}
	held, err := g.ms.Write(ctx, ms, g.shape)
	if err != nil {
		return err
	}
	if !held {
		if g.NotHolder != nil {
			g.NotHolder()
		}
		return fmt.Errorf("%w: %s no longer holds this process's lease; the mark %s was not written", ErrNotHolder, leaseKey, markKey)
	}
	g.saved = time.UnixMilli(ms).UTC()
	return nil
}

// SetShape makes every later write record sh.
func (g *Guard) SetShape(sh core.Shape) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shape = encodeShape(sh)
}

// Final stops every later write and returns the mark for the release:
// everything issued under this hold lies below it, and so does everything
// the hold had to start above. ok is false when that is not known (a hold
// no generator loaded, whose stored mark cannot be read).
//
// A hold that no generator loaded issued nothing, so its release is as
// exact as any: the next holder starts where this one would have (the
// stored mark, the previous exact end, or the quarantine's floor), instead
// of waiting out a quarantine of its own.
func (g *Guard) Final(ctx context.Context) (time.Time, bool) {
	g.mu.Lock()
	g.released = true
	loaded, floor, saved := g.loaded, g.floor, g.saved
	g.mu.Unlock()
	if loaded {
		return Latest(floor, saved), true
	}
	end := Latest(g.q.Floor(), saved)
	if g.q.Exact.IsZero() { // the stored mark counts unless an exact end replaces it
		ms, _, err := g.ms.Read(ctx)
		if err != nil {
			return time.Time{}, false
		}
		if ms > 0 {
			end = Latest(end, time.UnixMilli(ms).UTC())
		}
	}
	return end, true
}

// QuarantineFloor is the floor the first IDs must lie above (see
// Quarantine.Floor), and whether it depends on the clock (see
// Quarantine.Waits).
func (g *Guard) QuarantineFloor() (time.Time, bool) {
	return g.q.Floor(), g.q.Waits()
}

// Quarantine is what the claim knew of the ID's previous holders.
func (g *Guard) Quarantine() Quarantine { return g.q }
