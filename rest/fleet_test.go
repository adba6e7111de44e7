package rest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/rest"
)

// keysOf is the sorted key set of a JSON object.
func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

const (
	fleetKeys  = "error,members,now,prefix,skipped,store"
	memberKeys = "expires,host,http,machine,pid,provider,range,renewed,rpc,self,started,state,version"
)

// TestFleet: GET /v1/fleet answers the view Config.Fleet gives, in the
// documented shape, behind the token, over a real connection and in
// process.
func TestFleet(t *testing.T) {
	gen, _ := vestaGen(t)
	renewed := time.Date(2026, 11, 30, 14, 5, 6, 900_000_000, time.UTC)
	view := rest.FleetView{Store: "redis", Prefix: "vesta", Members: []rest.FleetMember{
		{Machine: 924, State: "held", Version: "v0.1.0 (1a2b3c4d5e6f)", Host: "node-b", RPC: "10.0.0.2:7070", HTTP: "10.0.0.2:7080",
			Started: renewed.Add(-time.Hour), Renewed: renewed, Expires: renewed.Add(15 * time.Second), Provider: "redis", Range: "server", PID: 4711},
		{Machine: 1022, Self: true, State: "held", Version: "v0.1.0 (1a2b3c4d5e6f)", Host: "node-a", Provider: "redis", Range: "server"},
	}}
	s := newServer(t, gen, rest.Config{Token: token, Fleet: func(ctx context.Context) (rest.FleetView, error) {
		if _, ok := ctx.Deadline(); !ok {
			return rest.FleetView{}, errors.New("no deadline")
		}
		return view, nil
	}})
	for _, c := range callers(t, s) {
		t.Run(c.name, func(t *testing.T) {
			if r := c.do(t, req(http.MethodGet, "/v1/fleet", "", "")); r.Status != http.StatusUnauthorized {
				t.Fatalf("without the token: %d", r.Status)
			}
			q := req(http.MethodGet, "/v1/fleet", "", "")
			q.Header.Set("Authorization", "Bearer "+token)
			r := c.do(t, q)
			if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("GET /v1/fleet: %d %q %s", r.Status, r.Header.Get("Cache-Control"), r.Body)
			}
			var b map[string]any
			decode(t, r.Body, &b)
			if got := keysOf(b); got != fleetKeys {
				t.Fatalf("keys %s; want %s", got, fleetKeys)
			}
			if b["store"] != "redis" || b["prefix"] != "vesta" || b["error"] != "" {
				t.Fatalf("body %s", r.Body)
			}
			ms := b["members"].([]any)
			if len(ms) != 2 {
				t.Fatalf("members %v", ms)
			}
			peer, me := ms[0].(map[string]any), ms[1].(map[string]any)
			if got := keysOf(peer); got != memberKeys {
				t.Fatalf("member keys %s; want %s", got, memberKeys)
			}
			want := map[string]string{"machine": "924", "self": "false", "state": "held", "version": "v0.1.0 (1a2b3c4d5e6f)", "host": "node-b",
				"rpc": "10.0.0.2:7070", "http": "10.0.0.2:7080", "started": "2026-11-30T13:05:06.9Z", "renewed": "2026-11-30T14:05:06.9Z",
				"expires": "2026-11-30T14:05:21.9Z", "provider": "redis", "range": "server", "pid": "4711"}
			for k, v := range want {
				if got := fmt.Sprint(peer[k]); got != v {
					t.Errorf("member %s = %q; want %q", k, got, v)
				}
			}
			if me["self"] != true || fmt.Sprint(me["machine"]) != "1022" || me["renewed"] != "" || me["rpc"] != "" {
				t.Errorf("self %v", me)
			}
		})
	}
}

// TestFleetStoreUnreadable: a store that fails or does not answer still
// gets a 200 within the route's bound, with the error and this server
// alone.
func TestFleetStoreUnreadable(t *testing.T) {
	for name, fleet := range map[string]func(context.Context) (rest.FleetView, error){
		"error": func(context.Context) (rest.FleetView, error) {
			return rest.FleetView{Store: "etcd", Prefix: "vesta"}, errors.New("etcd [127.0.0.1:1]: connection refused")
		},
		"silent": func(ctx context.Context) (rest.FleetView, error) {
			<-ctx.Done() // a store that never answers: the route's bound ends it
			return rest.FleetView{Store: "redis", Prefix: "vesta"}, ctx.Err()
		},
	} {
		t.Run(name, func(t *testing.T) {
			gen, _ := vestaGen(t)
			s := newServer(t, gen, rest.Config{Fleet: fleet,
				Lease: func() rest.LeaseStatus { return rest.LeaseStatus{Provider: "redis", State: "fenced"} }})
			base := serve(t, s)
			res, err := http.Get(base + "/v1/fleet")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var b struct {
				Store   string `json:"store"`
				Error   string `json:"error"`
				Members []struct {
					Machine  uint16 `json:"machine"`
					Self     bool   `json:"self"`
					State    string `json:"state"`
					Version  string `json:"version"`
					HTTP     string `json:"http"`
					Provider string `json:"provider"`
				} `json:"members"`
			}
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			decode(t, string(body), &b)
			if b.Error == "" || len(b.Members) != 1 {
				t.Fatalf("body %+v; want an error and this server alone", b)
			}
			m := b.Members[0]
			if !m.Self || m.Machine != 1022 || m.State != "fenced" || m.Version == "" || m.Provider != "redis" || "http://"+m.HTTP != base {
				t.Fatalf("this server as %+v (serving at %s)", m, base)
			}
		})
	}
}

// TestFleetWithoutAView: a server given no Fleet lists itself, store
// none.
func TestFleetWithoutAView(t *testing.T) {
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{})
	r := get(t, s.Handler(), "/v1/fleet")
	var b map[string]any
	decode(t, r.Body, &b)
	ms, _ := b["members"].([]any)
	if r.Status != http.StatusOK || b["store"] != "none" || b["error"] != "" || len(ms) != 1 || keysOf(b) != fleetKeys {
		t.Fatalf("GET /v1/fleet without a view: %d %s", r.Status, r.Body)
	}
	if me := ms[0].(map[string]any); me["self"] != true || me["state"] != "none" || keysOf(me) != memberKeys {
		t.Fatalf("this server as %v", me)
	}
}
