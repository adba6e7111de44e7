// Package capacity counts down to the limits an issuer meets with time and
// growth, before it meets them: the end of the layout's time field at the
// configured epoch, the machine-ID pool of each range, the sequence's
// ceiling (the share of time units that ran out, the borrowing in use),
// and each segment tag's numbers before the bound of its type. A Tracker
// samples the generator and the sequences in the background, so that the
// shares and rates cover a window, not a lifetime; it serves GET
// /v1/capacity (package rest), `vesta capacity` and the vesta_capacity_*
// metrics, which vesta serve registers (cmd/vesta/assemble).
//
// Nothing here decides anything: it reads counters and, for the pools,
// the lease store's member records through a coalesced read, so that
// neither a page nor a scrape adds a store read per call.
package capacity

import (
	"math"
	"time"

	"github.com/vesta-go/vesta/core"
)

// Thresholds of the time field's years left: the start-up warning and the
// alert (monitoring's VestaTimeFieldEnding says the same 2 years).
const (
	WarnYears  = 5
	AlertYears = 2
)

// Year is the year the reports count in: 365.25 days.
const Year = time.Duration(365.25 * 24 * float64(time.Hour))

// Status values of each part of a report: the severities of the alerts.
const (
	OK       = "ok"
	Warning  = "warning"
	Critical = "critical"
)

// Report is one server's capacity at At. Its JSON form is GET
// /v1/capacity's.
type Report struct {
	At       time.Time `json:"at"`
	Time     TimeField `json:"time"`
	Machine  Machine   `json:"machine"`
	Sequence Sequence  `json:"sequence"`
	Segments []Tag     `json:"segments"` // nil (JSON null): segment sequences off
	Status   string    `json:"status"`   // the worst part's
}

// TimeField is the layout's time field at the configured epoch: IDs
// cannot be issued past End.
type TimeField struct {
	Layout string    `json:"layout"`
	Type   string    `json:"type"`
	Epoch  time.Time `json:"epoch"`
	End    time.Time `json:"end"`
	// Left is End minus At, Years the same in years of 365.25 days.
	Left   float64 `json:"left_s"`
	Years  float64 `json:"years_left"`
	Status string  `json:"status"` // warning under WarnYears, critical under AlertYears
}

// Machine is the machine-ID pools a lease store hands out.
type Machine struct {
	// Provider gave this server's machine ID.
	Provider string `json:"provider"`
	// Fixed: a static, iptable or k8s ID, which no pool hands out; Note
	// says so and Pools is empty.
	Fixed bool   `json:"fixed"`
	Note  string `json:"note,omitempty"`
	// Pools are the lease ranges, server first.
	Pools []Pool `json:"pools"`
	// Error says why the store could not be read: Held is then -1.
	Error  string `json:"error,omitempty"`
	Status string `json:"status"`
}

// Pool is one lease range: how many of its IDs are held now.
type Pool struct {
	Range string `json:"range"` // "server" or "embedded"
	IDs   string `json:"ids"`   // "924-1023"
	// Held counts the IDs with a live member record (one per lease);
	// -1 when the store could not be read.
	Held  int `json:"held"`
	Total int `json:"total"`
	// Refused counts the claims of this server's lease that found every
	// ID of its range held (zero in the other range).
	Refused uint64 `json:"refused"`
	Status  string `json:"status"` // warning at 90% held, critical when full
}

// Sequence is the sequence's ceiling: how often units ran out, how much of
// the borrowing is in use.
type Sequence struct {
	Unit    float64 `json:"unit_s"`
	PerUnit uint64  `json:"ids_per_unit"`
	// Exhausted counts the units whose sequence ran out since start;
	// Share is the share of time at the ceiling over Window (exhausted
	// units times the unit, over the window), -1 before two samples.
	Exhausted uint64  `json:"exhausted_units"`
	Share     float64 `json:"share_at_ceiling"`
	Window    float64 `json:"window_s"`
	// Ahead is how far issuing runs ahead of the clock, of MaxBorrow;
	// BorrowShare the one over the other (0 without borrowing).
	Ahead       float64 `json:"ahead_s"`
	MaxBorrow   float64 `json:"max_borrow_s"`
	BorrowShare float64 `json:"borrow_in_use"`
	// Waits counts the sleeps past MaxBorrow since start.
	Waits  uint64 `json:"waits"`
	Status string `json:"status"` // warning at a 50% share or 80% of the borrowing
}

// Tag is one segment tag: its numbers before the bound.
type Tag struct {
	Tag string `json:"tag"`
	// MaxID is the store's max_id as this server last fetched it (one
	// past the last number handed out anywhere then); 0 before a fetch.
	MaxID int64 `json:"max_id"`
	// Bound is the last number the tag can issue: the bound of max_id's
	// type less the sequencer's headroom.
	Bound int64 `json:"bound"`
	Left  int64 `json:"left"`
	// PerDay is max_id's advance per day over Window (-1: not yet two
	// samples), DaysLeft Left at that rate (null while unknown or not
	// moving).
	PerDay   float64  `json:"per_day"`
	DaysLeft *float64 `json:"days_left"`
	Window   float64  `json:"window_s"`
	// Step is the last range's size; StepsPerMinute this server's
	// fetches per minute over Window.
	Step           int64   `json:"step"`
	StepsPerMinute float64 `json:"steps_per_minute"`
	Status         string  `json:"status"` // warning under 90 days, critical under 30 or under 1% left
}

// timeField is the time field of gen's layout and type at its epoch.
func timeField(codec core.Codec, t core.Type, at time.Time) TimeField {
	f := TimeField{Layout: codec.Layout().String(), Type: t.String(), Epoch: codec.Epoch()}
	end, err := codec.End(t)
	if err != nil { // a generator's own type always has an end
		return f
	}
	f.End = end
	left := end.Sub(at)
	f.Left, f.Years = left.Seconds(), left.Hours()/Year.Hours()
	f.Status = OK
	switch {
	case f.Years < AlertYears:
		f.Status = Critical
	case f.Years < WarnYears:
		f.Status = Warning
	}
	return f
}

// TimeLeft says how long a generator of codec and type t has left at at,
// and whether that is under WarnYears: for a start-up warning.
func TimeLeft(codec core.Codec, t core.Type, at time.Time) (end time.Time, left time.Duration, warn bool) {
	f := timeField(codec, t, at)
	return f.End, f.End.Sub(at), f.Status != OK
}

// worst is the more severe of two statuses.
func worst(a, b string) string {
	rank := func(s string) int {
		switch s {
		case Critical:
			return 2
		case Warning:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// finite is f, or 0 for a NaN or an infinity, which JSON cannot hold.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// poolStatus judges a pool: warning at 90% held, critical when full or
// when claims were refused.
func poolStatus(p Pool) string {
	switch {
	case p.Refused > 0 || (p.Total > 0 && p.Held >= p.Total):
		return Critical
	case p.Held >= 0 && p.Total > 0 && float64(p.Held) >= 0.9*float64(p.Total):
		return Warning
	}
	return OK
}
