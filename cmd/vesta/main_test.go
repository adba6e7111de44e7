package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/logtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer = logtest.Buffer

type result struct {
	code           int
	stdout, stderr string
}

// vesta runs one command line in-process.
func cli(tb testing.TB, stdin string, args ...string) result {
	tb.Helper()
	var out, errb syncBuffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func parseIDs(tb testing.TB, out string) []core.ID {
	tb.Helper()
	var ids []core.ID
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		id, err := core.ParseID(sc.Text())
		if err != nil {
			tb.Fatalf("line %q: %v", sc.Text(), err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestGen(t *testing.T) {
	dir := t.TempDir()
	n := 1_500_000
	if testkit.Short() {
		n = 100_000
	}
	start := time.Now()
	r := cli(t, "", "gen", "-n", strconv.Itoa(n), "--machine", "77", "--data-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	ids := parseIDs(t, r.stdout)
	if len(ids) != n {
		t.Fatalf("got %d IDs; want %d", len(ids), n)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ID %d at line %d is not above %d", ids[i], i+1, ids[i-1])
		}
	}
	codec, _ := core.NewCodec(core.Sorted, time.Time{})
	for _, id := range []core.ID{ids[0], ids[len(ids)-1]} {
		e := codec.Explain(id)
		if e.Method != core.Embedded || e.Machine != 77 || e.Type != core.MaxPeak {
			t.Fatalf("%d: %+v", id, e)
		}
		// Max-peak holds 2^20 IDs a second and may borrow 1s ahead.
		if e.Instant.Before(start.Truncate(time.Second)) || e.Instant.After(time.Now().Add(2*time.Second)) {
			t.Fatalf("%d decodes to %s, not now", id, e.Instant)
		}
	}
	// A second run on the same machine ID starts above the first (the
	// time guard's final mark), even within the same second.
	r2 := cli(t, "", "gen", "-n", "1000", "--machine", "77", "--data-dir", dir)
	if r2.code != 0 {
		t.Fatal(r2.stderr)
	}
	if again := parseIDs(t, r2.stdout); again[0] <= ids[len(ids)-1] {
		t.Fatalf("second run starts at %d, not above the first run's %d", again[0], ids[len(ids)-1])
	}
	if _, err := os.Stat(filepath.Join(dir, "machine-77.json")); err != nil {
		t.Fatal(err)
	}
}

func TestGenLayouts(t *testing.T) {
	r := cli(t, "", "gen", "-n", "3", "--machine", "3", "--layout", "vesta", "--type", "min-granularity", "--data-dir", "")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	codec, _ := core.NewCodec(core.Vesta, time.Time{})
	for _, id := range parseIDs(t, r.stdout) {
		if e := codec.Explain(id); e.Type != core.MinGranularity || time.Since(e.Instant).Abs() > 2*time.Second {
			t.Fatalf("%d: %+v", id, e)
		}
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"gen", "-n", "0"}, `-n "0"; want an integer 1-`},
		{[]string{"gen", "-n", "-1"}, `-n "-1"; want an integer 1-`},
		{[]string{"gen", "-n", "lots"}, `-n "lots"`},
		{[]string{"gen", "--machine", "1024"}, "machine.id: 1024; want 0-1023 (flag --machine)"},
		{[]string{"gen", "--machine", "x"}, `invalid argument "x" for "--machine" flag`},
		{[]string{"gen", "--machine", "924"}, "machine.id: 924 lies outside machine.embedded_range 0-923"},
		{[]string{"gen", "--servers", "nohost", "--machine", "5"}, "client.servers"},
		{[]string{"gen", "--machine", "1", "--layout", "snowflake"}, `id.layout: core: unknown name: layout "snowflake"; want sorted, vesta or leaf (flag --layout)`},
		{[]string{"gen", "--type", "2"}, `id.type: core: unknown name: type "2"; want max-peak, min-granularity, 0 or 1 (flag --type)`},
		{[]string{"gen", "--epoch", "yesterday"}, `id.epoch: "yesterday"; want an RFC 3339 instant`},
		{[]string{"gen", "--epoch", "1900-01-01T00:00:00Z"}, "id.epoch: Epoch: core: invalid config: epoch 1900-01-01T00:00:00Z outside 1970-01-01T00:00:00Z"},
		{[]string{"gen", "extra"}, "unknown command"},
		{[]string{"gen", "--nope"}, "unknown flag: --nope"},
		{[]string{"make", "--seq", "1"}, "--time is required"},
		{[]string{"make", "--time", "1"}, "--seq is required"},
		{[]string{"make", "--time", "1", "--seq", "1048576"}, `--seq "1048576"; want an unsigned integer 0-1048575`},
		{[]string{"make", "--time", "1", "--seq", "1024", "--type", "1"}, "core: seq 1024 out of range 0-1023"},
		{[]string{"make", "--time", "1073741824", "--seq", "1"}, "core: time 1073741824 out of range 0-1073741823"},
		{[]string{"make", "--time", "1", "--seq", "1", "--machine", "1024"}, `--machine "1024"; want an unsigned integer 0-1023`},
		{[]string{"make", "--time", "1", "--seq", "1", "--method", "4"}, `--method: core: unknown name: method "4"`},
		{[]string{"make", "--time", "1", "--seq", "1", "--version", "2"}, `--version "2"; want an unsigned integer 0-1`},
		{[]string{"make", "--time", "-3", "--seq", "1"}, `--time "-3"`},
		{[]string{"make", "--time", "2020-01-01T00:00:00Z", "--seq", "1"}, "--time: core: clock is before the epoch"},
		{[]string{"explain", "--layout", "x", "1"}, "--layout"},
		{[]string{"make", "--layout", "leaf", "--time", "1", "--seq", "4096"}, "core: seq 4096 out of range 0-4095"},
		{[]string{"make", "--layout", "leaf", "--time", "1", "--seq", "1", "--method", "rest"}, "--method: the leaf layout has no method bits"},
		{[]string{"make", "--layout", "leaf", "--time", "1", "--seq", "1", "--type", "max-peak"}, "the leaf layout counts milliseconds only"},
		{[]string{"make", "--layout", "leaf", "--time", "2199023255552", "--seq", "1"}, `--time "2199023255552"; want an unsigned integer 0-2199023255551`},
		{[]string{"explain", "--layout", "leaf", "--epoch", "2025-01-01T00:00:00Z", "1"}, "--epoch: core: invalid config: epoch 2025-01-01T00:00:00Z: the leaf layout counts from Leaf's own epoch"},
		{[]string{"gen", "--machine", "1", "--layout", "leaf", "--type", "max-peak"}, "id.type: max-peak; the leaf layout (id.layout) counts milliseconds only"},
		{[]string{"serve", "--machine", "5"}, "machine.id"},
		{[]string{"serve"}, "machine.id: unset, and machine.providers lists static: there is no default machine ID"},
		{[]string{"serve", "--rest-listen", ""}, "--machine or VESTA_MACHINE_ID"},
		{[]string{"gen"}, "machine.id: unset"},
		{[]string{"gen", "--servers", "127.0.0.1:1", "--data-dir", ""}, "machine.id: unset"},
		{[]string{"serve", "--log-level", "loud"}, "log.level"},
		{[]string{"serve", "--config", "/nonexistent/vesta.yaml"}, "config file"},
		{[]string{"serve", "--central-listen", "", "--rest-listen", ""}, "nothing to serve"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, "", tc.args...)
			if r.code != 2 {
				t.Errorf("exit %d; want 2 (usage)", r.code)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q lacks %q", r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q on error", r.stdout)
			}
		})
	}
}

