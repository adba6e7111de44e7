package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
)

// Parameters are parsed strictly, by the rules the central server uses
// too (central/wire's fields.go): an integer is unsigned decimal digits
// only (no sign, space, fraction, exponent or hex), method and type take
// names, and every error is a 400 whose message names the parameter. Range checks of ID fields are
// left to core.Codec.Make, whose RangeError names the field too.

// query returns the single value of a query parameter; present is false
// when it is absent. A parameter given twice is refused rather than
// silently taking one of the values.
func query(c echo.Context, name string) (value string, present bool, err error) {
	vs, present := c.QueryParams()[name]
	if len(vs) > 1 {
		return "", true, badParam(name, "given %d times; give it once", len(vs))
	}
	if !present {
		return "", false, nil
	}
	return vs[0], true, nil
}

// requiredUint is a query parameter that must be present.
func requiredUint(c echo.Context, name string) (uint64, error) {
	s, ok, err := query(c, name)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, badParam(name, "required")
	}
	return parseUint(name, s)
}

// parseUint parses an unsigned decimal integer named name, by the rules
// the central server shares (api.ParseUint).
func parseUint(name, s string) (uint64, error) {
	v, err := api.ParseUint(name, s)
	return v, paramError(err)
}

// parseField parses the value of an ID field: a number, or for method and
// type also a name (rest, max-peak, ...), by api.ParseField. name is what
// the caller wrote (genMethod for method), so the message names it.
func parseField(field, name, s string) (uint64, error) {
	v, err := api.ParseField(field, name, s)
	return v, paramError(err)
}

// paramError turns a parameter's *api.Error (whose message names the
// parameter) into a 400.
func paramError(err error) error {
	var we *api.Error
	if errors.As(err, &we) {
		return &apiError{status: http.StatusBadRequest, code: codeInvalidArgument, message: we.Message}
	}
	return err
}

// makeFields are the fields of a make request, in the order messages list them.
var makeFields = []string{"time", "seq", "machine", "method", "type", "version"}

// setField stores v in the field of p.
func setField(p *core.Partial, field string, v uint64) {
	switch field {
	case "time":
		p.Time = v
	case "seq":
		p.Seq = v
	case "machine":
		p.Machine = &v
	case "method":
		p.Method = &v
	case "type":
		p.Type = &v
	case "version":
		p.Version = &v
	}
}

// makeQuery reads the fields of /makeid, with genMethod (Vesta's name) as
// an alias of method: both may be given only with the same value.
func makeQuery(c echo.Context) (core.Partial, error) {
	var p core.Partial
	for _, field := range makeFields {
		s, ok, err := query(c, field)
		if err != nil {
			return p, err
		}
		name := field
		if field == "method" {
			alias, aok, err := query(c, "genMethod")
			if err != nil {
				return p, err
			}
			if aok && ok && alias != s {
				return p, badParam("genMethod", "%q differs from method %q; genMethod is an alias of method, give one", clip(alias), clip(s))
			}
			if aok && !ok {
				s, ok, name = alias, true, "genMethod"
			}
		}
		if !ok {
			if field == "time" || field == "seq" {
				return p, badParam(field, "required")
			}
			continue
		}
		v, err := parseField(field, name, s)
		if err != nil {
			return p, err
		}
		setField(&p, field, v)
	}
	return p, nil
}

// makeBody decodes the JSON body of POST /v1/make: one object whose
// members are ID fields given as JSON numbers (read exactly, never through
// a float64) or strings; null is the same as leaving a field out.
func makeBody(r *http.Request) (core.Partial, error) {
	var p core.Partial
	ct := r.Header.Get(echo.HeaderContentType)
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != echo.MIMEApplicationJSON {
		return p, &apiError{status: http.StatusUnsupportedMediaType, code: codeInvalidArgument,
			message: fmt.Sprintf("Content-Type: %q; want application/json", clip(ct))}
	}
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	tok, err := dec.Token()
	if err == io.EOF {
		return p, badParam("body", "empty; want a JSON object with time and seq")
	}
	if err != nil {
		return p, bodyError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return p, badParam("body", "want a JSON object with time and seq")
	}
	seen := make(map[string]bool, len(makeFields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return p, bodyError(err)
		}
		key, _ := tok.(string) // inside an object, Token returns keys as strings
		if !isMakeField(key) {
			return p, badParam("body", "unknown field %q; want time, seq, machine, method, type or version", clip(key))
		}
		if seen[key] {
			return p, badParam(key, "given more than once")
		}
		seen[key] = true
		var v any
		if err := dec.Decode(&v); err != nil {
			return p, bodyError(err)
		}
		var n uint64
		switch v := v.(type) {
		case nil:
			seen[key] = false
			continue
		case json.Number:
			n, err = parseUint(key, v.String())
		case string:
			n, err = parseField(key, key, v)
		default:
			err = badParam(key, "want an unsigned integer as a JSON number or string, got %s", jsonKind(v))
		}
		if err != nil {
			return p, err
		}
		setField(&p, key, n)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return p, bodyError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return p, bodyError(err)
		}
		return p, badParam("body", "unexpected data after the JSON object")
	}
	for _, f := range []string{"time", "seq"} {
		if !seen[f] {
			return p, badParam(f, "required")
		}
	}
	return p, nil
}

func isMakeField(key string) bool {
	for _, f := range makeFields {
		if key == f {
			return true
		}
	}
	return false
}

func jsonKind(v any) string {
	switch v.(type) {
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// bodyError reports a body that is too large (413) or not JSON (400).
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: codeInvalidArgument,
			message: fmt.Sprintf("body: larger than %d bytes", mbe.Limit)}
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF { // EOF inside the object
		return badParam("body", "truncated JSON")
	}
	return badParam("body", "invalid JSON: %v", err)
}
