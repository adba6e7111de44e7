package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/mask"
)

// Masking (package mask): IDs turned into public texts that hide them,
// and back, with the server's key, per tenant and kind.
//
//	GET|POST /v1/mask    ?id=N[&id=N…][&tenant=T][&kind=K], or the JSON body
//	                     {"ids":[…],"tenant":…,"kind":…}  → {"masks":["…",…]}
//	GET|POST /v1/unmask  ?mask=M[&mask=M…][&tenant=T][&kind=K], or
//	                     {"masks":[…],"tenant":…,"kind":…} → {"ids":["…",…]}
//	GET /v1/id?masked=true[&tenant=T][&kind=K]      → {"id":"…","masked":"…"}
//	GET /v1/ids?count=N&masked=true[&tenant&kind]   → {"ids":[…],"masked":[…]}
//
// A server without a key (Config.Masks nil) answers them 404 not_found
// naming the keys that turn masking on; /v1/id and /v1/ids answer so
// before issuing anything. A text that is no mask of the tenant and kind
// is a 400 naming it and why.

// maskRoutes registers /v1/mask and /v1/unmask.
func (s *Server) maskRoutes() {
	for _, path := range []string{"/v1/mask", "/v1/unmask"} {
		h := s.apiMask
		if path == "/v1/unmask" {
			h = s.apiUnmask
		}
		s.echo.GET(path, h, s.auth)
		s.echo.POST(path, h, s.auth)
	}
}

// errMaskOff answers the masking routes of a server without a key.
var errMaskOff = &apiError{status: http.StatusNotFound, code: codeNotFound,
	message: "masking is off on this server: it has no key (mask.key_file, VESTA_MASK_KEY_FILE or VESTA_MASK_KEY)"}

// maskArgs are the arguments of /v1/mask and /v1/unmask, from the query
// or the body.
type maskArgs struct {
	values         []string // the IDs or masks, as given
	tenant, kind   string
	valuesName     string // "id" (query) or "ids" (body); "mask" or "masks"
	valuesFromBody bool
}

