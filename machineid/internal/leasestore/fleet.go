package leasestore

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/vesta-go/vesta/core"
)

// Fleet is what every issuer leasing under one key prefix must share,
// recorded in the lease store by the first one and compared by every
// later one (the fleet record, docs/design/fleet-record.md): the shape (layout, type,
// epoch, version). IDs of two layouts can be equal 64-bit values (the
// fields sit elsewhere), and IDs of one fleet must sort and decode alike.
//
// It records no timing. Earlier versions recorded, on Redis, the lease
// TTL, max_borrow and max_clock_skew that a takeover quarantine reckoned
// with; but a record Redis can lose cannot bind what a holder did before
// the loss, so the quarantine now waits for MaxRedisReach, which binds
// every host at validation. Old records' timing fields are ignored, and
// old versions compare timing only when both records carry it.
type Fleet struct {
	Layout  string `json:"layout"`
	Type    uint8  `json:"type"`
	EpochMs int64  `json:"epoch_ms"`
	Version uint8  `json:"version"`
}

// FleetOf is the record of a generator of shape sh.
func FleetOf(sh core.Shape) Fleet {
	return Fleet{Layout: sh.Layout.String(), Type: uint8(sh.Type), EpochMs: sh.EpochMs, Version: sh.Version}
}

// Encode is the record's stored form.
func (f Fleet) Encode() string {
	b, _ := json.Marshal(f)
	return string(b)
}

func decodeFleet(s string) (Fleet, error) {
	var f Fleet
	err := json.Unmarshal([]byte(s), &f)
	return f, err
}

// diff names every setting in which this host (f) differs from the
// recorded fleet (rec), with both values and the key that sets it.
func (f Fleet) diff(rec Fleet) []string {
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

// JudgeFleet compares this host's record f with the stored one (raw). A
// record that does not decode is an error naming the key.
func JudgeFleet(f Fleet, raw, key, where string) error {
	rec, err := decodeFleet(raw)
	if err != nil {
		return fmt.Errorf("machineid: the fleet record %s in %s is damaged (%q: %v); delete it once every host has the same settings", key, where, raw, err)
	}
	if d := f.diff(rec); len(d) > 0 {
		return fleetError(where, key, d, f.Layout != rec.Layout)
	}
	return nil
}
