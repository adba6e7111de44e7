package leasestore

import (
	"encoding/json"
	"time"

	"github.com/vesta-go/vesta/core"
)

// The hold history's stored form, shared by the stores and machineid
// (machineid's history.go says what the history is; each store's
// PutHold and Holds say where it lies). Like a member record, an entry is
// information only: nothing reads it for a safety decision, and its
// writes never fence.

// Bounds of the hold history.
const (
	// MaxHistoryHolds bounds History.Holds, and what a read returns.
	MaxHistoryHolds = 256
	// MaxHoldBytes bounds a stored entry (one is ~600 bytes): a larger
	// one is skipped unread.
	MaxHoldBytes = 2048
	// MaxNoteBytes bounds an entry's note (a fence's cause).
	MaxNoteBytes = 256
)

// Keep bounds the history of one machine ID: the latest Holds entries,
// none whose last instant is older than MaxAge (machineid's
// HistoryConfig, resolved).
type Keep struct {
	Holds  int
	MaxAge time.Duration
}

// HoldRecord is the stored form of one hold (machineid.HoldEntry): JSON,
// every instant in unix milliseconds.
type HoldRecord struct {
	V         int    `json:"v"`
	Machine   int    `json:"machine"`
	Hold      string `json:"hold"`
	Lease     string `json:"lease"`
	Run       string `json:"run"`
	Provider  string `json:"provider"`
	Range     string `json:"range"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	Pod       string `json:"pod,omitempty"`
	Version   string `json:"version"`
	Shape     string `json:"shape,omitempty"` // the shape key's JSON
	TTLMs     int64  `json:"ttl_ms"`
	BorrowMs  int64  `json:"borrow_ms"`
	StartedMs int64  `json:"started_ms"`
	FromMs    int64  `json:"from_ms"`
	RenewedMs int64  `json:"renewed_ms"`
	MarkMs    int64  `json:"mark_ms,omitempty"`
	EndedMs   int64  `json:"ended_ms,omitempty"`
	End       string `json:"end,omitempty"`
	Note      string `json:"note,omitempty"`
}

// Encode is r's stored form.
func (r HoldRecord) Encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Last is the record's last instant (unix ms): when it ended, else its
// last renewal; it orders and ages the history.
func (r HoldRecord) Last() int64 { return max(r.EndedMs, r.RenewedMs, r.StartedMs) }

// LastOf is the last instant of a stored entry; 0 (the oldest) for one
// that is too large or not an entry.
func LastOf(raw []byte) int64 {
	var r HoldRecord
	if len(raw) > MaxHoldBytes || json.Unmarshal(raw, &r) != nil {
		return 0
	}
	return r.Last()
}

// RawHold is one history entry as a store read it: its key (for notes),
// its value, or why it could not be read.
type RawHold struct {
	Key   string
	Value string
	Skip  string // non-empty: not read, because
}

// Span is what the hold history records of the guard's hold: the floor its
// IDs lie above (what Load returned, else the quarantine's), the last mark
// saved, whether a generator loaded it, and the shape it records ("" when
// none).
func (g *Guard) Span() (floor, saved time.Time, loaded bool, shape string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	floor = g.floor
	if !g.loaded {
		floor = g.q.Floor()
	}
	return floor, g.saved, g.loaded, g.shape
}

// EncodeShape is the stored form of a core.Shape (as the shape key holds
// it); DecodeShape reads it back.
func EncodeShape(s core.Shape) string { return encodeShape(s) }

// DecodeShape: see EncodeShape.
func DecodeShape(s string) (core.Shape, error) { return decodeShape(s) }