func TestMakeAndExplainVesta(t *testing.T) {
	for _, tc := range []struct {
		args []string
		id   string
	}{
		{[]string{"--time", "284025600", "--seq", "5", "--machine", "1022", "--method", "2"}, "2610813175020394494"},
		{[]string{"--time", "284025600000", "--seq", "5", "--machine", "1022", "--method", "rest", "--type", "min-granularity"}, "7215351455186687998"},
		{[]string{"--time", "2024-01-01T00:00:00Z", "--seq", "5", "--machine", "1022", "--method", "2"}, "2610813175020394494"},
		{[]string{"--time", "1073741823", "--seq", "1048575", "--machine", "1023", "--method", "3", "--version", "1"}, "13835058055282163711"},
	} {
		r := cli(t, "", append([]string{"make", "--layout", "vesta"}, tc.args...)...)
		if r.code != 0 || r.stdout != tc.id+"\n" {
			t.Errorf("make %v = %q (exit %d, %s); want %s", tc.args, r.stdout, r.code, r.stderr, tc.id)
		}
	}
	r := cli(t, "", "explain", "--layout", "vesta", "2610813175020394494")
	want := "2610813175020394494 version=0 type=0 (max-peak) method=2 (rest) machine=1022 time=284025600 seq=5 timestamp=2024-01-01T00:00:00Z\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("explain = %q (%s); want %q", r.stdout, r.stderr, want)
	}
	r = cli(t, "", "explain", "--layout", "vesta", "--json", "7215351455186687998")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(r.stdout, err)
	}
	wantJSON := map[string]any{"id": "7215351455186687998", "version": 0.0, "type": 1.0, "type_name": "min-granularity",
		"method": 2.0, "method_name": "rest", "time": 284025600000.0, "seq": 5.0, "machine": 1022.0, "timestamp": "2024-01-01T00:00:00.000Z"}
	for k, v := range wantJSON {
		if got[k] != v {
			t.Errorf("explain --json %s = %v; want %v", k, got[k], v)
		}
	}
	if len(got) != len(wantJSON) {
		t.Errorf("explain --json has keys %v", got)
	}
}

