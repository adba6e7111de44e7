package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
)

// rpcClient is a Go client of the central server of s alone (no
// fallback), closed at the test's end.
func rpcClient(t *testing.T, s served) *client.Client {
	t.Helper()
	return clienttest.Open(t, clienttest.Direct(s.central))
}

// rpcHolder asks the central server of s, through the Go client
// (Vesta.Holder), which hold issued id.
func rpcHolder(t *testing.T, s served, id string) client.Holder {
	t.Helper()
	x, err := core.ParseID(id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := rpcClient(t, s).Holder(context.Background(), x)
	if err != nil {
		t.Fatalf("client Holder of %s: %v", id, err)
	}
	return h
}

// TestExplainHolder: `vesta explain --holder` names, for an ID of a hold
// released before and an ID of the hold now serving the same machine ID,
// each one's holder, read from the Redis hold history by the server at
// --url; the Go client (Vesta.Holder) names the same holds; a server on a
// fixed ID says it keeps no history.
func TestExplainHolder(t *testing.T) {
	newID := func(s served) string {
		t.Helper()
		var v struct{ ID string }
		getJSON(t, s, "/v1/id", &v)
		return v.ID
	}
	redisLeases(t, "3s")
	t.Setenv("VESTA_MACHINE_SERVER_RANGE", "1000-1000")
	first := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0")
	old := newID(first)
	if r := first.stop(); r.code != 0 {
		t.Fatalf("serve exited %d: %s", r.code, r.stderr)
	}
	second := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0")
	if m := machineOf(t, second); m != 1000 {
		t.Fatalf("the second server holds %d; want 1000, released by the first", m)
	}
	cur := newID(second)
	r := cli(t, "", "explain", "--holder", "--url", "http://"+second.rest, old, cur)
	if r.code != 0 {
		t.Fatalf("explain --holder: %d %s %s", r.code, r.stdout, r.stderr)
	}
	parts := strings.Split(r.stdout, "\n"+cur)
	if len(parts) != 2 || !strings.Contains(parts[0], "released") || !strings.Contains(parts[0], "holder: host=") ||
		strings.Contains(parts[1], "released") || !strings.Contains(parts[1], "; held") {
		t.Fatalf("explain --holder:\n%s\nwant the old ID's hold released, the new one's held", r.stdout)
	}
	r = cli(t, "", "explain", "--holder", "--json", "--url", "http://"+second.rest, cur)
	var v struct {
		Holder struct {
			Known bool
			Holds []struct{ Self bool }
		}
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || !v.Holder.Known || len(v.Holder.Holds) != 1 || !v.Holder.Holds[0].Self {
		t.Fatalf("explain --holder --json: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if h := rpcHolder(t, second, old); h.Known != 1 || len(h.Holds) != 1 || h.Holds[0].End != "released" || h.Holds[0].Self != 0 {
		t.Fatalf("client Holder of the released hold's ID: %+v", h)
	}
	if h := rpcHolder(t, second, cur); h.Known != 1 || len(h.Holds) != 1 || h.Holds[0].Self != 1 || h.Holds[0].End != "" || h.Store != "redis" {
		t.Fatalf("client Holder of the current hold's ID: %+v", h)
	}

	t.Setenv("VESTA_MACHINE_PROVIDERS", "static")
	fixed := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--machine", "1000")
	fixedID := newID(fixed)
	r = cli(t, "", "explain", "--holder", "--url", "http://"+fixed.rest, fixedID)
	if r.code != 0 || !strings.Contains(r.stdout, "fixed ID") {
		t.Fatalf("explain --holder on a fixed ID: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// The process's own record of its fixed ID.
	if h := rpcHolder(t, fixed, fixedID); h.Known != 1 || len(h.Holds) != 1 || h.Holds[0].Self != 1 || !strings.Contains(h.Holds[0].Lease, "fixed ID") {
		t.Fatalf("client Holder on a fixed ID: %+v", h)
	}
	r = cli(t, "", "explain", "--holder", "--url", "http://"+fixed.rest, "nope")
	if r.code == 0 || !strings.Contains(r.stderr, "nope") {
		t.Fatalf("explain --holder nope: %d %s %s", r.code, r.stdout, r.stderr)
	}
}
