package rest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/rest"
)

// The fuzz targets drive the parameter parsers through the real handler:
// whatever the input, the answer is a 200 or a 4xx naming a parameter,
// never a 500 or a panic, and a 200 says what was asked.

func fuzzServer(f *testing.F) (*rest.Server, core.Codec) {
	gen, _ := vestaGen(f)
	return newServer(f, gen, rest.Config{MaxBatch: 100, BodyLimit: 4096}), gen.Codec()
}

// FuzzVestaQuery: any query string on /makeid, /expid and /transtime.
func FuzzVestaQuery(f *testing.F) {
	for _, seed := range []string{
		"time=284025600&seq=5", "time=1&seq=2&machine=3&method=1&type=1&version=1",
		"time=1&seq=1&genMethod=2&method=2", "time=1&seq=1&genMethod=rest", "id=2610813175020394494",
		"id=18446744073709551615", "time=-1&seq=1", "time=1e9&seq=1", "time=1&time=2&seq=1", "%zz", "time=%00&seq=1",
	} {
		f.Add(seed)
	}
	s, codec := fuzzServer(f)
	f.Fuzz(func(t *testing.T, raw string) {
		for _, path := range []string{"/makeid", "/expid", "/transtime"} {
			q := req(http.MethodGet, "/", "", "")
			q.URL.Path, q.URL.RawQuery = path, raw
			r := doHandler(s, q)
			if r.Status != http.StatusOK && r.Status != http.StatusBadRequest {
				t.Fatalf("%s?%s = %d %s", path, raw, r.Status, r.Body)
			}
			if r.Status == http.StatusBadRequest && !strings.HasPrefix(r.Body, "invalid_argument: ") {
				t.Fatalf("%s?%s: 400 body %q", path, raw, r.Body)
			}
			if r.Status != http.StatusOK || path != "/makeid" {
				continue
			}
			id, err := strconv.ParseUint(r.Body, 10, 64)
			if err != nil {
				t.Fatalf("/makeid?%s = %q", raw, r.Body)
			}
			vals, _ := url.ParseQuery(raw)
			got := codec.Explain(core.ID(id)).Fields()
			for name, want := range map[string]uint64{"time": got.Time, "seq": got.Seq, "machine": got.Machine,
				"method": got.Method, "genMethod": got.Method, "type": got.Type, "version": got.Version} {
				if v := vals[name]; len(v) == 1 {
					if n, err := strconv.ParseUint(v[0], 10, 64); err == nil && n != want {
						t.Fatalf("/makeid?%s made %d whose %s is %d", raw, id, name, want)
					}
				}
			}
		}
	})
}

// FuzzMakeBody: any body posted to /v1/make as JSON.
func FuzzMakeBody(f *testing.F) {
	for _, seed := range []string{
		`{"time":284025600,"seq":5}`, `{"time":"284025600","seq":"5","method":"rest","type":"max-peak"}`,
		`{"time":1,"seq":1,"machine":null}`, `{"time":1.5,"seq":1}`, `{"time":1,"seq":1,"x":1}`, `[]`, `{`,
		`{"time":1,"seq":1}{}`, `{"time":9007199254740993,"seq":0}`, `{"time":1,"seq":1,"time":1}`, "\x00",
	} {
		f.Add(seed)
	}
	s, codec := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		r := doHandler(s, req(http.MethodPost, "/v1/make", "application/json", body))
		switch r.Status {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			var e apiErr
			if err := json.Unmarshal([]byte(r.Body), &e); err != nil || e.Error.Code != "invalid_argument" || e.Error.Message == "" {
				t.Fatalf("body %q: error answer %s", body, r.Body)
			}
			return
		default:
			t.Fatalf("body %q: %d %s", body, r.Status, r.Body)
		}
		var out struct{ ID string }
		if err := json.Unmarshal([]byte(r.Body), &out); err != nil {
			t.Fatalf("body %q: answer %s", body, r.Body)
		}
		id, err := strconv.ParseUint(out.ID, 10, 64)
		if err != nil {
			t.Fatalf("body %q: id %q", body, out.ID)
		}
		var in map[string]json.Number
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		if dec.Decode(&in) != nil {
			return // strings or names: checked by the tables
		}
		got := codec.Explain(core.ID(id)).Fields()
		for name, want := range map[string]uint64{"time": got.Time, "seq": got.Seq, "machine": got.Machine,
			"method": got.Method, "type": got.Type, "version": got.Version} {
			if v, ok := in[name]; ok {
				if n, err := strconv.ParseUint(v.String(), 10, 64); err == nil && n != want {
					t.Fatalf("body %q made %d whose %s is %d", body, id, name, want)
				}
			}
		}
	})
}

// FuzzExplainPath: any path segment after /v1/ids/.
func FuzzExplainPath(f *testing.F) {
	for _, seed := range []string{"2610813175020394494", "18446744073709551615", "18446744073709551616", "0", "007",
		"-1", "1.0", "abc", "", "%2F", "1/2"} {
		f.Add(seed)
	}
	s, _ := fuzzServer(f)
	f.Fuzz(func(t *testing.T, seg string) {
		q := req(http.MethodGet, "/", "", "")
		q.URL.Path = "/v1/ids/" + seg
		r := doHandler(s, q)
		switch r.Status {
		case http.StatusOK:
			n, err := strconv.ParseUint(seg, 10, 64)
			if err != nil {
				t.Fatalf("/v1/ids/%q = 200 for a non-ID", seg)
			}
			if !strings.Contains(r.Body, `"id":"`+strconv.FormatUint(n, 10)+`"`) {
				t.Fatalf("/v1/ids/%q = %s", seg, r.Body)
			}
		case http.StatusBadRequest, http.StatusNotFound:
			var e apiErr
			if err := json.Unmarshal([]byte(r.Body), &e); err != nil || e.Error.Message == "" {
				t.Fatalf("/v1/ids/%q: %d %s", seg, r.Status, r.Body)
			}
		default:
			t.Fatalf("/v1/ids/%q: %d %s", seg, r.Status, r.Body)
		}
	})
}
