package rest_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/masktest"
	"github.com/vesta-go/vesta/mask"
	"github.com/vesta-go/vesta/rest"
)

// maskServer is a REST server of the sorted layout on machine 1023 at
// 2026-12-01, with a masking key, and its maskers.
func maskServer(t *testing.T) (*rest.Server, *core.Generator, *mask.Maskers) {
	t.Helper()
	cfg := core.Config{Machine: 1023}
	gen, clock := gentest.Manual(t, cfg, time.Date(2026, 12, 1, 18, 33, 8, 0, time.UTC))
	cfg.Clock = clock
	ms := masktest.Maskers(t, cfg)
	return newServer(t, gen, rest.Config{MaxBatch: 50, Masks: ms}), gen, ms
}

type maskedIDBody struct {
	ID     string `json:"id"`
	Masked string `json:"masked"`
}

type maskedIDsBody struct {
	IDs    []string `json:"ids"`
	Masked []string `json:"masked"`
}

type masksBody struct {
	Masks []string `json:"masks"`
}

// Every masking route over HTTP (in-process and over TCP): /v1/id and
// /v1/ids with masked=true, /v1/mask and /v1/unmask by query and by body;
// the server's masks are its maskers', and unmask back to the IDs.
func TestMaskRoutes(t *testing.T) {
	s, gen, ms := maskServer(t)
	orders, err := ms.Masker("acme", "ord")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range callers(t, s) {
		t.Run(c.name, func(t *testing.T) {
			r := c.do(t, req(http.MethodGet, "/v1/id?masked=true&tenant=acme&kind=ord", "", ""))
			wantAnswer(t, r, http.StatusOK, "application/json")
			var one maskedIDBody
			decode(t, r.Body, &one)
			id, err := core.ParseID(one.ID)
			if err != nil || one.Masked != orders.Mask(id) || !strings.HasPrefix(one.Masked, "ord_") {
				t.Fatalf("/v1/id?masked=true: %s", r.Body)
			}

			r = c.do(t, req(http.MethodGet, "/v1/ids?count=3&masked=1&tenant=acme&kind=ord", "", ""))
			wantAnswer(t, r, http.StatusOK, "application/json")
			var many maskedIDsBody
			decode(t, r.Body, &many)
			if len(many.IDs) != 3 || len(many.Masked) != 3 {
				t.Fatalf("/v1/ids?masked=1: %s", r.Body)
			}
			q := url.Values{"tenant": {"acme"}, "kind": {"ord"}}
			for i, s := range many.IDs {
				id, _ := core.ParseID(s)
				if many.Masked[i] != orders.Mask(id) {
					t.Fatalf("/v1/ids: mask %d is %s; want %s", i, many.Masked[i], orders.Mask(id))
				}
				q.Add("id", s)
			}

			r = c.do(t, req(http.MethodGet, "/v1/mask?"+q.Encode(), "", ""))
			wantAnswer(t, r, http.StatusOK, "application/json")
			var masks masksBody
			decode(t, r.Body, &masks)
			if strings.Join(masks.Masks, ",") != strings.Join(many.Masked, ",") {
				t.Fatalf("/v1/mask: %s; want %v", r.Body, many.Masked)
			}
			r = c.do(t, req(http.MethodPost, "/v1/mask", "application/json",
				`{"ids":[`+many.IDs[0]+`,"`+many.IDs[1]+`"],"tenant":"acme","kind":"ORD"}`)) // a JSON number beyond 2^53, read exactly
			wantAnswer(t, r, http.StatusOK, "application/json")
			decode(t, r.Body, &masks)
			if strings.Join(masks.Masks, ",") != strings.Join(many.Masked[:2], ",") {
				t.Fatalf("POST /v1/mask: %s; want %v", r.Body, many.Masked[:2])
			}

			uq := url.Values{"tenant": {"acme"}, "kind": {"ord"}, "mask": many.Masked}
			for _, r := range []response{
				c.do(t, req(http.MethodGet, "/v1/unmask?"+uq.Encode(), "", "")),
				c.do(t, req(http.MethodPost, "/v1/unmask", "application/json",
					`{"masks":["`+strings.Join(many.Masked, `","`)+`"],"tenant":"acme","kind":"ord"}`)),
			} {
				wantAnswer(t, r, http.StatusOK, "application/json")
				var back idsBody
				decode(t, r.Body, &back)
				if strings.Join(back.IDs, ",") != strings.Join(many.IDs, ",") {
					t.Fatalf("unmask: %s; want %v", r.Body, many.IDs)
				}
			}
			// The prefix may be left off, and the case is free.
			r = c.do(t, req(http.MethodGet, "/v1/unmask?tenant=acme&kind=ord&mask="+strings.ToUpper(one.Masked[len("ord_"):]), "", ""))
			wantAnswer(t, r, http.StatusOK, "application/json")
			if !strings.Contains(r.Body, `"`+one.ID+`"`) {
				t.Fatalf("unmask without the prefix: %s", r.Body)
			}
		})
	}
	if gen.Stats().Issued != 2*4 {
		t.Errorf("issued %d IDs; want 8", gen.Stats().Issued)
	}
}

type idsBody struct {
	IDs []string `json:"ids"`
}