// make -> explain with Leaf's fields: the IDs are Leaf's formula,
// ((ms - 1288834974657) << 22) | (worker << 12) | seq, as in Leaf's
// SnowflakeIDGenImpl (leaf-core/src/main/java/com/sankuai/inf/leaf/
// snowflake/SnowflakeIDGenImpl.java), and explain reads them back without
// inventing a method.
func TestMakeAndExplainLeaf(t *testing.T) {
	for _, tc := range []struct {
		time, machine, seq string
		id, explained      string
	}{
		{"0", "0", "0", "0", "0 layout=leaf time=0 worker=0 seq=0 method=unknown timestamp=2010-11-04T01:42:54.657Z"},
		{"507277196879", "1023", "4095", "2127674775982571519",
			"2127674775982571519 layout=leaf time=507277196879 worker=1023 seq=4095 method=unknown timestamp=2026-12-01T08:02:51.536Z"},
		{"2024-01-01T00:00:00Z", "5", "99", "1741610183685066851",
			"1741610183685066851 layout=leaf time=415232225343 worker=5 seq=99 method=unknown timestamp=2024-01-01T00:00:00.000Z"},
		{"2199023255551", "1023", "4095", "9223372036854775807",
			"9223372036854775807 layout=leaf time=2199023255551 worker=1023 seq=4095 method=unknown timestamp=2080-07-10T17:30:30.208Z"},
	} {
		r := cli(t, "", "make", "--layout", "leaf", "--time", tc.time, "--machine", tc.machine, "--seq", tc.seq)
		if r.code != 0 || r.stdout != tc.id+"\n" {
			t.Errorf("make leaf %s/%s/%s = %q (exit %d, %s); want %s", tc.time, tc.machine, tc.seq, r.stdout, r.code, r.stderr, tc.id)
			continue
		}
		if r := cli(t, r.stdout, "explain", "--layout", "leaf"); r.code != 0 || r.stdout != tc.explained+"\n" {
			t.Errorf("explain leaf %s = %q (%s); want %q", tc.id, r.stdout, r.stderr, tc.explained)
		}
	}
	r := cli(t, "", "explain", "--layout", "leaf", "--json", "2127674775982571519")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(r.stdout, err)
	}
	if _, has := got["method"]; has || got["method_name"] != "unknown" || got["machine"] != 1023.0 || got["seq"] != 4095.0 ||
		got["time"] != 507277196879.0 || got["timestamp"] != "2026-12-01T08:02:51.536Z" {
		t.Errorf("explain --layout leaf --json = %v", got)
	}
}

