package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestCapacity: `vesta capacity` prints a served vesta's /v1/capacity a
// line per part, each with its status, or the document with --json; it
// exits 1 when a part is critical or the server answers with an error.
func TestCapacity(t *testing.T) {
	srv := startServe(t, "--central-listen", "", "--rest-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--machine", "1001",
		"--config", "")
	url := "http://" + srv.rest
	r := cli(t, "", "capacity", "--url", url)
	for _, re := range []string{
		`(?m)^time field +sorted max-peak from 2025-01-01T00:00:00Z ends 2059-01-10T13:37:03Z: \d+\.\d years left +ok$`,
		`(?m)^machine IDs +fixed ID \(static\): no pool hands it out +ok$`,
		`(?m)^sequence +at the ceiling .*\(1048576 IDs per 1s\); borrowing .* of 1s; \d+ waits +ok$`,
		`(?m)^status +at 20\d\d-.* +ok$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("capacity: stdout does not match %s:\n%s", re, r.stdout)
		}
	}
	if r.code != 0 {
		t.Errorf("capacity: exit %d %s", r.code, r.stderr)
	}

	r = cli(t, "", "capacity", "--url", url, "--json")
	var doc struct {
		Time struct {
			Years float64 `json:"years_left"`
		} `json:"time"`
		Machine struct {
			Fixed bool `json:"fixed"`
		} `json:"machine"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || doc.Status != "ok" || !doc.Machine.Fixed ||
		doc.Time.Years < 30 || doc.Time.Years > 33 {
		t.Errorf("capacity --json: %v exit %d %s", err, r.code, r.stdout)
	}

	// A critical part: its line says so, and the exit status is 1.
	critical := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"at":"2026-01-01T00:00:00Z","time":{"layout":"sorted","type":"max-peak","epoch":"2025-01-01T00:00:00Z",` +
			`"end":"2026-06-01T00:00:00Z","years_left":0.4,"status":"critical"},"machine":{"provider":"static","fixed":true,` +
			`"note":"fixed ID (static): no pool hands it out","status":"ok"},"sequence":{"unit_s":1,"ids_per_unit":1048576,` +
			`"share_at_ceiling":0,"window_s":60,"max_borrow_s":1,"status":"ok"},"segments":null,"status":"critical"}`))
	}))
	defer critical.Close()
	r = cli(t, "", "capacity", "--url", critical.URL)
	if !regexp.MustCompile(`(?m)^time field +.*: 0\.4 years left +critical$`).MatchString(r.stdout) ||
		r.code != 1 || !strings.Contains(r.stderr, "critical") {
		t.Errorf("critical: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}

	// An error answer fails, naming the status.
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"code":"internal","message":"down"}`, http.StatusInternalServerError)
	}))
	defer broken.Close()
	if r := cli(t, "", "capacity", "--url", broken.URL); r.code != 1 || !strings.Contains(r.stderr, "500") {
		t.Errorf("error answer: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
}
