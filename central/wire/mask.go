package wire

import (
	"fmt"
	"unicode/utf8"
)

// Masking: IDs turned into public texts that hide them, and back, with
// the server's key (package mask), per tenant and kind.
const (
	// ProcMask: [{ids, tenant?, kind?}] -> [str, ...], the mask of each ID
	// in order (1 ... max_batch IDs).
	ProcMask = "Vesta.Mask"
	// ProcUnmask: [{masks, tenant?, kind?}] -> [uint64, ...], the ID of
	// each mask in order (1 ... max_batch masks); one that is no mask of
	// the tenant and kind fails the call, naming it.
	ProcUnmask = "Vesta.Unmask"
)

// Bounds of the masking arguments, checked before anything else reads
// them (package mask judges their characters).
const (
	MaxTenantLen = 128 // bytes, as mask.MaxTenantLen
	MaxKindLen   = 16  // bytes, as mask.MaxKindLen
	MaxMaskLen   = 64  // bytes: a prefix of MaxKindLen, "_" and 13 characters, with room
)

// MaskParams are the arguments of Vesta.Mask.
type MaskParams struct {
	IDs    []uint64 `codec:"ids"`
	Kind   string   `codec:"kind,omitempty"`   // "" no kind
	Tenant string   `codec:"tenant,omitempty"` // "" the deployment's one tenant
}

// UnmaskParams are the arguments of Vesta.Unmask.
type UnmaskParams struct {
	Kind   string   `codec:"kind,omitempty"`
	Masks  []string `codec:"masks"`
	Tenant string   `codec:"tenant,omitempty"`
}

// decodeMaskParams decodes the params of the masking procedures; ok is
// false for any other dst.
func decodeMaskParams(params []byte, dst any) (err error, ok bool) {
	switch p := dst.(type) {
	case *MaskParams:
		return decodeFields(params, []field{
			{name: "ids", need: true, read: func(r *reader) (err error) { p.IDs, err = r.idArray("ids"); return err }},
			{name: "kind", read: func(r *reader) (err error) { p.Kind, err = r.optString(MaxKindLen); return err }},
			{name: "tenant", read: func(r *reader) (err error) { p.Tenant, err = r.optString(MaxTenantLen); return err }},
		}), true
	case *UnmaskParams:
		return decodeFields(params, []field{
			{name: "masks", need: true, read: func(r *reader) (err error) { p.Masks, err = r.strArray(MaxMaskLen); return err }},
			{name: "kind", read: func(r *reader) (err error) { p.Kind, err = r.optString(MaxKindLen); return err }},
			{name: "tenant", read: func(r *reader) (err error) { p.Tenant, err = r.optString(MaxTenantLen); return err }},
		}), true
	}
	return nil, false
}

// idArray reads an array of IDs, each as a field value is (an unsigned
// integer, or its decimal text).
func (r *reader) idArray(name string) ([]uint64, error) {
	n, err := r.arrayOf()
	if err != nil {
		return nil, err
	}
	out := make([]uint64, 0, n)
	for i := range n {
		v, null, err := r.fieldValue(field{name: fmt.Sprintf("%s[%d]", name, i)})
		switch {
		case err != nil:
			return nil, err
		case null:
			return nil, fmt.Errorf("[%d]: null; want an ID", i)
		}
		out = append(out, v)
	}
	return out, nil
}

// arrayOf reads the header of an array argument: not nil, and no more
// items than bytes left, so what is allocated for them is bounded by the
// frame.
func (r *reader) arrayOf() (uint64, error) {
	if r.isNil() {
		return 0, fmt.Errorf("null; want an array")
	}
	n, err := r.arrayLen()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(r.b)-r.i) {
		return 0, fmt.Errorf("%w: %d items in %d bytes", ErrMalformed, n, len(r.b)-r.i)
	}
	return n, nil
}

// strArray reads an array of strings of at most max bytes of UTF-8.
func (r *reader) strArray(max int) ([]string, error) {
	n, err := r.arrayOf()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	for i := range n {
		s, err := r.boundedStr(max)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// optString reads an optional string of at most max bytes of UTF-8; nil
// is "".
func (r *reader) optString(max int) (string, error) {
	if r.isNil() {
		r.i++
		return "", nil
	}
	return r.boundedStr(max)
}

func (r *reader) boundedStr(max int) (string, error) {
	b, err := r.str()
	switch {
	case err != nil:
		return "", err
	case len(b) > max:
		return "", fmt.Errorf("%d bytes; want at most %d", len(b), max)
	case !utf8.Valid(b):
		return "", fmt.Errorf("%s is not UTF-8", quote(b))
	}
	return string(b), nil
}

// decodeStrs reads an array of strings into dst: Vesta.Mask's result.
func decodeStrs(b []byte, dst []string) ([]string, error) {
	return decodeArray(b, dst, func(r *reader) (string, error) {
		s, err := r.str()
		return string(s), err
	})
}

func (p *MaskParams) appendTo(dst []byte) []byte {
	dst = appendMapLen(dst, 1+nonEmpty(p.Kind)+nonEmpty(p.Tenant))
	dst = appendArrayLen(appendStr(dst, "ids"), len(p.IDs))
	for _, id := range p.IDs {
		dst = appendUint(dst, id)
	}
	return appendOptStr(appendOptStr(dst, "kind", p.Kind), "tenant", p.Tenant)
}

func (p *UnmaskParams) appendTo(dst []byte) []byte {
	dst = appendMapLen(dst, 1+nonEmpty(p.Kind)+nonEmpty(p.Tenant))
	dst = appendOptStr(dst, "kind", p.Kind)
	dst = appendArrayLen(appendStr(dst, "masks"), len(p.Masks))
	for _, m := range p.Masks {
		dst = appendStr(dst, m)
	}
	return appendOptStr(dst, "tenant", p.Tenant)
}

// appendOptStr writes key and v unless v is "" (the codec's omitempty).
func appendOptStr(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return appendStr(appendStr(dst, key), v)
}

func nonEmpty(s string) int {
	if s == "" {
		return 0
	}
	return 1
}