func TestExplainStdinAndErrors(t *testing.T) {
	r := cli(t, "2610813175020394494\n\n  18446744073709551615 \nnope\n", "explain", "--layout", "vesta")
	if r.code != 1 || !strings.Contains(r.stderr, `id "nope" is not an unsigned decimal`) {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if lines := strings.Count(r.stdout, "\n"); lines != 2 {
		t.Fatalf("explained %d lines of stdin; want 2:\n%s", lines, r.stdout)
	}
	if r := cli(t, "", "explain", "18446744073709551616"); r.code != 1 || !strings.Contains(r.stderr, "does not fit in 64 bits") {
		t.Fatalf("overflow: %d %q", r.code, r.stderr)
	}
}

// gen | explain: what gen prints, explain decodes to now, in every layout.
func TestGenExplainRoundTrip(t *testing.T) {
	for _, layout := range []string{"sorted", "vesta", "leaf"} {
		t.Run(layout, func(t *testing.T) {
			gen := cli(t, "", "gen", "-n", "5", "--machine", "9", "--data-dir", "", "--layout", layout)
			r := cli(t, gen.stdout, "explain", "--json", "--layout", layout)
			sc := bufio.NewScanner(strings.NewReader(r.stdout))
			n := 0
			for ; sc.Scan(); n++ {
				var e struct {
					Machine    int    `json:"machine"`
					Method     *int   `json:"method"`
					MethodName string `json:"method_name"`
					Timestamp  string `json:"timestamp"`
				}
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
					t.Fatal(err)
				}
				ts, _ := time.Parse(time.RFC3339, e.Timestamp)
				// A leaf ID records no method: explain says so.
				method := e.Method != nil && *e.Method == 0 && e.MethodName == "embedded"
				if layout == "leaf" {
					method = e.Method == nil && e.MethodName == "unknown"
				}
				if e.Machine != 9 || !method || time.Since(ts).Abs() > 3*time.Second {
					t.Fatalf("%s", sc.Text())
				}
			}
			if n != 5 {
				t.Fatalf("explained %d", n)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	r := cli(t, "", "version")
	if r.code != 0 || !regexp.MustCompile(`^vesta \S+.* go1\.\d+`).MatchString(r.stdout) {
		t.Fatalf("version: %q %q", r.stdout, r.stderr)
	}
}

// served is a `vesta serve` running in-process for one test.
type served struct {
	central, rest, metrics string // addresses it logged ("off" when off)
	stop                   func() result
}

// writeConfig writes a config file of serve in dir: yaml, then a
// time_guard section on dir/data. It returns the file's path.
func writeConfig(tb testing.TB, dir, yaml string) string {
	tb.Helper()
	path := filepath.Join(dir, "vesta.yaml")
	yaml += "time_guard:\n  dir: " + filepath.Join(dir, "data") + "\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// startServe runs `vesta serve` with args until the test ends, and returns
// the addresses it logged.
func startServe(tb testing.TB, args ...string) served {
	tb.Helper()
	srv, exited := tryServe(tb, args...)
	if exited != nil {
		tb.Fatalf("serve exited %d: %s", exited.code, exited.stderr)
	}
	return srv
}

// tryServe is startServe, returning what serve said instead of failing
// the test when it exits before serving.
func tryServe(tb testing.TB, args ...string) (served, *result) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), strings.NewReader(""), &out, &errb) }()
	var once sync.Once
	var res result
	stop := func() result {
		once.Do(func() {
			cancel()
			res = result{<-done, out.String(), errb.String()}
		})
		return res
	}
	tb.Cleanup(func() { stop() })
	srv, exited := awaitServing(tb, "serve", &errb, done)
	if exited != nil {
		r := stop()
		return served{}, &r
	}
	srv.stop = stop
	return srv, nil
}

// servingRe is serve's "serving" log line, with the addresses it serves on.
var servingRe = regexp.MustCompile(`msg=serving .*central=(\S+) rest=(\S+) metrics=(\S+)`)

// awaitServing waits until a serve's log holds its "serving" line, and
// returns the addresses of that line; or, when the serve ends first, what
// it ended with (left in done again for whoever waits on it next). what
// names the serve in the failure when neither comes within 30 s.
func awaitServing[T any](tb testing.TB, what string, log *syncBuffer, done chan T) (served, *T) {
	tb.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if m := servingRe.FindStringSubmatch(log.String()); m != nil {
			return served{central: m[1], rest: m[2], metrics: m[3]}, nil
		}
		select {
		case end := <-done:
			done <- end
			return served{}, &end
		case <-deadline:
			tb.Fatalf("%s did not start:\n%s", what, log.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// redisLeases sets the environment of vesta serve to lease server IDs
// 1000-1003 with a lease of ttl, from a Redis in service (a new one would
// cost each server's first claim a quarantine), and no time guard
// directory (the mark lives in Redis).
func redisLeases(t *testing.T, ttl string) *redistest.Server {
	rs := redistest.Start(t)
	rs.Established("vesta")
	t.Setenv("VESTA_MACHINE_PROVIDERS", "redis")
	t.Setenv("VESTA_MACHINE_REDIS_ADDRS", rs.Addr())
	t.Setenv("VESTA_MACHINE_SERVER_RANGE", "1000-1003")
	t.Setenv("VESTA_MACHINE_REDIS_LEASE_TTL", ttl)
	t.Setenv("VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW", "50ms")
	t.Setenv("VESTA_TIME_GUARD_DIR", "")
	return rs
}

// machineOf is the machine ID a served vesta reports on /v1/info.
func machineOf(t *testing.T, s served) int {
	t.Helper()
	var v struct{ Machine int }
	getJSON(t, s, "/v1/info", &v)
	return v.Machine
}

// getJSON asks a served vesta's REST listener for path and decodes the
// answer into v, failing the test unless it is a 200 with JSON.
func getJSON(tb testing.TB, s served, path string, v any) {
	tb.Helper()
	code, body := httpGet(tb, "http://"+s.rest+path)
	if code != 200 || json.Unmarshal([]byte(body), v) != nil {
		tb.Fatalf("%s %d %.200s", path, code, body)
	}
}

func httpGet(tb testing.TB, url string) (int, string) {
	tb.Helper()
	code, b, err := nettest.Get(http.DefaultClient, url)
	if err != nil {
		tb.Fatal(err)
	}
	return code, string(b)
}

func TestServe(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0",
		"--data-dir", dir, "--machine", "1000")
	centralAddr, restAddr, stop := srv.central, srv.rest, srv.stop
	code, body := httpGet(t, "http://"+restAddr+"/genid")
	if code != 200 {
		t.Fatalf("/genid %d %s", code, body)
	}
	restID, err := core.ParseID(body)
	if err != nil {
		t.Fatal(err)
	}
	// One MessagePack-RPC GenID call, as raw bytes: [0, 1, "Vesta.GenID", []].
	centralID := rawGenID(t, centralAddr)
	codec, _ := core.NewCodec(core.Sorted, time.Time{})
	for _, c := range []struct {
		id     core.ID
		method core.Method
	}{{restID, core.REST}, {centralID, core.Central}} {
		if e := codec.Explain(c.id); e.Machine != 1000 || e.Method != c.method {
			t.Fatalf("%d: %+v", c.id, e)
		}
	}
	if code, body := httpGet(t, "http://"+restAddr+"/metrics"); code != 200 ||
		!strings.Contains(body, `vesta_ids_issued_total{method="central"} 1`) || !strings.Contains(body, `vesta_ids_issued_total{method="rest"} 1`) ||
		!strings.Contains(body, `vesta_machine_id{range="server"} 1000`) {
		t.Fatalf("/metrics %d:\n%s", code, grepLines(body, "vesta_ids_issued|vesta_machine_id"))
	}
	r := stop()
	if r.code != 0 || !strings.Contains(r.stderr, "msg=stopped") {
		t.Fatalf("stop: exit %d\n%s", r.code, r.stderr)
	}
	// The final mark is just past the last ID issued.
	b, err := os.ReadFile(filepath.Join(dir, "machine-1000.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mark struct {
		Ms int64 `json:"mark_unix_ms"`
	}
	json.Unmarshal(b, &mark)
	last := max(codec.Explain(restID).Time, codec.Explain(centralID).Time)
	if want := codec.Epoch().Add(time.Duration(last+1) * time.Second).UnixMilli(); mark.Ms != want {
		t.Fatalf("final mark %d; want %d", mark.Ms, want)
	}
}

func TestServeConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfgFile := writeConfig(t, dir, `
id:
  layout: vesta
  type: min-granularity
machine:
  id: 950
central:
  listen: ""
rest:
  listen: 127.0.0.1:0
  token: s3cret-token-of-32-bytes-or-more-of-serve
log:
  format: json
`)
	// JSON logs: the serving line has the addresses as fields.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfgFile}, strings.NewReader(""), io.Discard, &errb)
	}()
	var restAddr string
	for restAddr == "" {
		select {
		case code := <-done:
			t.Fatalf("exit %d: %s", code, errb.String())
		case <-time.After(5 * time.Millisecond):
		}
		for line := range strings.Lines(errb.String()) {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "serving" {
				if rec["central"] != "off" {
					t.Fatalf("central %v; want off", rec["central"])
				}
				restAddr, _ = rec["rest"].(string)
			}
		}
	}
	req, _ := http.NewRequest("GET", "http://"+restAddr+"/v1/id", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("without the token: %v %v", resp, err)
	}
	req.Header.Set("Authorization", "Bearer s3cret-token-of-32-bytes-or-more-of-serve")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("with the token: %v %v", resp, err)
	}
	var got struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	id, _ := core.ParseID(got.ID)
	codec, _ := core.NewCodec(core.Vesta, time.Time{})
	if e := codec.Explain(id); e.Machine != 950 || e.Type != core.MinGranularity || e.Method != core.REST {
		t.Fatalf("%s: %+v", got.ID, e)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(errb.String(), "s3cret-token-of-32-bytes-or-more-of-serve") {
		t.Fatalf("the token is in the log:\n%s", errb.String())
	}
}

func grepLines(s, pattern string) string {
	re := regexp.MustCompile(pattern)
	var keep []string
	for line := range strings.Lines(s) {
		if re.MatchString(line) {
			keep = append(keep, line)
		}
	}
	return strings.Join(slices.Clip(keep), "")
}

// rawGenID calls Vesta.GenID with hand-written MessagePack-RPC bytes and
// reads the answer [1, 1, nil, uint64] byte by byte.
func rawGenID(tb testing.TB, addr string) core.ID {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req := append([]byte{0x94, 0x00, 0x01, 0xab}, "Vesta.GenID"...)
	if _, err := c.Write(append(req, 0x90)); err != nil {
		tb.Fatal(err)
	}
	resp := make([]byte, 13)
	if _, err := io.ReadFull(c, resp); err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(resp[:5], []byte{0x94, 0x01, 0x01, 0xc0, 0xcf}) {
		tb.Fatalf("response % x", resp)
	}
	return core.ID(binary.BigEndian.Uint64(resp[5:]))
}

// gen --servers issues central IDs while a server answers and embedded IDs
// of --machine once none does.
func TestGenThroughServers(t *testing.T) {
	srv := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "",
		"--data-dir", t.TempDir(), "--machine", "990")
	centralAddr, stop := srv.central, srv.stop
	dir := t.TempDir()
	codec, _ := core.NewCodec(core.Sorted, time.Time{})
	// A loaded machine can make a healthy server miss the default 200ms
	// attempt timeout, and the call would rightly fall back; this part
	// checks the path through the server, not its speed.
	t.Setenv("VESTA_CLIENT_TIMEOUT", "10s")
	r := cli(t, "", "gen", "--servers", centralAddr, "-n", "20000", "--machine", "5", "--data-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	central := parseIDs(t, r.stdout)
	if len(central) != 20000 {
		t.Fatalf("got %d IDs", len(central))
	}
	for _, id := range central {
		if e := codec.Explain(id); e.Method != core.Central || e.Machine != 990 {
			t.Fatalf("with the server up: %d is %+v", id, e)
		}
	}
	if r := stop(); r.code != 0 {
		t.Fatalf("serve: %s", r.stderr)
	}
	start := time.Now()
	r = cli(t, "", "gen", "--servers", centralAddr, "-n", "1000", "--machine", "5", "--data-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	t.Logf("1000 IDs with every server down in %s", time.Since(start))
	fallback := parseIDs(t, r.stdout)
	for _, id := range fallback {
		if e := codec.Explain(id); e.Method != core.Embedded || e.Machine != 5 {
			t.Fatalf("with no server: %d is %+v", id, e)
		}
	}
	gentest.Unique(t, append(central, fallback...))
}

func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	pki := tlstest.New(t)
	f := pki.WriteFiles(t, dir)
	cfgFile := writeConfig(t, dir, `
central:
  listen: 127.0.0.1:0
  tls: {cert: `+f.ServerCert+`, key: `+f.ServerKey+`, client_ca: `+f.CA+`}
rest:
  listen: 127.0.0.1:0
  tls: {cert: `+f.ServerCert+`, key: `+f.ServerKey+`}
machine:
  id: 1001
`)
	srv := startServe(t, "--config", cfgFile)
	centralAddr, restAddr := srv.central, srv.rest

	// Central demands a client certificate signed by client_ca.
	if _, err := tlsGenID(centralAddr, &tls.Config{RootCAs: pki.Pool}); err == nil {
		t.Fatal("central answered a client without a certificate")
	}
	id, err := tlsGenID(centralAddr, &tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pki.Client}})
	if err != nil || id == 0 {
		t.Fatalf("mTLS GenID: %d, %v", id, err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.Pool}}}
	resp, err := hc.Get("https://" + restAddr + "/genid")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("https /genid: %v %v", resp, err)
	}
	resp.Body.Close()
}

