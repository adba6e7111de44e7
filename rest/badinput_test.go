package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/rest"
)

// TestBadInput: every malformed request is a 4xx naming what is wrong:
// JSON errors on the JSON API, plain text on the Vesta-compatible routes.
func TestBadInput(t *testing.T) {
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{MaxBatch: 100, BodyLimit: 512})
	const js = "application/json"
	big := `{"time":1,"seq":1,"machine":"` + strings.Repeat("0", 600) + `1"}`
	for _, tc := range []struct {
		method, target, ct, body string
		status                   int
		code, mention            string
	}{
		// count
		{"GET", "/v1/ids", "", "", 400, "invalid_argument", "count: required"},
		{"GET", "/v1/ids?count=", "", "", 400, "invalid_argument", "count: empty"},
		{"GET", "/v1/ids?count=0", "", "", 400, "invalid_argument", "count: 0 out of range 1-100"},
		{"GET", "/v1/ids?count=-1", "", "", 400, "invalid_argument", "count: \"-1\" is negative"},
		{"GET", "/v1/ids?count=101", "", "", 400, "invalid_argument", "count: 101 out of range 1-100"},
		{"GET", "/v1/ids?count=1.5", "", "", 400, "invalid_argument", "count: \"1.5\" is not an unsigned"},
		{"GET", "/v1/ids?count=1e2", "", "", 400, "invalid_argument", "count: \"1e2\""},
		{"GET", "/v1/ids?count=0x10", "", "", 400, "invalid_argument", "count: \"0x10\""},
		{"GET", "/v1/ids?count=abc", "", "", 400, "invalid_argument", "count: \"abc\""},
		{"GET", "/v1/ids?count=+5", "", "", 400, "invalid_argument", "count: \" 5\""}, // + is a space in a query
		{"GET", "/v1/ids?count=%2B5", "", "", 400, "invalid_argument", "count: \"+5\""},
		{"GET", "/v1/ids?count=99999999999999999999999", "", "", 400, "invalid_argument", "count: \"99999999999999999999999\" does not fit"},
		{"GET", "/v1/ids?count=1&count=2", "", "", 400, "invalid_argument", "count: given 2 times"},
		// id in the path
		{"GET", "/v1/ids/abc", "", "", 400, "invalid_argument", "id: \"abc\""},
		{"GET", "/v1/ids/-1", "", "", 400, "invalid_argument", "id: \"-1\" is negative"},
		{"GET", "/v1/ids/18446744073709551616", "", "", 400, "invalid_argument", "id: \"18446744073709551616\" does not fit"},
		{"GET", "/v1/ids/1.0", "", "", 400, "invalid_argument", "id: \"1.0\""},
		{"GET", "/v1/ids/%20", "", "", 400, "invalid_argument", "id: \" \""},
		// transtime
		{"GET", "/v1/transtime", "", "", 400, "invalid_argument", "time: required"},
		{"GET", "/v1/transtime?time=1073741824", "", "", 400, "invalid_argument", "time: 1073741824 out of range 0-1073741823"},
		{"GET", "/v1/transtime?time=1&type=2", "", "", 400, "invalid_argument", "type: 2 out of range 0-1"},
		{"GET", "/v1/transtime?time=1&type=foo", "", "", 400, "invalid_argument", "type: \"foo\""},
		// make: content type
		{"POST", "/v1/make", "", `{"time":1,"seq":1}`, 415, "invalid_argument", "Content-Type: \"\"; want application/json"},
		{"POST", "/v1/make", "text/plain", `{"time":1,"seq":1}`, 415, "invalid_argument", "Content-Type: \"text/plain\""},
		{"POST", "/v1/make", "application/x-www-form-urlencoded", "time=1&seq=1", 415, "invalid_argument", "Content-Type"},
		{"POST", "/v1/make", "application/json; charset", `{"time":1,"seq":1}`, 415, "invalid_argument", "Content-Type"},
		// make: the body
		{"POST", "/v1/make", js, "", 400, "invalid_argument", "body: empty"},
		{"POST", "/v1/make", js, "   ", 400, "invalid_argument", "body: empty"},
		{"POST", "/v1/make", js, "{", 400, "invalid_argument", "body: truncated JSON"},
		{"POST", "/v1/make", js, `{"time":}`, 400, "invalid_argument", "body: invalid JSON"},
		{"POST", "/v1/make", js, `{"time":1,"seq":1`, 400, "invalid_argument", "body: truncated JSON"},
		{"POST", "/v1/make", js, `{"time"`, 400, "invalid_argument", "body: truncated JSON"},
		{"POST", "/v1/make", js, "[]", 400, "invalid_argument", "body: want a JSON object"},
		{"POST", "/v1/make", js, "null", 400, "invalid_argument", "body: want a JSON object"},
		{"POST", "/v1/make", js, `"x"`, 400, "invalid_argument", "body: want a JSON object"},
		{"POST", "/v1/make", js, `{"time":1,"seq":1}{}`, 400, "invalid_argument", "body: unexpected data after the JSON object"},
		{"POST", "/v1/make", js, `{"time":1,"seq":1} x`, 400, "invalid_argument", "body: invalid JSON: invalid character 'x'"},
		{"POST", "/v1/make", js, big, 413, "invalid_argument", "body: larger than 512 bytes"},
		// make: fields
		{"POST", "/v1/make", js, `{}`, 400, "invalid_argument", "time: required"},
		{"POST", "/v1/make", js, `{"time":1}`, 400, "invalid_argument", "seq: required"},
		{"POST", "/v1/make", js, `{"seq":1}`, 400, "invalid_argument", "time: required"},
		{"POST", "/v1/make", js, `{"time":null,"seq":1}`, 400, "invalid_argument", "time: required"},
		{"POST", "/v1/make", js, `{"time":1,"seq":1,"extra":1}`, 400, "invalid_argument", "body: unknown field \"extra\""},
		{"POST", "/v1/make", js, `{"time":1,"seq":1,"genMethod":1}`, 400, "invalid_argument", "unknown field \"genMethod\""},
		{"POST", "/v1/make", js, `{"time":1,"seq":1,"time":2}`, 400, "invalid_argument", "time: given more than once"},
		{"POST", "/v1/make", js, `{"time":1.5,"seq":1}`, 400, "invalid_argument", "time: \"1.5\""},
		{"POST", "/v1/make", js, `{"time":1e3,"seq":1}`, 400, "invalid_argument", "time: \"1e3\""},
		{"POST", "/v1/make", js, `{"time":1.0,"seq":1}`, 400, "invalid_argument", "time: \"1.0\""},
		{"POST", "/v1/make", js, `{"time":-1,"seq":1}`, 400, "invalid_argument", "time: \"-1\" is negative"},
		{"POST", "/v1/make", js, `{"time":"","seq":1}`, 400, "invalid_argument", "time: empty"},
		{"POST", "/v1/make", js, `{"time":" 1","seq":1}`, 400, "invalid_argument", "time: \" 1\""},
		{"POST", "/v1/make", js, `{"time":true,"seq":1}`, 400, "invalid_argument", "time: want an unsigned integer as a JSON number or string, got a boolean"},
		{"POST", "/v1/make", js, `{"time":{},"seq":1}`, 400, "invalid_argument", "got an object"},
		{"POST", "/v1/make", js, `{"time":[1],"seq":1}`, 400, "invalid_argument", "got an array"},
		{"POST", "/v1/make", js, `{"time":1,"seq":1048576}`, 400, "invalid_argument", "seq: 1048576 out of range 0-1048575"},
		{"POST", "/v1/make", js, `{"time":1,"seq":1,"machine":1024}`, 400, "invalid_argument", "machine: 1024 out of range 0-1023"},
		{"POST", "/v1/make", js, `{"time":1,"seq":1,"method":4}`, 400, "invalid_argument", "method: 4 out of range 0-3"},
		{"POST", "/v1/make", js, `{"time":1,"seq":1,"method":"bogus"}`, 400, "invalid_argument", "method: \"bogus\""},
		{"POST", "/v1/make", js, `{"time":1,"seq":1,"type":2}`, 400, "invalid_argument", "type: 2 out of range 0-1"},
		{"POST", "/v1/make", js, `{"time":1,"seq":1,"version":2}`, 400, "invalid_argument", "version: 2 out of range 0-1"},
		{"POST", "/v1/make", js, `{"time":1099511627776,"seq":1,"type":1}`, 400, "invalid_argument", "time: 1099511627776 out of range 0-1099511627775"},
		// routes and methods
		{"GET", "/nope", "", "", 404, "not_found", "no route GET \"/nope\""},
		{"GET", "/v2/id", "", "", 404, "not_found", "/v2/id"},
		{"GET", "/v1/ids/1/2", "", "", 400, "invalid_argument", "id: \"1/2\""}, // echo: a trailing parameter takes the rest
		{"GET", "/v1/make", "", "", 405, "method_not_allowed", "method \"GET\" not allowed on \"/v1/make\"; allowed: "},
		{"POST", "/v1/id", js, `{}`, 405, "method_not_allowed", "POST"},
		{"DELETE", "/v1/ids/5", "", "", 405, "method_not_allowed", "DELETE"},
		{"PUT", "/healthz", "", "", 405, "method_not_allowed", "PUT"},
	} {
		r := doHandler(s, req(tc.method, tc.target, tc.ct, tc.body))
		t.Run(tc.method+" "+tc.target+" "+clipName(tc.body), func(t *testing.T) {
			wantJSONError(t, r, tc.status, tc.code, tc.mention)
			if tc.status == 405 && r.Header.Get("Allow") == "" {
				t.Errorf("405 without an Allow header")
			}
		})
	}
}

