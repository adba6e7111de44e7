package wire

import (
	"fmt"
	"time"

	"github.com/vesta-go/vesta/api"

	"github.com/vesta-go/vesta/core"
)

// Procedure names: what msgpack-RPC's method field holds, called the
// procedure here so that "method" keeps one meaning, the publish method of
// an ID (core.Method).
const (
	ProcGenID     = "Vesta.GenID"
	ProcGenIDs    = "Vesta.GenIDs"
	ProcExpID     = "Vesta.ExpID"
	ProcMakeID    = "Vesta.MakeID"
	ProcTransTime = "Vesta.TransTime"
	ProcInfo      = "Vesta.Info"
	ProcTakeIDs   = "Vesta.TakeIDs"
)

var procedures = [...]string{ProcGenID, ProcGenIDs, ProcExpID, ProcMakeID, ProcTransTime, ProcInfo,
	ProcTakeIDs, ProcNextSeq, ProcNextSeqs, ProcMask, ProcUnmask, ProcHolder}

// Procedures returns every procedure name, in the order above.
func Procedures() []string { return procedures[:] }

// GenIDsParams are the arguments of Vesta.GenIDs.
type GenIDsParams struct {
	Count uint64 `codec:"count"` // 1 ... the server's max_batch
}

// TakeIDsParams are the arguments of Vesta.TakeIDs.
type TakeIDsParams struct {
	Count uint64 `codec:"count"` // 1 ... the server's max_batch
	// Singles is 1 when the count IDs are for as many single-ID calls a
	// client coalesced into one request: the server issues them as it
	// issues single IDs, in one step and never paced at the sequence's
	// ceiling (Info's singles says it can). 0, or the key left out: a
	// batch. Sent only when 1.
	Singles uint64 `codec:"singles,omitempty"`
}

// TakeIDsResult is the result of Vesta.TakeIDs: between 0 and count IDs in
// increasing order, issued at once, never waited for. When it holds fewer
// than count, RetryAfterMS (at least 1) says in how many milliseconds the
// server's sequence will have room again; otherwise it is 0.
type TakeIDsResult struct {
	IDs          []uint64 `codec:"ids"`
	RetryAfterMS uint64   `codec:"retry_after_ms"`
}

// ExpIDParams are the arguments of Vesta.ExpID.
type ExpIDParams struct {
	ID uint64 `codec:"id"`
}

// MakeIDParams are the arguments of Vesta.MakeID. A nil field takes the
// server's own value (see core.Partial).
type MakeIDParams struct {
	Time    uint64  `codec:"time"`
	Seq     uint64  `codec:"seq"`
	Machine *uint64 `codec:"machine,omitempty"`
	Method  *uint64 `codec:"method,omitempty"`
	Type    *uint64 `codec:"type,omitempty"`
	Version *uint64 `codec:"version,omitempty"`
}

// MakeIDParamsOf returns the arguments that make p.
func MakeIDParamsOf(p core.Partial) MakeIDParams {
	return MakeIDParams{Time: p.Time, Seq: p.Seq, Machine: p.Machine, Method: p.Method, Type: p.Type, Version: p.Version}
}

// Partial returns the arguments as a core.Partial.
func (p MakeIDParams) Partial() core.Partial {
	return core.Partial{Time: p.Time, Seq: p.Seq, Machine: p.Machine, Method: p.Method, Type: p.Type, Version: p.Version}
}

// TransTimeParams are the arguments of Vesta.TransTime.
type TransTimeParams struct {
	Time uint64  `codec:"time"`           // a raw time field
	Type *uint64 `codec:"type,omitempty"` // its type; nil is the server's
}