// rest.tls.client_ca: the REST listener serves only clients with a
// certificate from its CAs, refusing the rest at the handshake (health
// routes included); the token is still required on top of it.
func TestServeRESTClientCA(t *testing.T) {
	dir := t.TempDir()
	pki, other := tlstest.New(t), tlstest.New(t)
	f := pki.WriteFiles(t, dir)
	cfgFile := writeConfig(t, dir, `
central:
  listen: ""
rest:
  listen: 127.0.0.1:0
  token: s3cret-token-of-32-bytes-or-more
  tls: {cert: `+f.ServerCert+`, key: `+f.ServerKey+`, client_ca: `+f.CA+`}
machine:
  id: 1001
`)
	srv := startServe(t, "--config", cfgFile)
	get := func(path, token string, certs ...tls.Certificate) (int, error) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.Pool, Certificates: certs}}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodGet, "https://"+srv.rest+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
		want  string // the TLS alert the server sends
	}{
		{"no client certificate", nil, "certificate required"},
		{"a certificate of another CA", []tls.Certificate{other.Client}, "unknown certificate authority"},
	} {
		for _, path := range []string{"/v1/id", "/healthz"} {
			if code, err := get(path, "s3cret-token-of-32-bytes-or-more", tc.certs...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, GET %s: %d, %v; want the handshake refused (%s)", tc.name, path, code, err, tc.want)
			}
		}
	}
	if code, err := get("/v1/id", "s3cret-token-of-32-bytes-or-more", pki.Client); err != nil || code != http.StatusOK {
		t.Errorf("a good client certificate and the token: %d, %v; want 200", code, err)
	}
	if code, err := get("/v1/id", "", pki.Client); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a good client certificate without the token: %d, %v; want 401", code, err)
	}
}