// GET|POST /v1/mask → {"masks":["…",…]}
func (s *Server) apiMask(c echo.Context) error {
	a, m, err := s.maskArgs(c, "id", "ids")
	if err != nil {
		return err
	}
	ids := make([]core.ID, len(a.values))
	for i, v := range a.values {
		id, err := parseUint(a.nameOf(i), v)
		if err != nil {
			return err
		}
		ids[i] = core.ID(id)
	}
	b := make([]byte, 0, 16+len(ids)*(len(m.Kind())+18))
	b = append(b, `{"masks":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(m.AppendMask(append(b, '"'), id), '"') // a mask needs no escaping
	}
	b = append(b, "]}\n"...)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// GET|POST /v1/unmask → {"ids":["…",…]}
func (s *Server) apiUnmask(c echo.Context) error {
	a, m, err := s.maskArgs(c, "mask", "masks")
	if err != nil {
		return err
	}
	b := make([]byte, 0, 12+len(a.values)*23)
	b = append(b, `{"ids":[`...)
	for i, text := range a.values {
		id, err := m.Unmask(text)
		if err != nil {
			return maskError(a.nameOf(i), err)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(strconv.AppendUint(append(b, '"'), uint64(id), 10), '"')
	}
	b = append(b, "]}\n"...)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

func (a maskArgs) nameOf(i int) string {
	if a.valuesFromBody || len(a.values) > 1 {
		return fmt.Sprintf("%s[%d]", a.valuesName, i)
	}
	return a.valuesName
}

// maskError is a refused text: a 400 whose message starts with the
// parameter, in place of package mask's prefix.
func maskError(name string, err error) error {
	ae := fromCore(err)
	ae.message = name + ": " + strings.TrimPrefix(ae.message, "mask: ")
	return ae
}

// maskArgs reads the arguments of a masking route (the query of a GET,
// the JSON body of a POST), checks their count against MaxBatch and finds
// their Masker.
func (s *Server) maskArgs(c echo.Context, param, member string) (maskArgs, *mask.Masker, error) {
	var a maskArgs
	var err error
	if c.Request().Method == http.MethodPost {
		a, err = maskBody(c.Request(), member)
	} else {
		a, err = maskQuery(c, param)
	}
	if err != nil {
		return a, nil, err
	}
	if s.cfg.Masks == nil {
		return a, nil, errMaskOff
	}
	if n := len(a.values); n < 1 || n > s.cfg.MaxBatch {
		return a, nil, badParam(a.valuesName, "%d given; want 1-%d", n, s.cfg.MaxBatch)
	}
	m, err := s.cfg.Masks.Masker(a.tenant, a.kind)
	if err != nil {
		return a, nil, fromCore(err) // the message names tenant or kind
	}
	return a, m, nil
}

func maskQuery(c echo.Context, param string) (maskArgs, error) {
	a := maskArgs{values: c.QueryParams()[param], valuesName: param}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"tenant", &a.tenant}, {"kind", &a.kind}} {
		v, _, err := query(c, p.name)
		if err != nil {
			return a, err
		}
		*p.dst = v
	}
	for name := range c.QueryParams() {
		if name != param && name != "tenant" && name != "kind" {
			return a, badParam(name, "unknown parameter; want %s, tenant or kind", param)
		}
	}
	return a, nil
}

// maskBody decodes the JSON body {"<member>":[…],"tenant":…,"kind":…};
// IDs may be JSON numbers (read exactly) or strings, masks strings; null
// tenant or kind is none.
func maskBody(r *http.Request, member string) (maskArgs, error) {
	a := maskArgs{valuesName: member, valuesFromBody: true}
	ct := r.Header.Get(echo.HeaderContentType)
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != echo.MIMEApplicationJSON {
		return a, &apiError{status: http.StatusUnsupportedMediaType, code: codeInvalidArgument,
			message: fmt.Sprintf("Content-Type: %q; want application/json", clip(ct))}
	}
	var body map[string]json.RawMessage
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&body); err != nil {
		if err == io.EOF {
			return a, badParam("body", "empty; want a JSON object with %s", member)
		}
		return a, bodyError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return a, badParam("body", "unexpected data after the JSON object")
	}
	for k, raw := range body {
		switch k {
		case member:
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			var vs []any
			if err := d.Decode(&vs); err != nil || vs == nil {
				return a, badParam(member, "want an array of %s", map[string]string{"ids": "IDs", "masks": "masks"}[member])
			}
			for i, v := range vs {
				switch v := v.(type) {
				case string:
					a.values = append(a.values, v)
				case json.Number:
					if member == "ids" {
						a.values = append(a.values, v.String())
						continue
					}
					return a, badParam(fmt.Sprintf("%s[%d]", member, i), "want a string, got a number")
				default:
					return a, badParam(fmt.Sprintf("%s[%d]", member, i), "want a string, got %s", jsonKind(v))
				}
			}
		case "tenant", "kind":
			var v *string
			if err := json.Unmarshal(raw, &v); err != nil {
				return a, badParam(k, "want a string")
			}
			if v != nil && k == "tenant" {
				a.tenant = *v
			} else if v != nil {
				a.kind = *v
			}
		default:
			return a, badParam("body", "unknown field %q; want %s, tenant or kind", clip(k), member)
		}
	}
	if _, ok := body[member]; !ok {
		return a, badParam(member, "required")
	}
	return a, nil
}

// maskedOpt reads the masked, tenant and kind parameters of /v1/id and
// /v1/ids: the Masker to mask the issued IDs with, or nil. It is read
// before anything is issued, so a refusal loses no ID.
func (s *Server) maskedOpt(c echo.Context) (*mask.Masker, error) {
	v, on, err := query(c, "masked")
	if err != nil {
		return nil, err
	}
	if on {
		switch v {
		case "true", "1":
		case "false", "0":
			on = false
		default:
			return nil, badParam("masked", "%q; want true or false", clip(v))
		}
	}
	var tenant, kind string
	for _, p := range []struct {
		name string
		dst  *string
	}{{"tenant", &tenant}, {"kind", &kind}} {
		v, given, err := query(c, p.name)
		if err != nil {
			return nil, err
		}
		if given && !on {
			return nil, badParam(p.name, "given without masked=true")
		}
		*p.dst = v
	}
	if !on {
		return nil, nil
	}
	if s.cfg.Masks == nil {
		return nil, errMaskOff
	}
	m, err := s.cfg.Masks.Masker(tenant, kind)
	if err != nil {
		return nil, fromCore(err)
	}
	return m, nil
}

// maskStatus is GET /v1/status's mask: which key slots hold a key, the
// one new masks use, and the share of random texts unmasking refuses now
// (mask.Maskers.Rejection).
type maskStatus struct {
	Slots         []int   `json:"slots"`
	Current       int     `json:"current"`
	RefusedRandom float64 `json:"refused_random"`
}

func (s *Server) maskStatus() *maskStatus {
	if s.cfg.Masks == nil {
		return nil
	}
	k := s.cfg.Masks.Keys()
	ms := &maskStatus{Slots: []int{}, Current: k.Current(), RefusedRandom: s.cfg.Masks.Rejection()}
	for slot := range 2 {
		if k.Has(slot) {
			ms.Slots = append(ms.Slots, slot)
		}
	}
	return ms
}
