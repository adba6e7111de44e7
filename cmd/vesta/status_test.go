package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestServeStatusLease: `vesta serve` hands its lease to the REST server,
// so /v1/status (the operator's page) shows the provider, the lease state
// and the time to renewal and deadline, as /metrics does.
func TestServeStatusLease(t *testing.T) {
	type lease struct {
		Provider     string   `json:"provider"`
		State        string   `json:"state"`
		RenewalInMs  *float64 `json:"renewal_in_ms"`
		DeadlineInMs *float64 `json:"deadline_in_ms"`
		QuarantineMs float64  `json:"quarantine_ms"`
	}
	status := func(s served) (lease, uint16) {
		t.Helper()
		var v struct {
			Machine uint16 `json:"machine"`
			Lease   *lease `json:"lease"`
		}
		if getJSON(t, s, "/v1/status", &v); v.Lease == nil {
			t.Fatalf("/v1/status: no lease in %+v", v)
		}
		return *v.Lease, v.Machine
	}

	static := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--machine", "1000")
	if l, m := status(static); l.Provider != "static" || l.State != "none" || l.RenewalInMs != nil || l.DeadlineInMs != nil || m != 1000 {
		t.Errorf("static: machine %d lease %+v; want static, none, no renewal or deadline", m, l)
	}

	redisLeases(t, "3s")
	leased := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0")
	l, m := status(leased)
	ttl := float64(3 * time.Second / time.Millisecond)
	if l.Provider != "redis" || l.State != "held" || l.RenewalInMs == nil || l.DeadlineInMs == nil ||
		*l.RenewalInMs < 0 || *l.RenewalInMs > ttl || *l.DeadlineInMs <= 0 || *l.DeadlineInMs > ttl || *l.RenewalInMs >= *l.DeadlineInMs {
		t.Errorf("redis lease %+v (renewal %v, deadline %v ms); want held, renewal before deadline, both within the TTL", l, l.RenewalInMs, l.DeadlineInMs)
	}
	// No release record, but a Redis in service (redisLeases): the floor
	// of the claim's quarantine lies in the past.
	if l.QuarantineMs < 0 || l.QuarantineMs > ttl+100+1000 {
		t.Errorf("quarantine %v ms; want 0 to %v", l.QuarantineMs, ttl+1100)
	}
	_, body := httpGet(t, "http://"+leased.rest+"/metrics")
	for _, want := range []string{`vesta_machine_lease_state{range="server",state="held"} 1`, `vesta_machine_id{range="server"} ` + itoa(int(m))} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q, which /v1/status implies:\n%s", want, grepLines(body, "vesta_machine"))
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
