package rest_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/rest"
)

// Vectors computed independently of core (plain shifts, in Python) for the
// vesta layout: machine | seq<<10 | time<<(10+seqbits) | method<<60 |
// type<<62 | version<<63.
var vestaVectors = []struct {
	query string // /makeid query
	id    string
	expid string // Vesta's /expid JSON of id
}{
	// The worked example of docs/design/id-layouts.md and its
	// min-granularity twin.
	{"machine=1022&seq=5&time=284025600&method=2&type=0", "2610813175020394494",
		`{"genMethod":2,"machine":1022,"seq":5,"time":284025600,"type":0,"version":0}`},
	{"machine=1022&seq=5&time=284025600000&method=2&type=1", "7215351455186687998",
		`{"genMethod":2,"machine":1022,"seq":5,"time":284025600000,"type":1,"version":0}`},
	// The makeid example of Vesta's REST guide, with its fields taken by
	// name (Vesta itself passed them positionally in the wrong order).
	{"machine=1021&seq=0&time=94990103&genMethod=2&type=0&version=0", "2407837855670862845",
		`{"genMethod":2,"machine":1021,"seq":0,"time":94990103,"type":0,"version":0}`},
	// Every field at its maximum: version 1 sets bit 63.
	{"machine=1023&seq=1048575&time=1073741823&method=3&type=0&version=1", "13835058055282163711",
		`{"genMethod":3,"machine":1023,"seq":1048575,"time":1073741823,"type":0,"version":1}`},
	{"machine=0&seq=1023&time=1099511627775&method=3&type=1&version=1", "18446744073709550592",
		`{"genMethod":3,"machine":0,"seq":1023,"time":1099511627775,"type":1,"version":1}`},
	{"machine=512&seq=1024&time=1&genMethod=1&type=0&version=1", "10376293542536413696",
		`{"genMethod":1,"machine":512,"seq":1024,"time":1,"type":0,"version":1}`},
	{"machine=7&seq=33&time=1000&method=0&type=1", "4611686019475997703",
		`{"genMethod":0,"machine":7,"seq":33,"time":1000,"type":1,"version":0}`},
	// Left-out fields are the server's: machine 1022, method rest, type 0, version 0.
	{"seq=5&time=284025600", "2610813175020394494",
		`{"genMethod":2,"machine":1022,"seq":5,"time":284025600,"type":0,"version":0}`},
	// Names for method and type; method and genMethod agreeing.
	{"seq=5&time=284025600000&method=rest&genMethod=rest&type=min-granularity", "7215351455186687998",
		`{"genMethod":2,"machine":1022,"seq":5,"time":284025600000,"type":1,"version":0}`},
}

func TestVestaMakeExpID(t *testing.T) {
	gen, _ := vestaGen(t)
	for _, c := range callers(t, newServer(t, gen, rest.Config{})) {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range vestaVectors {
				r := c.do(t, req(http.MethodGet, "/makeid?"+v.query, "", ""))
				if r.Status != http.StatusOK || r.Body != v.id {
					t.Errorf("/makeid?%s = %d %q, want 200 %q", v.query, r.Status, r.Body, v.id)
				}
				if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
					t.Errorf("/makeid Content-Type %q, want text/plain", ct)
				}
				r = c.do(t, req(http.MethodGet, "/expid?id="+v.id, "", ""))
				if r.Status != http.StatusOK || r.Body != v.expid {
					t.Errorf("/expid?id=%s = %d %s, want 200 %s", v.id, r.Status, r.Body, v.expid)
				}
			}
		})
	}
}

func TestVestaTransTime(t *testing.T) {
	maxPeak, _ := vestaGen(t)
	minGran, _ := newGen(t, core.Config{Layout: core.Vesta, Type: core.MinGranularity, Machine: 1022})
	for _, tc := range []struct {
		gen  *core.Generator
		time string
		want string
	}{
		// Vesta's REST guide: 12235264 → "Fri May 22 14:41:04 CST 2015",
		// the same instant as in UTC below.
		{maxPeak, "12235264", "Fri May 22 06:41:04 UTC 2015"},
		{maxPeak, "284025600", "Mon Jan 01 00:00:00 UTC 2024"},
		{maxPeak, "0", "Wed Dec 31 16:00:00 UTC 2014"},
		// Java's Date.toString drops the milliseconds.
		{minGran, "284025600999", "Mon Jan 01 00:00:00 UTC 2024"},
	} {
		s := newServer(t, tc.gen, rest.Config{})
		r := get(t, s.Handler(), "/transtime?time="+tc.time)
		if r.Status != http.StatusOK || r.Body != tc.want {
			t.Errorf("%s /transtime?time=%s = %d %q, want %q", tc.gen.Type(), tc.time, r.Status, r.Body, tc.want)
		}
	}
}

func TestVestaGenID(t *testing.T) {
	gen, _ := vestaGen(t)
	for _, c := range callers(t, newServer(t, gen, rest.Config{})) {
		t.Run(c.name, func(t *testing.T) {
			var last uint64
			for i := 0; i < 3; i++ {
				r := c.do(t, req(http.MethodGet, "/genid", "", ""))
				if r.Status != http.StatusOK {
					t.Fatalf("/genid = %d %s", r.Status, r.Body)
				}
				id, err := strconv.ParseUint(r.Body, 10, 64)
				if err != nil {
					t.Fatalf("/genid body %q is not a bare decimal: %v", r.Body, err)
				}
				if id <= last {
					t.Fatalf("/genid %d after %d: not increasing", id, last)
				}
				last = id
				e := gen.Codec().Explain(core.ID(id))
				if e.Machine != 1022 || e.Method != core.REST || e.Type != core.MaxPeak || e.Time != 284025600 {
					t.Fatalf("/genid %d explains to %+v; want machine 1022, method rest, time 284025600", id, e)
				}
			}
		})
	}
}