// DecodeParams decodes the Params of a request into dst, which is one of
// *GenIDsParams, *TakeIDsParams, *ExpIDParams, *MakeIDParams, *TransTimeParams,
// *NextSeqParams, *NextSeqsParams, *MaskParams, *UnmaskParams,
// *HolderParams, or nil for
// procedures without arguments (then only an absent or empty map passes). It
// is strict: every key must be known and given once, required keys must be
// present, and values must follow the rules of fields.go (non-negative
// integers or their decimal text, names for method and type, nil for an
// optional field left out; a tag: a string of 1-MaxTagLen bytes of UTF-8;
// mask.go's arrays and bounded strings). Errors are
// InvalidArgument *Errors that name the field.
func DecodeParams(params []byte, dst any) error {
	var fs []field
	switch p := dst.(type) {
	case nil:
	case *GenIDsParams:
		fs = []field{{name: "count", dst: &p.Count}}
	case *TakeIDsParams:
		var singles *uint64
		if err := decodeFields(params, []field{{name: "count", dst: &p.Count}, {name: "singles", opt: &singles}}); err != nil {
			return err
		}
		p.Singles = 0
		if singles != nil {
			if *singles > 1 {
				return api.Errorf(api.InvalidArgument, "singles: %d; want 0 or 1", *singles)
			}
			p.Singles = *singles
		}
		return nil
	case *ExpIDParams:
		fs = []field{{name: "id", dst: &p.ID}}
	case *HolderParams:
		fs = []field{{name: "id", dst: &p.ID}}
	case *TransTimeParams:
		fs = []field{{name: "time", dst: &p.Time}, {name: "type", opt: &p.Type, named: true}}
	case *MakeIDParams:
		fs = []field{
			{name: "time", dst: &p.Time},
			{name: "seq", dst: &p.Seq},
			{name: "machine", opt: &p.Machine},
			{name: "method", opt: &p.Method, named: true},
			{name: "type", opt: &p.Type, named: true},
			{name: "version", opt: &p.Version},
		}
	default:
		if err, ok := decodeSeqParams(params, dst); ok {
			return err
		}
		if err, ok := decodeMaskParams(params, dst); ok {
			return err
		}
		return fmt.Errorf("wire: DecodeParams cannot decode into %T", dst)
	}
	return decodeFields(params, fs)
}

// field is one named argument: required (dst, or str for a tag) or
// optional (opt); named when it takes names too (fields.go). A field of
// another shape has a read of its own, required when need is set.
type field struct {
	name  string
	dst   *uint64
	opt   **uint64
	str   *string
	named bool
	read  func(*reader) error
	need  bool
}

func decodeFields(params []byte, fs []field) error {
	if params == nil {
		return missing(fs, 0)
	}
	r := reader{b: params}
	n, err := r.mapLen()
	if err != nil {
		return api.Errorf(api.InvalidArgument, "params: %v", err)
	}
	var seen uint
	for ; n > 0; n-- {
		key, err := r.str()
		if err != nil {
			return api.Errorf(api.InvalidArgument, "params key: %v", err)
		}
		k := -1
		for j := range fs {
			if string(key) == fs[j].name {
				k = j
			}
		}
		switch {
		case k < 0 && len(fs) == 0:
			return api.Errorf(api.InvalidArgument, "unknown field %s: the procedure takes no params", quote(key))
		case k < 0:
			return api.Errorf(api.InvalidArgument, "unknown field %s", quote(key))
		case seen&(1<<k) != 0:
			return api.Errorf(api.InvalidArgument, "field %s given twice", fs[k].name)
		}
		seen |= 1 << k
		if fs[k].read != nil {
			if err := fs[k].read(&r); err != nil {
				if we, ok := err.(*api.Error); ok {
					return we
				}
				return api.Errorf(api.InvalidArgument, "%s: %v", fs[k].name, err)
			}
			continue
		}
		if fs[k].str != nil {
			s, err := r.tag()
			if err != nil {
				return api.Errorf(api.InvalidArgument, "%s: %v", fs[k].name, err)
			}
			*fs[k].str = s
			continue
		}
		v, null, err := r.fieldValue(fs[k])
		switch {
		case err != nil:
			return err
		case null && fs[k].dst != nil: // nil is leaving the field out
			return api.Errorf(api.InvalidArgument, "missing field %s (null)", fs[k].name)
		case null:
		case fs[k].dst != nil:
			*fs[k].dst = v
		default:
			*fs[k].opt = &v
		}
	}
	if r.i != len(params) {
		return api.Errorf(api.InvalidArgument, "params: trailing bytes after the map")
	}
	return missing(fs, seen)
}

