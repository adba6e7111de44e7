package machineid

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/vesta-go/vesta/core"
)

// fleet is what every issuer leasing under one key prefix must share,
// recorded in the lease store by the first one and compared by every
// later one (the fleet record, DESIGN.md §3.8):
//
//   - the shape (layout, type, epoch, version): IDs of two layouts can be
//     equal 64-bit values (the fields sit elsewhere), and IDs of one fleet
//     must sort and decode alike;
//   - on Redis, the timing a new holder's quarantine reckons with: the
//     lease TTL, max_borrow and max_clock_skew of the holder it may follow
//     must not exceed its own. etcd has no quarantine, so it records none.
type fleet struct {
	Layout         string `json:"layout"`
	Type           uint8  `json:"type"`
	EpochMs        int64  `json:"epoch_ms"`
	Version        uint8  `json:"version"`
	LeaseTTLMs     int64  `json:"lease_ttl_ms,omitempty"`
	MaxBorrowMs    int64  `json:"max_borrow_ms,omitempty"`
	MaxClockSkewMs int64  `json:"max_clock_skew_ms,omitempty"`
	// Borrow is recorded even when zero on Redis: zero is a setting.
	HasTiming bool `json:"timing,omitempty"`
}

// fleetOf is the record of a generator with cfg's shape and MaxBorrow,
// with the timing when timed (Redis).
func fleetOf(cfg core.Config, timed bool, ttl, skew time.Duration) (fleet, error) {
	sh, err := cfg.Shape()
	if err != nil {
		return fleet{}, err
	}
	f := fleet{Layout: sh.Layout.String(), Type: uint8(sh.Type), EpochMs: sh.EpochMs, Version: sh.Version}
	if timed {
		f.HasTiming = true
		f.LeaseTTLMs, f.MaxBorrowMs, f.MaxClockSkewMs = ttl.Milliseconds(), cfg.MaxBorrow.Milliseconds(), skew.Milliseconds()
	}
	return f, nil
}

func (f fleet) encode() string {
	b, _ := json.Marshal(f)
	return string(b)
}

func decodeFleet(s string) (fleet, error) {
	var f fleet
	err := json.Unmarshal([]byte(s), &f)
	return f, err
}

// diff names every setting in which this host (f) differs from the
// recorded fleet (rec), with both values and the key that sets it.
func (f fleet) diff(rec fleet) []string {
	var out []string
	add := func(key string, mine, theirs any) {
		out = append(out, fmt.Sprintf("%s %v (the fleet's: %v)", key, mine, theirs))
	}
	if f.Layout != rec.Layout {
		add("id.layout", f.Layout, rec.Layout)
	}
	if f.Type != rec.Type {
		add("id.type", core.Type(f.Type), core.Type(rec.Type))
	}
	if f.EpochMs != rec.EpochMs {
		add("id.epoch", time.UnixMilli(f.EpochMs).UTC().Format(time.RFC3339Nano), time.UnixMilli(rec.EpochMs).UTC().Format(time.RFC3339Nano))
	}
	if f.Version != rec.Version {
		add("id.version", f.Version, rec.Version)
	}
	if f.HasTiming && rec.HasTiming {
		ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
		if f.LeaseTTLMs != rec.LeaseTTLMs {
			add("machine.redis.lease_ttl", ms(f.LeaseTTLMs), ms(rec.LeaseTTLMs))
		}
		if f.MaxBorrowMs != rec.MaxBorrowMs {
			add("id.max_borrow", ms(f.MaxBorrowMs), ms(rec.MaxBorrowMs))
		}
		if f.MaxClockSkewMs != rec.MaxClockSkewMs {
			add("machine.redis.max_clock_skew", ms(f.MaxClockSkewMs), ms(rec.MaxClockSkewMs))
		}
	}
	return out
}

// fleetError is the refusal of a host whose settings differ from the
// fleet's: it names each setting with both values, where the record is and
// how to change a fleet's settings.
func fleetError(where, key string, diffs []string, layout bool) error {
	fix := "configure this host like the fleet"
	if layout {
		fix += "; a fleet cannot change its layout, as IDs of two layouts can be equal 64-bit values"
	}
	return fmt.Errorf("%w: %s, the fleet record %s in %s; %s (to change a fleet's settings, stop every host leasing under this key prefix, delete %s, and start them with the new settings)",
		ErrFleet, strings.Join(diffs, ", "), key, where, fix, key)
}

// judgeFleet compares this host's record f with the stored one (raw). A
// record that does not decode is an error naming the key.
func judgeFleet(f fleet, raw, key, where string) error {
	rec, err := decodeFleet(raw)
	if err != nil {
		return fmt.Errorf("machineid: the fleet record %s in %s is damaged (%q: %v); delete it once every host has the same settings", key, where, raw, err)
	}
	if d := f.diff(rec); len(d) > 0 {
		return fleetError(where, key, d, f.Layout != rec.Layout)
	}
	return nil
}
