package rest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/rest"
)

// do sends req over a real connection and reads the whole answer.
func do(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func newReq(t testing.TB, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestHEAD: every GET route answers HEAD with the GET answer's status and
// headers and no body; a 405 lists HEAD beside GET.
func TestHEAD(t *testing.T) {
	base := vestaBase(t)
	for _, path := range []string{"/genid", "/expid?id=1", "/transtime?time=1", "/makeid?time=1&seq=1",
		"/v1/id", "/v1/ids?count=2", "/v1/ids/1", "/v1/transtime?time=1", "/v1/info",
		"/healthz", "/readyz", "/metrics", "/openapi.json", "/", "/v1/ids/x"} {
		get, _ := do(t, newReq(t, http.MethodGet, base+path))
		head, body := do(t, newReq(t, http.MethodHead, base+path))
		if head.StatusCode != get.StatusCode || body != "" || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q body %q; want GET's %d %q and no body", path, head.StatusCode,
				head.Header.Get("Content-Type"), body, get.StatusCode, get.Header.Get("Content-Type"))
		}
	}
	resp, _ := do(t, newReq(t, http.MethodDelete, base+"/v1/id"))
	if allow := resp.Header.Get("Allow"); resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(allow, "HEAD") {
		t.Errorf("DELETE /v1/id: %d Allow %q; want 405 listing HEAD", resp.StatusCode, allow)
	}
}

// TestAllowListsHEAD: over the router's routes, OPTIONS answers 204 and
// a method the route lacks 405, each with an Allow (and the 405's message)
// that lists the route's methods, and HEAD exactly where GET is. Leaf's
// routes take every method, as Leaf's (TestLeafJavaClient).
func TestAllowListsHEAD(t *testing.T) {
	leaf := map[string]bool{"/api/segment/get/:key": true, "/api/snowflake/get/:key": true,
		"/decodeSnowflakeId": true, "/cache": true, "/db": true}
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{})
	methods := map[string][]string{} // path -> methods registered
	for _, r := range s.Handler().(*echo.Echo).Routes() {
		methods[r.Path] = append(methods[r.Path], r.Method)
	}
	param := regexp.MustCompile(`:[A-Za-z0-9_]+`)
	for _, c := range callers(t, s) {
		for path, ms := range methods {
			target := param.ReplaceAllString(path, "x")
			want := append([]string{http.MethodOptions}, ms...)
			if slices.Contains(ms, http.MethodGet) {
				want = append(want, http.MethodHead)
			}
			slices.Sort(want)
			for _, m := range []string{http.MethodOptions, http.MethodDelete} {
				if leaf[path] && m != http.MethodOptions {
					continue
				}
				r := c.do(t, req(m, target, "", ""))
				status := http.StatusNoContent
				if m != http.MethodOptions {
					status = http.StatusMethodNotAllowed
				}
				allow := strings.Split(r.Header.Get("Allow"), ", ")
				slices.Sort(allow)
				if r.Status != status || !slices.Equal(allow, want) || len(r.Header.Values("Allow")) != 1 {
					t.Errorf("%s: %s %s: %d Allow %q; want %d Allow %v", c.name, m, target, r.Status, r.Header.Values("Allow"), status, want)
				}
				if m != http.MethodOptions && !strings.Contains(r.Body, r.Header.Get("Allow")) {
					t.Errorf("%s: %s %s: message %s does not list Allow %q", c.name, m, target, r.Body, r.Header.Get("Allow"))
				}
			}
		}
	}
}

// TestNosniff: every answer, success or error, JSON or text, says nosniff.
func TestNosniff(t *testing.T) {
	base := vestaBase(t)
	for _, path := range []string{"/genid", "/expid?id=<script>", "/v1/ids/<b>", "/nowhere", "/", "/metrics"} {
		resp, _ := do(t, newReq(t, http.MethodGet, base+path))
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s (%d): X-Content-Type-Options %q; want nosniff", path, resp.StatusCode, got)
		}
	}
}