// missing reports the first required field not in seen.
func missing(fs []field, seen uint) error {
	for j, f := range fs {
		if (f.dst != nil || f.str != nil || f.need) && seen&(1<<j) == 0 {
			return api.Errorf(api.InvalidArgument, "missing field %s", f.name)
		}
	}
	return nil
}

// Explanation is the result of Vesta.ExpID: an ID taken apart. Its keys
// are those of core.Explanation's JSON form, except that the ID is a
// number, as msgpack has unsigned 64-bit integers.
type Explanation struct {
	ID         uint64 `codec:"id"`
	Version    uint64 `codec:"version"`
	Type       uint64 `codec:"type"`
	TypeName   string `codec:"type_name"`
	Method     uint64 `codec:"method"`      // 255 for a leaf ID, whose bits hold none
	MethodName string `codec:"method_name"` // "unknown" for a leaf ID
	Time       uint64 `codec:"time"`
	Seq        uint64 `codec:"seq"`
	Machine    uint64 `codec:"machine"`
	Timestamp  string `codec:"timestamp"` // RFC 3339 UTC
}

// ExplanationOf returns the wire form of e.
func ExplanationOf(e core.Explanation) Explanation {
	return Explanation{
		ID:         uint64(e.ID),
		Version:    uint64(e.Version),
		Type:       uint64(e.Type),
		TypeName:   e.Type.String(),
		Method:     uint64(e.Method),
		MethodName: e.Method.String(),
		Time:       e.Time,
		Seq:        e.Seq,
		Machine:    uint64(e.Machine),
		Timestamp:  e.Timestamp(),
	}
}

// TransTimeResult is the result of Vesta.TransTime.
type TransTimeResult struct {
	UnixMS    int64  `codec:"unix_ms"`   // milliseconds since 1970-01-01T00:00:00Z
	Timestamp string `codec:"timestamp"` // RFC 3339 UTC
}

// TransTimeResultOf returns the result for instant, a time field of type t.
func TransTimeResultOf(t core.Type, instant time.Time) TransTimeResult {
	return TransTimeResult{UnixMS: instant.UnixMilli(), Timestamp: core.FormatInstant(t, instant)}
}

// Info is the result of Vesta.Info: what the server issues.
type Info struct {
	Layout   string `codec:"layout"` // "sorted", "vesta" or "leaf"
	Epoch    string `codec:"epoch"`  // RFC 3339 UTC, to the millisecond
	Type     uint64 `codec:"type"`   // 0 max-peak, 1 min-granularity
	Machine  uint64 `codec:"machine"`
	Method   uint64 `codec:"method"` // 1, central
	Version  uint64 `codec:"version"`
	MaxBatch uint64 `codec:"max_batch"` // the largest count of Vesta.GenIDs and Vesta.TakeIDs
	// TakeIDs is 1 when the server has Vesta.TakeIDs; a server that
	// predates it sends no such key, which decodes as 0.
	TakeIDs uint64 `codec:"take_ids"`
	// Singles is 1 when the server takes Vesta.TakeIDs' singles key; an
	// older server sends no such key (0), and a client sends it none.
	Singles uint64 `codec:"singles"`
}

// Codec returns the codec that decodes the server's IDs, so a client can
// explain and make IDs without a call.
func (i Info) Codec() (core.Codec, error) {
	layout, err := core.ParseLayout(i.Layout)
	if err != nil {
		return core.Codec{}, fmt.Errorf("wire: info layout: %w", err)
	}
	epoch, err := time.Parse(time.RFC3339Nano, i.Epoch)
	if err != nil {
		return core.Codec{}, fmt.Errorf("wire: info epoch: %w", err)
	}
	return core.NewCodec(layout, epoch)
}

// FormatEpoch formats an epoch for Info.
func FormatEpoch(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