func TestBadInputVesta(t *testing.T) {
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{})
	for _, tc := range []struct {
		method, target string
		status         int
		code, mention  string
	}{
		{"GET", "/expid", 400, "invalid_argument", "id: required"},
		{"GET", "/expid?id=", 400, "invalid_argument", "id: empty"},
		{"GET", "/expid?id=abc", 400, "invalid_argument", "id: \"abc\""},
		{"GET", "/expid?id=-5", 400, "invalid_argument", "id: \"-5\" is negative"},
		{"GET", "/expid?id=18446744073709551616", 400, "invalid_argument", "id: \"18446744073709551616\" does not fit"},
		{"GET", "/expid?id=1&id=2", 400, "invalid_argument", "id: given 2 times"},
		{"GET", "/transtime", 400, "invalid_argument", "time: required"},
		{"GET", "/transtime?time=x", 400, "invalid_argument", "time: \"x\""},
		{"GET", "/transtime?time=-1", 400, "invalid_argument", "time: \"-1\" is negative"},
		{"GET", "/transtime?time=1073741824", 400, "invalid_argument", "time: 1073741824 out of range 0-1073741823"},
		{"GET", "/makeid", 400, "invalid_argument", "time: required"},
		{"GET", "/makeid?time=1", 400, "invalid_argument", "seq: required"},
		{"GET", "/makeid?seq=1", 400, "invalid_argument", "time: required"},
		{"GET", "/makeid?time=1&seq=-1", 400, "invalid_argument", "seq: \"-1\" is negative"},
		{"GET", "/makeid?time=1e3&seq=1", 400, "invalid_argument", "time: \"1e3\""},
		{"GET", "/makeid?time=1&seq=1048576", 400, "invalid_argument", "seq: 1048576 out of range"},
		{"GET", "/makeid?time=1&seq=1&machine=1024", 400, "invalid_argument", "machine: 1024 out of range 0-1023"},
		{"GET", "/makeid?time=1&seq=1&machine=", 400, "invalid_argument", "machine: empty"},
		{"GET", "/makeid?time=1&seq=1&method=9", 400, "invalid_argument", "method: 9 out of range 0-3"},
		{"GET", "/makeid?time=1&seq=1&genMethod=x", 400, "invalid_argument", "genMethod: \"x\""},
		{"GET", "/makeid?time=1&seq=1&genMethod=1&method=2", 400, "invalid_argument", "genMethod: \"1\" differs from method \"2\""},
		{"GET", "/makeid?time=1&seq=1&type=7", 400, "invalid_argument", "type: 7 out of range 0-1"},
		{"GET", "/makeid?time=1&seq=1&version=2", 400, "invalid_argument", "version: 2 out of range 0-1"},
		{"GET", "/makeid?time=1&seq=1&version=1&version=1", 400, "invalid_argument", "version: given 2 times"},
		{"POST", "/genid", 405, "method_not_allowed", "POST"},
		{"DELETE", "/makeid?time=1&seq=1", 405, "method_not_allowed", "DELETE"},
	} {
		r := doHandler(s, req(tc.method, tc.target, "", ""))
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			wantTextError(t, r, tc.status, tc.code, tc.mention)
		})
	}
	// Unknown parameters are ignored, as Vesta did.
	if r := get(t, s.Handler(), "/genid?foo=bar"); r.Status != http.StatusOK {
		t.Errorf("/genid?foo=bar = %d %s", r.Status, r.Body)
	}
}

func clipName(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}
