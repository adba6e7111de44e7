package main

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/vesta-go/vesta/internal/testkit/redistest"
)

// TestSeqCommands: vesta seq create and list on a Redis store, then vesta
// serve publishing the tags over REST, Leaf's API and RPC, with metrics and
// the /readyz line; bad input is a usage error naming the flag.
func TestSeqCommands(t *testing.T) {
	rs := redistest.Start(t)
	t.Setenv("VESTA_SEGMENT_STORE", "redis")
	t.Setenv("VESTA_SEGMENT_REDIS_ADDRS", rs.Addr())
	t.Setenv("VESTA_SEGMENT_PRELOAD", "orders")

	if r := cli(t, "", "seq", "create", "orders", "--start", "1000", "--step", "50", "--desc", "order numbers"); r.code != 0 ||
		!strings.Contains(r.stdout, "created orders: first number 1000, step 50") {
		t.Fatalf("create: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, "", "seq", "create", "leaf-segment-test", "--step", "2000"); r.code != 0 {
		t.Fatalf("create: %d %s", r.code, r.stderr)
	}
	if r := cli(t, "", "seq", "create", "orders", "--step", "5"); r.code != 1 || !strings.Contains(r.stderr, `tag "orders" exists already`) {
		t.Fatalf("create twice: %d %s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"seq", "create", "orders"}, "--step is required"},
		{[]string{"seq", "create", "bad tag", "--step", "5"}, "TAG:"},
		{[]string{"seq", "create", "x", "--step", "0"}, "--step 0; want 1-2147483647"},
		{[]string{"seq", "create", "x", "--step", "5", "--start", "0"}, "--start 0; want 1-"},
		{[]string{"seq", "create", "x", "--step", "5", "--desc", strings.Repeat("d", 257)}, "--desc is 257 bytes"},
		{[]string{"seq", "create", "x", "y", "--step", "5"}, "accepts 1 arg"},
		{[]string{"seq", "list", "extra"}, "unknown command"},
		{[]string{"seq", "create", "huge", "--step", "5", "--start", "4611686018427387903"}, "--start 4611686018427387903, --step 5"},
	} {
		if r := cli(t, "", tc.args...); r.code != 2 || !strings.Contains(r.stderr, tc.mention) {
			t.Errorf("%v: exit %d %q; want 2 mentioning %q", tc.args, r.code, r.stderr, tc.mention)
		}
	}
	r := cli(t, "", "seq", "list", "--json")
	var rows []struct {
		Tag         string `json:"tag"`
		MaxID       string `json:"max_id"`
		Step        int64  `json:"step"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("list: %v %s %s", err, r.stdout, r.stderr)
	}
	for _, row := range rows {
		if row.Tag == "orders" && (row.MaxID != "1000" || row.Step != 50 || row.Description != "order numbers") {
			t.Fatalf("list: %+v; want orders at max_id 1000, step 50, described", row)
		}
	}
	if r := cli(t, "", "seq", "list"); !strings.Contains(r.stdout, "orders") || !strings.Contains(r.stdout, "order numbers") {
		t.Fatalf("list: %s", r.stdout)
	}

	srv := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--machine", "1023")
	code, body := httpGet(t, "http://"+srv.rest+"/api/segment/get/orders")
	if code != 200 || body != "1000" {
		t.Fatalf("Leaf API: %d %q; want 1000 (Leaf: a tag created with max_id N issues N first)", code, body)
	}
	code, body = httpGet(t, "http://"+srv.rest+"/v1/seq/leaf-segment-test?count=3")
	if code != 200 || !strings.Contains(body, `"ids":["1","2","3"]`) {
		t.Fatalf("/v1/seq: %d %s", code, body)
	}
	// A tag created while the server runs is served (looked up on a miss).
	if r := cli(t, "", "seq", "create", "late", "--start", "7", "--step", "10", "--json"); r.code != 0 ||
		r.stdout != `{"tag":"late","max_id":"7","step":10}`+"\n" {
		t.Fatalf("create late --json: %q %s", r.stdout, r.stderr)
	}
	if code, body := httpGet(t, "http://"+srv.rest+"/v1/seq/late"); code != 200 || !strings.Contains(body, `"id":"7"`) {
		t.Fatalf("a tag created while running: %d %s", code, body)
	}
	code, body = httpGet(t, "http://"+srv.rest+"/v1/seq/nope")
	if code != 404 || !strings.Contains(body, `not_found`) || !strings.Contains(body, `unknown tag \"nope\"`) {
		t.Fatalf("/v1/seq/nope: %d %s", code, body)
	}
	if code, body := httpGet(t, "http://"+srv.rest+"/readyz"); code != 200 || !strings.Contains(body, `"segment":"ok"`) {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	code, body = httpGet(t, "http://"+srv.rest+"/metrics")
	if code != 200 || !strings.Contains(body, `vesta_segment_issued_total{tag="orders"} 1`) ||
		!strings.Contains(body, `vesta_segment_store_seconds_count{op="next"}`) {
		t.Fatalf("/metrics:\n%s", grepLines(body, "vesta_segment"))
	}
	if r := srv.stop(); r.code != 0 || !strings.Contains(r.stderr, "segment: sequences on") {
		t.Fatalf("stop: %d %s", r.code, r.stderr)
	}

	// A preloaded tag missing from the store stops start-up.
	t.Setenv("VESTA_SEGMENT_PRELOAD", "orders,missing")
	r = cli(t, "", "serve", "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--machine", "1023")
	if r.code == 0 || !strings.Contains(r.stderr, "missing") {
		t.Fatalf("serve with a missing preloaded tag: %d %s", r.code, r.stderr)
	}
	// Without a store, seq is a usage error saying so.
	t.Setenv("VESTA_SEGMENT_STORE", "")
	if r := cli(t, "", "seq", "list"); r.code != 2 || !strings.Contains(r.stderr, "segment.store") {
		t.Fatalf("seq list without a store: %d %s", r.code, r.stderr)
	}
}

// TestSeqListEscapes: a description from the store holding terminal
// escapes (a title change, a screen clear, C1 CSI, a bidi override,
// invalid UTF-8) is printed escaped, in the table and in JSON, which still
// reads back as the stored text.
func TestSeqListEscapes(t *testing.T) {
	rs := redistest.Start(t)
	t.Setenv("VESTA_SEGMENT_STORE", "redis")
	t.Setenv("VESTA_SEGMENT_REDIS_ADDRS", rs.Addr())
	const desc = "\x1b]0;owned\a\x1b[2Jred\u009b31m \u202egnp.exe\x7f\xff\ttab"
	if r := cli(t, "", "seq", "create", "esc", "--step", "5", "--desc", desc); r.code != 0 {
		t.Fatalf("create: %d %s", r.code, r.stderr)
	}
	raw := func(out string) bool {
		return strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && !unicode.IsPrint(r) })
	}
	r := cli(t, "", "seq", "list")
	if r.code != 0 || raw(r.stdout) || !strings.Contains(r.stdout, `\x1b]0;owned\a\x1b[2Jred\u009b31m \u202egnp.exe\x7f\xff\ttab`) {
		t.Fatalf("list: %d %q; want the description escaped", r.code, r.stdout)
	}
	r = cli(t, "", "seq", "list", "--json")
	var rows []struct{ Description string }
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || raw(r.stdout) ||
		rows[0].Description != strings.ToValidUTF8(desc, "\ufffd") {
		t.Fatalf("list --json: %v %q; want the description escaped as JSON", err, r.stdout)
	}
}