// TestPercentDecodedPath: path parameters are percent-decoded.
func TestPercentDecodedPath(t *testing.T) {
	base := vestaBase(t)
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/v1/ids/%31", http.StatusOK},
		{"/v1/ids/%31%32", http.StatusOK},
		{"/v1/ids/%2D1", http.StatusBadRequest}, // "-1"
	} {
		resp, body := do(t, newReq(t, http.MethodGet, base+tc.path))
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s: %d %s; want %d", tc.path, resp.StatusCode, body, tc.status)
		}
	}
	if got := rawGet(t, rawDial(t, base, "127.0.0.1"), "/v1/ids/%zz"); got != http.StatusBadRequest {
		t.Errorf("GET /v1/ids/%%zz: %d; want 400", got)
	}
	_, body := do(t, newReq(t, http.MethodGet, base+"/v1/ids/%31%32"))
	var e struct{ ID string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.ID != "12" {
		t.Errorf("GET /v1/ids/%%31%%32: %s; want id 12", body)
	}
}

// TestEarly413: a declared body past the limit is refused before any of
// it is read: with Expect: 100-continue, the first answer is the 413.
func TestEarly413(t *testing.T) {
	base := vestaBase(t)
	nc := rawDial(t, base, "127.0.0.1")
	io.WriteString(nc, "POST /v1/make HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: 104857600\r\nExpect: 100-continue\r\n\r\n")
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"invalid_argument"`) {
		t.Fatalf("answer %d %s; want 413 with a JSON error first", resp.StatusCode, b)
	}
}

// TestHeaderTooLargeJSON: headers past rest.MaxHeaderBytes get the JSON
// error body of 431.
func TestHeaderTooLargeJSON(t *testing.T) {
	base := vestaBase(t)
	req := newReq(t, http.MethodGet, base+"/v1/id")
	req.Header.Set("X-Big", strings.Repeat("a", rest.MaxHeaderBytes))
	resp, body := do(t, req)
	var e struct {
		Error struct{ Code, Message string }
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "invalid_argument" {
		t.Fatalf("%d %s; want 431 with a JSON error", resp.StatusCode, body)
	}
	req = newReq(t, http.MethodGet, base+"/v1/id")
	req.Header.Set("X-Fine", strings.Repeat("a", rest.MaxHeaderBytes-1024))
	if resp, body := do(t, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("headers within the limit: %d %s", resp.StatusCode, body)
	}
}

// TestMetricsAuth: /metrics needs the token only with MetricsAuth.
func TestMetricsAuth(t *testing.T) {
	for _, tc := range []struct {
		auth         bool
		bare, bearer int
	}{
		{false, http.StatusOK, http.StatusOK},
		{true, http.StatusUnauthorized, http.StatusOK},
	} {
		gen, _ := vestaGen(t)
		base := serve(t, newServer(t, gen, rest.Config{Token: token, MetricsAuth: tc.auth}))
		resp, _ := do(t, newReq(t, http.MethodGet, base+"/metrics"))
		req := newReq(t, http.MethodGet, base+"/metrics")
		req.Header.Set("Authorization", "Bearer "+token)
		resp2, _ := do(t, req)
		if resp.StatusCode != tc.bare || resp2.StatusCode != tc.bearer {
			t.Errorf("MetricsAuth %v: /metrics %d without, %d with the token; want %d, %d", tc.auth, resp.StatusCode, resp2.StatusCode, tc.bare, tc.bearer)
		}
	}
	if _, err := rest.NewServer(nil, rest.Config{MetricsAuth: true}); err == nil {
		t.Error("MetricsAuth without a token: no error")
	}
}

// TestParamFormsShared: REST follows the central server's rules for
// parameter values (central/wire's fields.go; central's TestParamForms
// sends the same over RPC).
func TestParamFormsShared(t *testing.T) {
	base := vestaBase(t)
	for _, tc := range []struct {
		path   string
		status int
		has    string
	}{
		{"/makeid?time=5&seq=3&method=CENTRAL&type=MIN-GRANULARITY", http.StatusOK, ""},
		{"/makeid?time=5&seq=3&method=%20CENTRAL", http.StatusBadRequest, `method: " CENTRAL"; want 0-3`},
		{"/makeid?time=5&seq=%203", http.StatusBadRequest, `seq: " 3" is not an unsigned decimal integer`},
		{"/makeid?time=5&seq=0003", http.StatusOK, ""},
		{"/v1/ids/-1", http.StatusBadRequest, "Long.toUnsignedString"},
		{"/v1/transtime?time=5&type=min-granularity", http.StatusOK, ""},
	} {
		resp, body := do(t, newReq(t, http.MethodGet, base+tc.path))
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.has) {
			t.Errorf("GET %s: %d %s; want %d with %q", tc.path, resp.StatusCode, body, tc.status, tc.has)
		}
	}
}
