package rest_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/logtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/rest"
)

// start2024 is the worked example of docs/design/id-layouts.md:
// 2024-01-01T00:00:00Z, time 284025600 s after the vesta epoch.
var start2024 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// newGen starts a generator on a manual clock at start2024 (or cfg.Clock);
// it is closed at cleanup.
func newGen(t testing.TB, cfg core.Config) (*core.Generator, *core.ManualClock) {
	t.Helper()
	return gentest.Manual(t, cfg, start2024)
}

// vestaGen is the generator of the worked example of
// docs/design/id-layouts.md: vesta layout, machine 1022, max-peak.
func vestaGen(t testing.TB) (*core.Generator, *core.ManualClock) {
	return newGen(t, core.Config{Layout: core.Vesta, Machine: 1022})
}

// vestaBase serves a server of vestaGen's generator, configured by
// default, and returns its base URL.
func vestaBase(t testing.TB) string {
	gen, _ := vestaGen(t)
	return serve(t, newServer(t, gen, rest.Config{}))
}

func newServer(t testing.TB, gen *core.Generator, cfg rest.Config) *rest.Server {
	t.Helper()
	s, err := rest.NewServer(gen, cfg)
	return testkit.Closed(t, "NewServer", s, err)
}

// serve runs s on a loopback listener and returns its base URL once Serve
// has begun; the server is closed, and Serve's return checked, at cleanup.
func serve(t testing.TB, s *rest.Server) string {
	t.Helper()
	return "http://" + nettest.Serve(t, s, nil, nil).String()
}

// response is an answer read completely, whichever way it came.
type response struct {
	Status int
	Header http.Header
	Body   string
}

// caller sends requests either in-process (httptest) or over a real
// loopback connection, so every route is tested both ways.
type caller struct {
	name string
	do   func(t testing.TB, req *http.Request) response
}

func callers(t testing.TB, s *rest.Server) []caller {
	base := serve(t, s)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	return []caller{
		{"httptest", func(t testing.TB, req *http.Request) response {
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			return response{rec.Code, rec.Header(), rec.Body.String()}
		}},
		{"tcp", func(t testing.TB, req *http.Request) response {
			t.Helper()
			u := base + req.URL.RequestURI()
			r2, err := http.NewRequest(req.Method, u, req.Body)
			if err != nil {
				t.Fatal(err)
			}
			r2.Header = req.Header
			res, err := client.Do(r2)
			if err != nil {
				t.Fatalf("%s %s: %v", req.Method, u, err)
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			return response{res.StatusCode, res.Header, string(b)}
		}},
	}
}

// req builds a request to localhost (httptest's default Host,
// example.com, is no name of the server's); body, if not "", is sent with
// content type ct.
func req(method, target, ct, body string) *http.Request {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	if strings.HasPrefix(target, "/") {
		target = "http://localhost" + target
	}
	q := httptest.NewRequest(method, target, r)
	if ct != "" {
		q.Header.Set("Content-Type", ct)
	}
	return q
}

// get sends GET target to h in-process.
func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func get(t testing.TB, h http.Handler, target string) response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req(http.MethodGet, target, "", ""))
	return response{rec.Code, rec.Header(), rec.Body.String()}
}

// decode unmarshals a JSON body, keeping numbers exact.
func decode(t testing.TB, body string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %q: %v", body, err)
	}
}

// apiErr is the JSON error shape.
type apiErr struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantAnswer checks an answer's status and media type.
func wantAnswer(t testing.TB, r response, status int, mediaType string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, mediaType) {
		t.Fatalf("Content-Type %q, want %s; body %s", ct, mediaType, r.Body)
	}
}

// wantJSONError checks an error answer of the JSON API.
func wantJSONError(t testing.TB, r response, status int, code, mention string) {
	t.Helper()
	wantAnswer(t, r, status, "application/json")
	var e apiErr
	dec := json.NewDecoder(strings.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %q is not the error shape: %v", r.Body, err)
	}
	if e.Error.Code != code {
		t.Fatalf("code %q, want %q; body %s", e.Error.Code, code, r.Body)
	}
	if !strings.Contains(e.Error.Message, mention) {
		t.Fatalf("message %q does not mention %q", e.Error.Message, mention)
	}
}

// wantTextError checks an error answer of a Vesta-compatible route.
func wantTextError(t testing.TB, r response, status int, code, mention string) {
	t.Helper()
	wantAnswer(t, r, status, "text/plain")
	if !strings.HasPrefix(r.Body, code+": ") || !strings.Contains(r.Body, mention) {
		t.Fatalf("body %q, want %q... mentioning %q", r.Body, code+": ", mention)
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer = logtest.Buffer

var errLease = errors.New("lease lost: renewal failed for 12s")