// What masking refuses, with the parameter named, and never an ID issued
// for a request refused.
func TestMaskRoutesRefuse(t *testing.T) {
	s, gen, ms := maskServer(t)
	orders, _ := ms.Masker("acme", "ord")
	issued, _ := gen.NextID(t.Context(), core.REST)
	text := orders.Mask(issued)
	before := gen.Stats().Issued
	for _, tc := range []struct {
		method, target, body string
		status               int
		code, mention        string
	}{
		{"GET", "/v1/id?masked=yes", "", 400, "invalid_argument", `masked: "yes"; want true or false`},
		{"GET", "/v1/id?kind=ord", "", 400, "invalid_argument", "kind: given without masked=true"},
		{"GET", "/v1/id?masked=true&kind=o-rd", "", 400, "invalid_argument", `kind "o-rd": want 1-16 letters and digits`},
		{"GET", "/v1/ids?count=2&masked=true&masked=true", "", 400, "invalid_argument", "masked: given 2 times"},
		{"GET", "/v1/mask", "", 400, "invalid_argument", "id: 0 given; want 1-50"},
		{"GET", "/v1/mask?id=1&ids=2", "", 400, "invalid_argument", "ids: unknown parameter; want id, tenant or kind"},
		{"GET", "/v1/mask?id=-1", "", 400, "invalid_argument", "id: \"-1\" is negative"},
		{"GET", "/v1/mask?id=1&id=x", "", 400, "invalid_argument", "id[1]:"},
		{"GET", "/v1/mask?id=1&tenant=a%0Ab", "", 400, "invalid_argument", "tenant"},
		{"GET", "/v1/mask?" + strings.Repeat("id=1&", 51), "", 400, "invalid_argument", "id: 51 given; want 1-50"},
		{"GET", "/v1/unmask?mask=" + text + "&tenant=acme&kind=usr", "", 400, "invalid_argument", `mask: a mask of another kind: "` + text + `" is a mask of kind "ord", not "usr"`},
		{"GET", "/v1/unmask?mask=" + text + "&mask=ord_0000000000000&tenant=acme&kind=ord", "", 400, "invalid_argument", "mask[1]: not a masked ID of this deployment"},
		{"GET", "/v1/unmask?mask=" + text + "&tenant=globex&kind=ord", "", 400, "invalid_argument", "not a masked ID of this deployment"},
		{"GET", "/v1/unmask?mask=ord_0000000000u00&kind=ord", "", 400, "invalid_argument", "Crockford's base32 leaves out"},
		{"POST", "/v1/unmask", `{"masks":["` + text + `"],"kind":"usr"}`, 400, "invalid_argument", "masks[0]: a mask of another kind"},
		{"POST", "/v1/unmask", `{"masks":[5]}`, 400, "invalid_argument", "masks[0]: want a string, got a number"},
		{"POST", "/v1/unmask", `{"ids":["1"]}`, 400, "invalid_argument", `unknown field "ids"`},
		{"POST", "/v1/mask", `{"kind":"ord"}`, 400, "invalid_argument", "ids: required"},
		{"POST", "/v1/mask", `{"ids":[1.5]}`, 400, "invalid_argument", "ids[0]:"},
		{"POST", "/v1/mask", `{"ids":"1"}`, 400, "invalid_argument", "ids: want an array of IDs"},
		{"POST", "/v1/mask", `{"ids":[1]} {}`, 400, "invalid_argument", "unexpected data after the JSON object"},
	} {
		r := get(t, s.Handler(), tc.target)
		if tc.method == "POST" {
			rec := newRecorder()
			s.Handler().ServeHTTP(rec, req(http.MethodPost, tc.target, "application/json", tc.body))
			r = response{rec.Code, rec.Header(), rec.Body.String()}
		}
		t.Run(tc.method+" "+tc.target, func(t *testing.T) { wantJSONError(t, r, tc.status, tc.code, tc.mention) })
	}
	rec := newRecorder()
	s.Handler().ServeHTTP(rec, req(http.MethodPost, "/v1/mask", "text/plain", `{"ids":[1]}`))
	wantJSONError(t, response{rec.Code, rec.Header(), rec.Body.String()}, http.StatusUnsupportedMediaType, "invalid_argument", "want application/json")
	if got := gen.Stats().Issued; got != before {
		t.Errorf("refused requests issued %d IDs", got-before)
	}

	// A server without a key: 404 naming the keys, and nothing issued.
	off := newServer(t, gen, rest.Config{})
	for _, target := range []string{"/v1/mask?id=1", "/v1/unmask?mask=" + text, "/v1/id?masked=true", "/v1/ids?count=5&masked=true"} {
		wantJSONError(t, get(t, off.Handler(), target), http.StatusNotFound, "not_found", "masking is off on this server: it has no key (mask.key_file, VESTA_MASK_KEY_FILE")
	}
	if got := gen.Stats().Issued; got != before {
		t.Errorf("a server without a key issued %d IDs for masked requests", got-before)
	}
	// Without masked, /v1/id and /v1/ids answer as before.
	r := get(t, off.Handler(), "/v1/id?masked=false")
	wantAnswer(t, r, http.StatusOK, "application/json")
	if strings.Contains(r.Body, "masked") {
		t.Errorf("masked=false: %s", r.Body)
	}
}
