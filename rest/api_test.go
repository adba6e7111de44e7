package rest_test

import (
	"encoding/json"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/buildinfo"
	"github.com/vesta-go/vesta/rest"
)

// buildJSON is /v1/info's build: what vesta version and vesta_build_info
// say, never empty.
func buildJSON(t *testing.T) string {
	t.Helper()
	in := buildinfo.Read()
	if in.Version == "" || in.GoVersion == "" {
		t.Fatalf("buildinfo.Read() = %+v: no version", in)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAPIIssue: the ID routes issue increasing REST IDs in every layout;
// a leaf server's, Leaf's snowflake routes included, are Leaf's bits.
func TestAPIIssue(t *testing.T) {
	for _, cfg := range []core.Config{{Layout: core.Vesta}, {Layout: core.Leaf, Type: core.MinGranularity}} {
		cfg.Machine = 1022
		gen, _ := newGen(t, cfg)
		for _, c := range callers(t, newServer(t, gen, rest.Config{MaxBatch: 50})) {
			t.Run(cfg.Layout.String()+"/"+c.name, func(t *testing.T) {
				testAPIIssue(t, gen, c)
			})
		}
	}
}

func testAPIIssue(t *testing.T, gen *core.Generator, c caller) {
	method := core.REST
	if gen.Layout() == core.Leaf {
		method = core.MethodUnknown // not in the bits
	}
	r := c.do(t, req(http.MethodGet, "/v1/id", "", ""))
	var one struct{ ID json.RawMessage }
	decode(t, r.Body, &one)
	if r.Status != http.StatusOK || !strings.HasPrefix(string(one.ID), `"`) {
		t.Fatalf("/v1/id = %d %s; want 200 with the id as a JSON string", r.Status, r.Body)
	}
	first, err := strconv.ParseUint(strings.Trim(string(one.ID), `"`), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	r = c.do(t, req(http.MethodGet, "/v1/ids?count=50", "", ""))
	var many struct{ IDs []string }
	decode(t, r.Body, &many)
	if r.Status != http.StatusOK || len(many.IDs) != 50 {
		t.Fatalf("/v1/ids?count=50 = %d, %d ids", r.Status, len(many.IDs))
	}
	prev := first
	for _, s := range many.IDs {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil || id <= prev {
			t.Fatalf("id %q after %d: not an increasing decimal", s, prev)
		}
		prev = id
		if m := gen.Codec().Explain(core.ID(id)).Method; m != method {
			t.Fatalf("id %d has method %s, want %s", id, m, method)
		}
	}

	// Leaf's snowflake route answers the server's IDs, here above the rest.
	r = c.do(t, req(http.MethodGet, "/api/snowflake/get/anything", "", ""))
	id, err := strconv.ParseUint(r.Body, 10, 64)
	if r.Status != http.StatusOK || err != nil || id <= prev || id >= 1<<63 {
		t.Fatalf("snowflake: %d %q after %d", r.Status, r.Body, prev)
	}
	e := gen.Codec().Explain(core.ID(id))
	if e.Method != method || e.Machine != 1022 || !e.Instant.Equal(start2024) {
		t.Fatalf("snowflake ID %d explains as %+v", id, e)
	}
	if gen.Layout() == core.Leaf {
		// Leaf's formula (SnowflakeIDGenImpl.get, twepoch 1288834974657):
		// the worker bits are the machine ID, and the ID lies above every
		// ID any Leaf worker issued before this millisecond.
		ms := uint64(start2024.UnixMilli() - 1288834974657)
		if id != ms<<22|1022<<12|e.Seq {
			t.Fatalf("snowflake ID %d is not Leaf's formula for %+v", id, e)
		}
		if leafBefore := (ms-1)<<22 | 1023<<12 | 4095; id <= leafBefore {
			t.Fatalf("snowflake ID %d not above Leaf's last ID %d of the millisecond before", id, leafBefore)
		}
	}
}

func TestAPIExplainMakeTransTimeInfo(t *testing.T) {
	gen, _ := vestaGen(t)
	for _, c := range callers(t, newServer(t, gen, rest.Config{})) {
		t.Run(c.name, func(t *testing.T) {
			r := c.do(t, req(http.MethodGet, "/v1/ids/2610813175020394494", "", ""))
			want := `{"id":"2610813175020394494","version":0,"type":0,"type_name":"max-peak","method":2,` +
				`"method_name":"rest","time":284025600,"seq":5,"machine":1022,"timestamp":"2024-01-01T00:00:00Z"}`
			if r.Status != http.StatusOK || strings.TrimSpace(r.Body) != want {
				t.Fatalf("explain = %d %s\nwant %s", r.Status, r.Body, want)
			}

			for _, body := range []string{
				`{"time":284025600,"seq":5}`,
				`{"time":"284025600","seq":"5","machine":1022,"method":"rest","type":"max-peak","version":0}`,
				` {"seq":5, "time":284025600, "machine":null} `,
			} {
				r = c.do(t, req(http.MethodPost, "/v1/make", "application/json; charset=utf-8", body))
				if r.Status != http.StatusOK || strings.TrimSpace(r.Body) != `{"id":"2610813175020394494"}` {
					t.Errorf("make %s = %d %s", body, r.Status, r.Body)
				}
			}
			r = c.do(t, req(http.MethodPost, "/v1/make", "application/json",
				`{"time":284025600000,"seq":5,"type":1}`))
			if strings.TrimSpace(r.Body) != `{"id":"7215351455186687998"}` {
				t.Errorf("make type 1 = %d %s", r.Status, r.Body)
			}

			r = c.do(t, req(http.MethodGet, "/v1/transtime?time=284025600", "", ""))
			if want := `{"time":284025600,"type":0,"unix_ms":1704067200000,"timestamp":"2024-01-01T00:00:00Z"}`; strings.TrimSpace(r.Body) != want {
				t.Errorf("transtime = %d %s, want %s", r.Status, r.Body, want)
			}
			r = c.do(t, req(http.MethodGet, "/v1/transtime?time=284025600123&type=min-granularity", "", ""))
			if want := `{"time":284025600123,"type":1,"unix_ms":1704067200123,"timestamp":"2024-01-01T00:00:00.123Z"}`; strings.TrimSpace(r.Body) != want {
				t.Errorf("transtime type 1 = %d %s, want %s", r.Status, r.Body, want)
			}

			r = c.do(t, req(http.MethodGet, "/v1/info", "", ""))
			want = `{"layout":"vesta","epoch":"2014-12-31T16:00:00Z","type":0,"type_name":"max-peak","machine":1022,` +
				`"method":2,"method_name":"rest","version":0,"max_batch":10000,"build":` + buildJSON(t) + `}`
			if r.Status != http.StatusOK || strings.TrimSpace(r.Body) != want {
				t.Errorf("info = %d %s\nwant %s", r.Status, r.Body, want)
			}
		})
	}
}

// TestAPILeaf: a leaf server explains, makes and converts with Leaf's
// fields; the explanation leaves out the method the bits do not hold.
func TestAPILeaf(t *testing.T) {
	gen, _ := newGen(t, core.Config{Layout: core.Leaf, Type: core.MinGranularity, Machine: 1022})
	s := newServer(t, gen, rest.Config{})
	for _, tc := range []struct{ method, path, body, want string }{
		{http.MethodGet, "/v1/ids/2127674775982571519", "", `{"id":"2127674775982571519","version":0,"type":1,"type_name":"min-granularity",` +
			`"method_name":"unknown","time":507277196879,"seq":4095,"machine":1023,"timestamp":"2026-12-01T08:02:51.536Z"}`},
		{http.MethodPost, "/v1/make", `{"time":507277196879,"seq":4095}`, `{"id":"2127674775982567423"}`}, // machine 1022
		{http.MethodGet, "/v1/transtime?time=0", "", `{"time":0,"type":1,"unix_ms":1288834974657,"timestamp":"2010-11-04T01:42:54.657Z"}`},
	} {
		r := doHandler(s, req(tc.method, tc.path, "application/json", tc.body))
		if r.Status != http.StatusOK || strings.TrimSpace(r.Body) != tc.want {
			t.Errorf("%s %s = %d %s\nwant %s", tc.method, tc.path, r.Status, r.Body, tc.want)
		}
	}
	r := doHandler(s, req(http.MethodGet, "/v1/transtime?time=1&type=max-peak", "", ""))
	wantJSONError(t, r, http.StatusBadRequest, "invalid_argument", "the leaf layout counts milliseconds only")
	r = doHandler(s, req(http.MethodGet, "/v1/info", "", ""))
	if !strings.Contains(r.Body, `"layout":"leaf","epoch":"2010-11-04T01:42:54.657Z","type":1`) {
		t.Errorf("info = %s", r.Body)
	}
}

// TestJSONPrecision: version-1 IDs are above 2^63, far past 2^53; they
// must cross the JSON API as exact strings, and numbers given to make must
// be read exactly, never through a float64.
func TestJSONPrecision(t *testing.T) {
	gen, _ := newGen(t, core.Config{Layout: core.Sorted, Type: core.MinGranularity, Version: 1, Machine: 1000,
		Clock: core.NewManualClock(time.Date(2026, 3, 4, 5, 6, 7, 123e6, time.UTC))})
	s := newServer(t, gen, rest.Config{})

	r := get(t, s.Handler(), "/v1/id")
	var issued struct{ ID string }
	if err := json.Unmarshal([]byte(r.Body), &issued); err != nil {
		t.Fatalf("/v1/id %s: the id is not a JSON string: %v", r.Body, err)
	}
	id, ok := new(big.Int).SetString(issued.ID, 10)
	if !ok || id.Cmp(new(big.Int).Lsh(big.NewInt(1), 63)) < 0 {
		t.Fatalf("version-1 id %q is not above 2^63", issued.ID)
	}

	r = get(t, s.Handler(), "/v1/ids/"+issued.ID)
	var e struct {
		ID                                        string
		Version, Type, Method, Machine, Time, Seq json.Number
	}
	decode(t, r.Body, &e)
	if e.ID != issued.ID || e.Version != "1" || e.Machine != "1000" || e.Method != "2" {
		t.Fatalf("explain %s = %s", issued.ID, r.Body)
	}
	// The fields back through make, as JSON numbers, give the same ID.
	body := `{"version":` + string(e.Version) + `,"type":` + string(e.Type) + `,"method":` + string(e.Method) +
		`,"machine":` + string(e.Machine) + `,"time":` + string(e.Time) + `,"seq":` + string(e.Seq) + `}`
	rec := req(http.MethodPost, "/v1/make", "application/json", body)
	r = doHandler(s, rec)
	if strings.TrimSpace(r.Body) != `{"id":"`+issued.ID+`"}` {
		t.Fatalf("make %s = %s, want id %s", body, r.Body, issued.ID)
	}

	// 2^53+1 rounds to 2^53 as a float64: the message must show it exact.
	r = doHandler(s, req(http.MethodPost, "/v1/make", "application/json", `{"time":9007199254740993,"seq":0}`))
	wantJSONError(t, r, http.StatusBadRequest, "invalid_argument", "time: 9007199254740993 out of range")
	r = doHandler(s, req(http.MethodPost, "/v1/make", "application/json", `{"time":1,"seq":0,"machine":18446744073709551615}`))
	wantJSONError(t, r, http.StatusBadRequest, "invalid_argument", "machine: 18446744073709551615 out of range 0-1023")
}

func doHandler(s *rest.Server, r *http.Request) response {
	rec := newRecorder()
	s.Handler().ServeHTTP(rec, r)
	return response{rec.Code, rec.Header(), rec.Body.String()}
}
