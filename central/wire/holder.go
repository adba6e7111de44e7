package wire

import (
	"fmt"
	"time"

	"github.com/vesta-go/vesta/api"
)

// ProcHolder: [{id}] -> Holder map, the hold of the ID's machine whose
// span contains the ID's instant, from the server's hold history (package
// api's Holders, which REST's GET /v1/ids/{id}?holder=true reads too), or
// why none is known. A history the store cannot read fails the call with
// unavailable, naming the machine ID.
const ProcHolder = "Vesta.Holder"

// HolderParams are the arguments of Vesta.Holder.
type HolderParams struct {
	ID uint64 `codec:"id"`
}

// Holder is the result of Vesta.Holder: the keys of REST's holder object,
// its booleans as 0 or 1 (as Info's flags are).
type Holder struct {
	Conflict uint64   `codec:"conflict"` // 1: several holds cover the instant, a broken promise
	Holds    []Hold   `codec:"holds"`    // the holds that cover the instant
	Inferred uint64   `codec:"inferred"` // 1: the one hold matched through an inferred end
	Known    uint64   `codec:"known"`    // 1: exactly one hold covers the instant
	Reason   string   `codec:"reason"`   // why none (or several) matched
	Skipped  []string `codec:"skipped"`  // history entries that could not be read
	Store    string   `codec:"store"`    // "redis", "etcd" or "none"
}

// Hold is one hold in a Holder: its times RFC 3339 UTC with nanoseconds,
// "" for none.
type Hold struct {
	End      string `codec:"end"` // how it ended: released, fenced, expired; "" not yet
	EndKnown string `codec:"end_known"`
	Ended    string `codec:"ended"`
	From     string `codec:"from"` // its span's start: no ID of it is before
	Hold     string `codec:"hold"`
	Host     string `codec:"host"`
	Layout   string `codec:"layout"`
	Lease    string `codec:"lease"`
	Mark     string `codec:"mark"` // its span's end as last saved
	Note     string `codec:"note"`
	PID      uint64 `codec:"pid"`
	Pod      string `codec:"pod"`
	Provider string `codec:"provider"`
	Range    string `codec:"range"`
	Renewed  string `codec:"renewed"`
	Self     uint64 `codec:"self"` // 1: this server's own hold
	Started  string `codec:"started"`
	TTLMS    uint64 `codec:"ttl_ms"`
	Version  string `codec:"version"`
}

// HolderOf returns the wire form of h.
func HolderOf(h api.Holder) Holder {
	out := Holder{Conflict: flag(h.Conflict), Inferred: flag(h.Inferred), Known: flag(h.Known), Reason: h.Reason,
		Store: h.Store, Holds: make([]Hold, 0, len(h.Holds)), Skipped: append([]string{}, h.Skipped...)}
	for _, x := range h.Holds {
		out.Holds = append(out.Holds, Hold{End: x.End, EndKnown: x.EndKnown, Ended: stamp(x.Ended), From: stamp(x.From),
			Hold: x.Hold, Host: x.Host, Layout: x.Layout, Lease: x.Lease, Mark: stamp(x.Mark), Note: x.Note,
			PID: uint64(max(x.PID, 0)), Pod: x.Pod, Provider: x.Provider, Range: x.Range, Renewed: stamp(x.Renewed),
			Self: flag(x.Self), Started: stamp(x.Started), TTLMS: uint64(max(x.TTL.Milliseconds(), 0)), Version: x.Version})
	}
	return out
}

func flag(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// stamp is t in RFC 3339 with nanoseconds, UTC; "" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (h *Holder) appendTo(dst []byte) []byte {
	dst = appendUint(appendStr(append(dst, 0x87), "conflict"), h.Conflict)
	dst = appendArrayLen(appendStr(dst, "holds"), len(h.Holds))
	for i := range h.Holds {
		dst = h.Holds[i].appendTo(dst)
	}
	dst = appendUint(appendStr(dst, "inferred"), h.Inferred)
	dst = appendUint(appendStr(dst, "known"), h.Known)
	dst = appendStr(appendStr(dst, "reason"), h.Reason)
	dst = appendArrayLen(appendStr(dst, "skipped"), len(h.Skipped))
	for _, s := range h.Skipped {
		dst = appendStr(dst, s)
	}
	return appendStr(appendStr(dst, "store"), h.Store)
}

