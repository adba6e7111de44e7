package integration_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// fleetAnswer is GET /v1/fleet, the fields the fleet view shows.
type fleetAnswer struct {
	Store   string        `json:"store"`
	Prefix  string        `json:"prefix"`
	Error   string        `json:"error"`
	Members []fleetMember `json:"members"`
}

type fleetMember struct {
	Machine int    `json:"machine"`
	Self    bool   `json:"self"`
	State   string `json:"state"`
	Version string `json:"version"`
	RPC     string `json:"rpc"`
	HTTP    string `json:"http"`
	Renewed string `json:"renewed"`
}

func fleetOf(t testing.TB, p *proc) fleetAnswer {
	t.Helper()
	res, err := http.Get(p.restEndpoint() + "/v1/fleet")
	if err != nil {
		t.Fatalf("%s: GET /v1/fleet: %v", p.name, err)
	}
	defer res.Body.Close()
	var f fleetAnswer
	if err := json.NewDecoder(res.Body).Decode(&f); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("%s: GET /v1/fleet: %d, %v", p.name, res.StatusCode, err)
	}
	return f
}

// TestFleetView: three `vesta serve` processes leasing from one Redis
// each list all three in GET /v1/fleet, with the addresses each serves on
// and its version, themselves marked; a server killed without a word
// leaves the others' lists once its lease expires.
func TestFleetView(t *testing.T) {
	rds := redistest.Start(t)
	const prefix, ttl = "fleetview", 2 * time.Second
	rds.Established(prefix) // start at once: no data loss here
	var ps []*proc
	for i := range 3 {
		ps = append(ps, launch(t, fmt.Sprintf("server-%d", i), serverEnv(t, rds, prefix, ttl, "VESTA_REST_LISTEN", "127.0.0.1:0")))
	}
	waitAll(t, ps...)
	byMachine := map[int]*proc{}
	for _, p := range ps {
		byMachine[p.Machine] = p
	}
	for _, p := range ps {
		f := fleetOf(t, p)
		if f.Store != "redis" || f.Prefix != prefix || f.Error != "" || len(f.Members) != 3 {
			t.Fatalf("%s lists %+v; want the three servers from redis under %s", p.name, f, prefix)
		}
		for _, m := range f.Members {
			q := byMachine[m.Machine]
			if q == nil {
				t.Fatalf("%s lists machine %d, which no server holds", p.name, m.Machine)
			}
			if m.Self != (q == p) || m.State != "held" || m.Version == "" || m.RPC != q.Central || m.HTTP != q.REST || m.Renewed == "" {
				t.Errorf("%s lists %s as %+v; want it at %s and %s, held, with a version", p.name, q.name, m, q.Central, q.REST)
			}
		}
		if !slices.IsSortedFunc(f.Members, func(a, b fleetMember) int { return a.Machine - b.Machine }) {
			t.Errorf("%s lists %+v; want them by machine ID", p.name, f.Members)
		}
	}
	gone := ps[0]
	gone.kill()
	waittest.Until(t, "the killed server's lease to expire", func() bool {
		for _, m := range fleetOf(t, ps[1]).Members {
			if m.Machine == gone.Machine {
				return false
			}
		}
		return true
	})
	stopAll(t, ps[1:]...)
}