func TestServeTLSFilesMissing(t *testing.T) {
	dir := t.TempDir()
	cfgFile := writeConfig(t, dir, "central:\n  listen: 127.0.0.1:0\n  tls: {cert: "+dir+"/nope.pem, key: "+dir+"/nope-key.pem}\nrest:\n  listen: \"\"\n")
	r := cli(t, "", "serve", "--config", cfgFile, "--machine", "1000")
	if r.code == 0 || !strings.Contains(r.stderr, "central.tls.cert/central.tls.key") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

// tlsGenID makes one Vesta.GenID call over TLS.
func tlsGenID(addr string, cfg *tls.Config) (core.ID, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req := append([]byte{0x94, 0x00, 0x01, 0xab}, "Vesta.GenID"...)
	if _, err := c.Write(append(req, 0x90)); err != nil {
		return 0, err
	}
	resp := make([]byte, 13)
	if _, err := io.ReadFull(c, resp); err != nil {
		return 0, err
	}
	return core.ID(binary.BigEndian.Uint64(resp[5:])), nil
}

// A central-only deployment exports its metrics on metrics.listen.
func TestServeMetricsListener(t *testing.T) {
	t.Setenv("VESTA_METRICS_LISTEN", "127.0.0.1:0")
	srv := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "", "--data-dir", t.TempDir(), "--machine", "1000")
	if srv.rest != "off" || srv.metrics == "off" {
		t.Fatalf("rest %s, metrics %s", srv.rest, srv.metrics)
	}
	code, body := httpGet(t, "http://"+srv.metrics+"/metrics")
	if code != 200 || !strings.Contains(body, "vesta_ids_issued_total") || !strings.Contains(body, "vesta_rpc_connections") ||
		!strings.Contains(body, "vesta_build_info{") {
		t.Fatalf("/metrics %d:\n%s", code, grepLines(body, "^vesta_"))
	}
}