func (x *Hold) appendTo(dst []byte) []byte {
	dst = appendStr(appendStr(appendMapLen(dst, 19), "end"), x.End)
	dst = appendStr(appendStr(dst, "end_known"), x.EndKnown)
	dst = appendStr(appendStr(dst, "ended"), x.Ended)
	dst = appendStr(appendStr(dst, "from"), x.From)
	dst = appendStr(appendStr(dst, "hold"), x.Hold)
	dst = appendStr(appendStr(dst, "host"), x.Host)
	dst = appendStr(appendStr(dst, "layout"), x.Layout)
	dst = appendStr(appendStr(dst, "lease"), x.Lease)
	dst = appendStr(appendStr(dst, "mark"), x.Mark)
	dst = appendStr(appendStr(dst, "note"), x.Note)
	dst = appendUint(appendStr(dst, "pid"), x.PID)
	dst = appendStr(appendStr(dst, "pod"), x.Pod)
	dst = appendStr(appendStr(dst, "provider"), x.Provider)
	dst = appendStr(appendStr(dst, "range"), x.Range)
	dst = appendStr(appendStr(dst, "renewed"), x.Renewed)
	dst = appendUint(appendStr(dst, "self"), x.Self)
	dst = appendStr(appendStr(dst, "started"), x.Started)
	dst = appendUint(appendStr(dst, "ttl_ms"), x.TTLMS)
	return appendStr(appendStr(dst, "version"), x.Version)
}

// decode reads a Holder map as decodeResultMap reads the flat results: a
// key it lacks stays zero, keys it does not know are skipped, nil reads as
// zero. holds is an array of Hold maps and skipped an array of strings;
// what they hold grows with what the bytes hold, never with a header.
func (h *Holder) decode(b []byte) error {
	h.Holds, h.Skipped = []Hold{}, []string{}
	return decodeResultMap(b, []resultField{
		{key: "conflict", u: &h.Conflict},
		{key: "holds", sub: func(r *reader) error {
			n, err := r.arrayOf()
			if err != nil {
				return err
			}
			for i := range n {
				start := r.i
				if err := r.skip(); err != nil {
					return fmt.Errorf("[%d]: %w", i, err)
				}
				var x Hold
				if err := x.decode(r.b[start:r.i]); err != nil {
					return fmt.Errorf("[%d]: %w", i, err)
				}
				h.Holds = append(h.Holds, x)
			}
			return nil
		}},
		{key: "inferred", u: &h.Inferred},
		{key: "known", u: &h.Known},
		{key: "reason", s: &h.Reason},
		{key: "skipped", sub: func(r *reader) error {
			n, err := r.arrayOf()
			if err != nil {
				return err
			}
			for i := range n {
				s, err := r.str()
				if err != nil {
					return fmt.Errorf("[%d]: %w", i, err)
				}
				h.Skipped = append(h.Skipped, string(s))
			}
			return nil
		}},
		{key: "store", s: &h.Store},
	})
}

func (x *Hold) decode(b []byte) error {
	return decodeResultMap(b, []resultField{
		{key: "end", s: &x.End},
		{key: "end_known", s: &x.EndKnown},
		{key: "ended", s: &x.Ended},
		{key: "from", s: &x.From},
		{key: "hold", s: &x.Hold},
		{key: "host", s: &x.Host},
		{key: "layout", s: &x.Layout},
		{key: "lease", s: &x.Lease},
		{key: "mark", s: &x.Mark},
		{key: "note", s: &x.Note},
		{key: "pid", u: &x.PID},
		{key: "pod", s: &x.Pod},
		{key: "provider", s: &x.Provider},
		{key: "range", s: &x.Range},
		{key: "renewed", s: &x.Renewed},
		{key: "self", u: &x.Self},
		{key: "started", s: &x.Started},
		{key: "ttl_ms", u: &x.TTLMS},
		{key: "version", s: &x.Version},
	})
}
