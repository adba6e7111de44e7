package wire

import (
	"strconv"

	"github.com/vesta-go/vesta/api"
)

// fieldValue reads the value of f: nil (null reports true), a string by
// ParseField, or a MessagePack integer >= 0.
func (r *reader) fieldValue(f field) (v uint64, null bool, err error) {
	switch r.kind() {
	case "nil":
		r.i++
		return 0, true, nil
	case "string":
		b, err := r.str()
		if err != nil {
			return 0, false, api.Errorf(api.InvalidArgument, "%s: %v", f.name, err)
		}
		named := ""
		if f.named {
			named = f.name
		}
		v, err := api.ParseField(named, f.name, string(b))
		return v, false, err
	}
	start := r.i
	v, err = r.uint()
	if err != nil {
		rr := reader{b: r.b, i: start}
		if n, e := rr.int(); e == nil && n < 0 {
			return 0, false, api.Negative(f.name, strconv.FormatInt(n, 10))
		}
		return 0, false, api.Errorf(api.InvalidArgument, "%s: %v", f.name, err)
	}
	return v, false, nil
}