// Three servers on one Redis hold three distinct server-range IDs; one that
// stops releases its lease at once, and the next server takes that ID.
func TestServeRedisLeases(t *testing.T) {
	rs := redisLeases(t, "1s")
	args := []string{"--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0"}
	var servers []served
	seen := map[int]bool{}
	for range 3 {
		s := startServe(t, args...)
		m := machineOf(t, s)
		if m < 1000 || m > 1003 || seen[m] {
			t.Fatalf("machine %d (held: %v)", m, seen)
		}
		seen[m] = true
		servers = append(servers, s)
	}
	released := machineOf(t, servers[1])
	if r := servers[1].stop(); r.code != 0 {
		t.Fatalf("stop: %s", r.stderr)
	}
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rc.Close()
	lease, _ := redislease.Keys("vesta", core.MachineID(released))
	if n, err := rc.Exists(context.Background(), lease).Result(); err != nil || n != 0 {
		t.Fatalf("lease key %s after a graceful stop: exists=%d, %v", lease, n, err)
	}
	// Only 1000-1003: the fourth server gets the free one, the fifth the released one.
	fourth := startServe(t, args...)
	fifth := startServe(t, args...)
	got := map[int]bool{machineOf(t, fourth): true, machineOf(t, fifth): true}
	if !got[released] {
		t.Fatalf("the released machine %d was not taken again: %v", released, got)
	}
	r := cli(t, "", append([]string{"serve"}, args...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "1000-1003") {
		t.Fatalf("a fifth live server on a four-ID range: exit %d: %s", r.code, r.stderr)
	}
}
