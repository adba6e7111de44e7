package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
)

// write writes content to path, creating its directory.
func write(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// printed is `config print --json`.
type printed struct {
	File     string         `json:"file"`
	Settings []conf.Setting `json:"settings"`
}

func configPrint(tb testing.TB, args ...string) (printed, result) {
	tb.Helper()
	r := cli(tb, "", append([]string{"config", "print", "--json"}, args...)...)
	var p printed
	if r.code == 0 {
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
			tb.Fatalf("config print --json: %v: %s", err, r.stdout)
		}
	}
	return p, r
}

func (p printed) get(key string) conf.Setting {
	for _, s := range p.Settings {
		if s.Key == key {
			return s
		}
	}
	return conf.Setting{}
}

// With no file named, the first of ./vesta.yaml,
// $XDG_CONFIG_HOME/vesta/vesta.yaml and /etc/vesta/vesta.yaml is read;
// --config FILE or VESTA_CONFIG names one, and an empty --config or
// VESTA_CONFIG reads none.
func TestConfigDiscovery(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	xdg := filepath.Join(dir, "xdg")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	files := map[string]string{
		"cwd":   "./vesta.yaml",
		"xdg":   filepath.Join(xdg, "vesta", "vesta.yaml"),
		"etc":   etcConfig,
		"named": filepath.Join(dir, "named.yaml"),
	}
	levels := map[string]string{"cwd": "debug", "xdg": "warn", "etc": "error", "named": "debug"}
	for _, tc := range []struct {
		name    string
		present []string
		args    []string
		env     string // VESTA_CONFIG's value; "-" unset
		want    string // the file read: a key of files, or "" for none
	}{
		{"all three: ./vesta.yaml", []string{"cwd", "xdg", "etc"}, nil, "-", "cwd"},
		{"XDG before /etc", []string{"xdg", "etc"}, nil, "-", "xdg"},
		{"/etc last", []string{"etc"}, nil, "-", "etc"},
		{"none", nil, nil, "-", ""},
		{"--config names one", []string{"cwd", "named"}, []string{"--config", files["named"]}, "-", "named"},
		{"VESTA_CONFIG names one", []string{"cwd", "named"}, nil, files["named"], "named"},
		{"--config over VESTA_CONFIG", []string{"cwd", "named"}, []string{"--config", files["named"]}, files["cwd"], "named"},
		{"--config '' reads none", []string{"cwd", "xdg", "etc"}, []string{"--config", ""}, "-", ""},
		{"--config '' over VESTA_CONFIG", []string{"named"}, []string{"--config", ""}, files["named"], ""},
		{"VESTA_CONFIG='' reads none", []string{"cwd", "xdg", "etc"}, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, path := range files {
				os.Remove(path)
				for _, p := range tc.present {
					if p == name {
						write(t, path, "log: {level: "+levels[name]+"}\n")
					}
				}
			}
			t.Cleanup(func() { os.Remove(etcConfig) })
			if tc.env != "-" {
				t.Setenv(conf.EnvFile, tc.env)
			}
			p, r := configPrint(t, tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			wantLevel, wantSource := "info", "default"
			if tc.want != "" {
				wantLevel, wantSource = levels[tc.want], "file "+files[tc.want]
			}
			if p.File != files[tc.want] || p.get("log.level") != (conf.Setting{Key: "log.level", Value: wantLevel, Source: wantSource}) {
				t.Errorf("file %q, log.level %+v; want %q, %s from %s", p.File, p.get("log.level"), files[tc.want], wantLevel, wantSource)
			}
		})
	}
}

// A file found on the search path never changes the machine ID a user
// passed: the flag wins over its machine.id, and its providers, which
// would not use the flag's ID, are refused, naming both.
func TestDiscoveredFileAndMachineFlag(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write(t, "vesta.yaml", "machine: {id: 7}\ntime_guard: {dir: \"\"}\n")
	r := cli(t, "", "gen", "--machine", "5", "-n", "2")
	codec, _ := core.NewCodec(core.Sorted, time.Time{})
	if ids := parseIDs(t, r.stdout); r.code != 0 || len(ids) != 2 || codec.Explain(ids[0]).Machine != 5 {
		t.Fatalf("gen --machine 5 over the file's 7: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	write(t, "vesta.yaml", "machine:\n  providers: [redis]\n  redis: {addrs: [\"127.0.0.1:1\"], embedded_range: 100-109, server_range: 1000-1009}\n")
	for _, args := range [][]string{{"gen", "--machine", "5"}, {"serve", "--machine", "1020"}, {"config", "check", "--machine", "1020"}} {
		r := cli(t, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "would not be used: machine.providers redis (file ./vesta.yaml)") ||
			!strings.Contains(r.stderr, "(flag --machine)") || strings.Contains(r.stderr, "vesta help") {
			t.Errorf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
}

// Every error names the flag, variable or file entry the user set.
func TestErrorsNameTheirSource(t *testing.T) {
	file := filepath.Join(t.TempDir(), "vesta.yaml")
	write(t, file, "machine: {id: 950}\n")
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"gen", "--machine", "950"}, "", "machine.id: 950 lies outside machine.embedded_range 0-923, where embedded issuers"},
		{[]string{"gen", "--machine", "950"}, "", "(flag --machine)"},
		{[]string{"gen"}, "VESTA_MACHINE_ID=950", "(env VESTA_MACHINE_ID)"},
		{[]string{"gen", "--config", file}, "", "(file " + file + ")"},
		{[]string{"serve", "--machine", "5"}, "", "machine.id: 5 lies outside machine.server_range 924-1023, where servers (vesta serve) take machine IDs"},
		{[]string{"serve", "--machine", "5"}, "", "(flag --machine)"},
		{[]string{"gen", "--servers", "127.0.0.1:1", "--machine", "950"}, "", "(flag --machine)"},
	} {
		t.Run(strings.Join(tc.args, " ")+" "+tc.env, func(t *testing.T) {
			if k, v, ok := strings.Cut(tc.env, "="); ok {
				t.Setenv(k, v)
			}
			r := cli(t, "", tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "Run 'vesta help'") {
				t.Errorf("exit %d, stderr %q; want 2 naming %q, without the usage hint", r.code, r.stderr, tc.want)
			}
		})
	}
}

// The usage hint ends usage errors (a bad flag, argument or command) only.
func TestUsageHint(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		hint bool
	}{
		{[]string{"gen", "--nope"}, 2, true},
		{[]string{"gen", "extra"}, 2, true},
		{[]string{"gen", "-n", "0"}, 2, true},
		{[]string{"gne"}, 2, true},
		{[]string{"config", "chek"}, 2, true},
		{[]string{"make", "--seq", "1"}, 2, true},
		{[]string{"gen"}, 2, false},                          // no machine ID: configuration
		{[]string{"gen", "--machine", "1024"}, 2, false},     // a flag's value out of range
		{[]string{"serve", "--log-level", "loud"}, 2, false}, // a key's value
		{[]string{"explain", "nope"}, 1, false},              // run time
		{[]string{"status", "--url", "http://127.0.0.1:1"}, 1, false},
	} {
		r := cli(t, "", tc.args...)
		if hint := strings.Contains(r.stderr, "Run 'vesta help' for usage."); r.code != tc.code || hint != tc.hint {
			t.Errorf("%v: exit %d, hint %v (%q); want %d, %v", tc.args, r.code, hint, r.stderr, tc.code, tc.hint)
		}
	}
}

func TestFlagSuggestions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = no suggestion
	}{
		{[]string{"gen", "--machin", "5"}, "unknown flag: --machin; did you mean --machine?"},
		{[]string{"gen", "-machine", "5"}, "; did you mean --machine?"},
		{[]string{"serve", "--rest-listn", ":0"}, "did you mean --rest-listen?"},
		{[]string{"explain", "--jsn", "1"}, "did you mean --json?"},
		{[]string{"status", "--tokn-file", "x"}, "did you mean --token-file?"},
		{[]string{"gen", "--zzzzzzzz"}, ""},
		{[]string{"gne"}, `unknown command "gne" for "vesta"; did you mean gen?`},
	} {
		r := cli(t, "", tc.args...)
		if r.code != 2 || (tc.want == "" && strings.Contains(r.stderr, "did you mean")) || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d %q; want 2 with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	write(t, good, "machine: {id: 1000}\n")
	typo := filepath.Join(dir, "typo.yaml")
	write(t, typo, "machine: {idd: 1000}\nlog: {level: loud}\n")
	tls := filepath.Join(dir, "tls.yaml")
	write(t, tls, "machine: {id: 1000}\ncentral: {tls: {cert: "+dir+"/nope.pem, key: "+dir+"/nope-key.pem}}\n")
	for _, tc := range []struct {
		args []string
		env  string
		code int
		want []string // in stdout (exit 0) or stderr
	}{
		{[]string{"--machine", "1000"}, "", 0, []string{"configuration ok (file none)"}},
		{[]string{"--config", good}, "", 0, []string{"configuration ok (file " + good + ")"}},
		{nil, "", 2, []string{"machine.id: unset"}},
		{[]string{"--machine", "5"}, "", 2, []string{"machine.id: 5 lies outside machine.server_range", "(flag --machine)"}},
		{nil, "VESTA_MACHINE_ID=5", 2, []string{"(env VESTA_MACHINE_ID)"}},
		{[]string{"--config", typo}, "", 2, []string{"machine.idd: unknown key; did you mean machine.id?", "log.level: \"loud\""}},
		{[]string{"--config", tls}, "", 2, []string{"central.tls.cert/central.tls.key"}},
		{[]string{"--machine", "1000", "--central-listen", "", "--rest-listen", ""}, "", 2, []string{"nothing to serve"}},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, "", 2, []string{"config file", "missing.yaml"}},
	} {
		t.Run(strings.Join(tc.args, " ")+tc.env, func(t *testing.T) {
			if k, v, ok := strings.Cut(tc.env, "="); ok {
				t.Setenv(k, v)
			}
			r := cli(t, "", append([]string{"config", "check"}, tc.args...)...)
			out := r.stdout
			if tc.code != 0 {
				out = r.stderr
			}
			if r.code != tc.code {
				t.Errorf("exit %d (%s%s); want %d", r.code, r.stdout, r.stderr, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q lacks %q", out, w)
				}
			}
		})
	}
	r := cli(t, "", "config", "check", "--json", "--machine", "5", "--log-level", "loud")
	var v struct {
		OK     bool   `json:"ok"`
		File   string `json:"file"`
		Errors []struct{ Key, Message, Source string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 2 || v.OK || len(v.Errors) != 1 ||
		v.Errors[0].Key != "log.level" || v.Errors[0].Source != "flag --log-level" {
		t.Errorf("check --json: exit %d %v %s", r.code, err, r.stdout)
	}
	r = cli(t, "", "config", "check", "--json", "--machine", "5")
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 2 || len(v.Errors) != 1 || v.Errors[0].Key != "machine.id" {
		t.Errorf("check --json: exit %d %v %s", r.code, err, r.stdout)
	}
	if r := cli(t, "", "config", "check", "--json", "--machine", "1000"); r.code != 0 || r.stdout != `{"ok":true,"file":"","errors":[]}`+"\n" {
		t.Errorf("check --json: exit %d %q", r.code, r.stdout)
	}
}

// config print: every key, its value and its source; secrets hidden.
func TestConfigPrint(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	write(t, token, "s3cret-token-of-32-bytes-or-more-x\n")
	file := filepath.Join(dir, "vesta.yaml")
	write(t, file, "rest: {token_file: "+token+"}\nsegment: {store: mysql, dsn: \"leaf:hunter2@tcp(db:3306)/leaf\"}\nmachine: {redis: {password: redis-pw-secret}}\n")
	t.Setenv("VESTA_ID_LAYOUT", "vesta")
	args := []string{"--config", file, "--machine", "1000"}
	p, r := configPrint(t, args...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if p.File != file || len(p.Settings) != len(conf.Loaded{}.Settings()) {
		t.Errorf("file %q, %d settings; want %q, every key", p.File, len(p.Settings), file)
	}
	for _, want := range []conf.Setting{
		{Key: "id.layout", Value: "vesta", Source: "env VESTA_ID_LAYOUT"},
		{Key: "machine.id", Value: "1000", Source: "flag --machine"},
		{Key: "rest.token", Value: "[redacted]", Source: "rest.token_file " + token},
		{Key: "machine.redis.password", Value: "[redacted]", Source: "file " + file},
		{Key: "segment.dsn", Value: "leaf:[redacted]@tcp(db:3306)/leaf", Source: "file " + file},
		{Key: "time_guard.window", Value: "3s", Source: "default"},
	} {
		if got := p.get(want.Key); got != want {
			t.Errorf("%+v; want %+v", got, want)
		}
	}
	text := cli(t, "", append([]string{"config", "print"}, args...)...)
	if text.code != 0 || !regexp.MustCompile(`(?m)^machine\.id +1000 +flag --machine$`).MatchString(text.stdout) ||
		!strings.Contains(text.stdout, "# file: "+file) {
		t.Errorf("config print: exit %d:\n%s%s", text.code, text.stdout, text.stderr)
	}
	for _, out := range []string{r.stdout, text.stdout} {
		for _, secret := range []string{"s3cret", "hunter2", "redis-pw-secret"} {
			if strings.Contains(out, secret) {
				t.Errorf("config print shows %q", secret)
			}
		}
	}
}

// --json on every command that prints data.
func TestJSONOutput(t *testing.T) {
	r := cli(t, "", "gen", "-n", "3", "--machine", "4", "--data-dir", "", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	codec, _ := core.NewCodec(core.Sorted, time.Time{})
	for _, l := range lines {
		var v struct{ ID string }
		if json.Unmarshal([]byte(l), &v) != nil {
			t.Fatalf("gen --json line %q", l)
		}
		if id, err := core.ParseID(v.ID); err != nil || codec.Explain(id).Machine != 4 {
			t.Fatalf("gen --json line %q: %v", l, err)
		}
	}
	if r.code != 0 || len(lines) != 3 {
		t.Fatalf("gen --json: exit %d %q %s", r.code, r.stdout, r.stderr)
	}

	r = cli(t, "", "make", "--layout", "vesta", "--time", "284025600", "--seq", "5", "--machine", "1022", "--method", "2", "--json")
	var made map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &made); err != nil || made["id"] != "2610813175020394494" || made["method_name"] != "rest" || made["machine"] != 1022.0 {
		t.Errorf("make --json: %v %s %s", err, r.stdout, r.stderr)
	}
	if e := cli(t, "", "explain", "--layout", "vesta", "--json", "2610813175020394494"); e.stdout != r.stdout {
		t.Errorf("make --json %q differs from explain --json %q", r.stdout, e.stdout)
	}

	r = cli(t, "", "version", "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v["version"] == "" || !strings.HasPrefix(v["go_version"].(string), "go1.") || v["os"] == "" || v["arch"] == "" {
		t.Errorf("version --json: %v %s", err, r.stdout)
	}
}

// gen prints IDs only: no log line by default, where its time guard is
// with -v; the guard is in $XDG_STATE_HOME/vesta unless configured, and
// an older ./vesta-data holding marks is kept, never silently left.
func TestGenQuietAndState(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	state := filepath.Join(dir, "state")
	t.Setenv("XDG_STATE_HOME", state)
	r := cli(t, "", "gen", "--machine", "6")
	if r.code != 0 || r.stderr != "" || len(parseIDs(t, r.stdout)) != 1 {
		t.Fatalf("gen: exit %d, stderr %q; want an ID and nothing else", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "vesta", "machine-6.json")); err != nil {
		t.Errorf("the mark is not in $XDG_STATE_HOME/vesta: %v", err)
	}
	if _, err := os.Stat("vesta-data"); err == nil {
		t.Error("gen created ./vesta-data")
	}
	r = cli(t, "", "gen", "--machine", "6", "-v")
	if r.code != 0 || !strings.Contains(r.stderr, "time_guard.dir="+filepath.Join(state, "vesta")) || !strings.Contains(r.stderr, "config=none") {
		t.Errorf("gen -v: stderr %q; want the time guard directory and the config file", r.stderr)
	}
	if help := cli(t, "", "gen", "--help"); !strings.Contains(help.stdout, filepath.Join(state, "vesta")) {
		t.Errorf("gen --help does not say where the time guard is:\n%s", help.stdout)
	}

	// An older default's ./vesta-data with marks, the state dir without: used, with a warning.
	other := t.TempDir()
	t.Chdir(other)
	first := cli(t, "", "gen", "--machine", "8", "--data-dir", "./vesta-data")
	r = cli(t, "", "gen", "--machine", "8")
	if r.code != 0 || !strings.Contains(r.stderr, "level=WARN") || !strings.Contains(r.stderr, "time_guard.dir=./vesta-data") {
		t.Fatalf("gen beside an older ./vesta-data: exit %d, stderr %q", r.code, r.stderr)
	}
	if a, b := parseIDs(t, first.stdout), parseIDs(t, r.stdout); b[0] <= a[0] {
		t.Errorf("the second run's %d is not above the first's %d: the guard was not kept", b[0], a[0])
	}
	// Both with marks: refused, naming both.
	cli(t, "", "gen", "--machine", "8", "--data-dir", filepath.Join(state, "vesta"))
	r = cli(t, "", "gen", "--machine", "8")
	if r.code != 2 || !strings.Contains(r.stderr, "time_guard.dir: unset, and both ./vesta-data") || !strings.Contains(r.stderr, filepath.Join(state, "vesta")) {
		t.Errorf("gen with marks in both: exit %d, stderr %q", r.code, r.stderr)
	}
	// Configured: the configuration's.
	t.Setenv("VESTA_TIME_GUARD_DIR", filepath.Join(other, "mine"))
	if r := cli(t, "", "gen", "--machine", "8"); r.code != 0 || r.stderr != "" {
		t.Errorf("gen with VESTA_TIME_GUARD_DIR: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(other, "mine", "machine-8.json")); err != nil {
		t.Error(err)
	}
}

// serve's start-up: one line saying the version, machine ID, provider,
// listeners and config file; the whole configuration at debug level only.
func TestServeStartupLine(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0", "--data-dir", dir, "--machine", "1000")
	r := srv.stop()
	var serving []string
	for line := range strings.Lines(r.stderr) {
		if strings.Contains(line, "msg=serving") {
			serving = append(serving, line)
		}
		if strings.Contains(line, "config.id.layout") || len(line) > 400 {
			t.Errorf("at info level: %s", line)
		}
	}
	if len(serving) != 1 {
		t.Fatalf("serving lines %q", serving)
	}
	for _, w := range []string{"version=", "machine=1000", "provider=static", "central=127.0.0.1:", "rest=127.0.0.1:", "metrics=off", "config=none"} {
		if !strings.Contains(serving[0], w) {
			t.Errorf("the start-up line lacks %q: %s", w, serving[0])
		}
	}
	srv = startServe(t, "--central-listen", "127.0.0.1:0", "--rest-listen", "", "--data-dir", dir, "--machine", "1000", "--log-level", "debug")
	if r := srv.stop(); !strings.Contains(r.stderr, "level=DEBUG msg=configuration") || !strings.Contains(r.stderr, "config.central.idle_timeout=5m0s") {
		t.Errorf("at debug level no configuration line:\n%s", r.stderr)
	}
}

// Durations print as text in both log formats (slog's JSON would write
// nanoseconds).
func TestLogDurations(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var b bytes.Buffer
		cfg := conf.DefaultConfig()
		cfg.Log.Format = format
		newLogger(cfg, &b, slog.LevelInfo).Info("m", "timeout", 1500*time.Millisecond, slog.Group("g", "ttl", 15*time.Second))
		if !strings.Contains(b.String(), "1.5s") || !strings.Contains(b.String(), "15s") || strings.Contains(b.String(), "1500000000") {
			t.Errorf("%s: %s", format, b.String())
		}
	}
}

// vesta status reads a running server's /v1/status.
func TestStatus(t *testing.T) {
	dir := t.TempDir()
	const token = "s3cret-token-of-32-bytes-or-more-status"
	tokenFile := filepath.Join(dir, "token")
	write(t, tokenFile, token+"\n")
	srv := startServe(t, "--central-listen", "", "--rest-listen", "127.0.0.1:0", "--data-dir", dir, "--machine", "1001",
		"--config", "")
	url := "http://" + srv.rest
	r := cli(t, "", "status", "--url", url)
	if r.code != 0 || !regexp.MustCompile(`(?m)^state +ready$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^machine +1001$`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^lease +static, none$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^clock +20\d\d-`).MatchString(r.stdout) {
		t.Errorf("status: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, "", "status", "--url", url+"/v1/status", "--json")
	var doc struct {
		Machine int    `json:"machine"`
		Ready   string `json:"ready"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || doc.Machine != 1001 || doc.Ready != "ok" {
		t.Errorf("status --json: %v exit %d %s", err, r.code, r.stdout)
	}

	t.Setenv("VESTA_REST_TOKEN", token)
	authed := startServe(t, "--central-listen", "", "--rest-listen", "127.0.0.1:0", "--data-dir", dir, "--machine", "1002")
	os.Unsetenv("VESTA_REST_TOKEN") // t.Setenv restores it at the end
	aurl := "http://" + authed.rest
	for _, tc := range []struct {
		name string
		args []string
		env  string
		code int
		want string
	}{
		{"no token", nil, "", 1, "401 Unauthorized"},
		{"--token-file", []string{"--token-file", tokenFile}, "", 0, "machine     1002"},
		{"VESTA_REST_TOKEN", nil, token, 0, "machine     1002"},
		{"--token", []string{"--token", token}, "", 0, "machine     1002"},
		{"--token over VESTA_REST_TOKEN", []string{"--token", token}, "wrong-token-wrong-token-wrong", 0, "machine     1002"},
		{"--token-file over VESTA_REST_TOKEN", []string{"--token-file", tokenFile}, "wrong-token-wrong-token-wrong", 0, "machine     1002"},
		{"a wrong token", []string{"--token", "wrong-token-wrong-token-wrong"}, "", 1, "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("VESTA_REST_TOKEN", tc.env)
			}
			r := cli(t, "", append([]string{"status", "--url", aurl}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Errorf("exit %d: %s%s; want %d with %q", r.code, r.stdout, r.stderr, tc.code, tc.want)
			}
		})
	}

	// Not ready: the summary says why, and the exit status is 1.
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"now":"2026-01-01T00:00:00Z","machine":1003,"ready":"fenced: the lease was lost","fenced":true,` +
			`"lease":{"provider":"redis","state":"fenced","renewal_in_ms":0,"deadline_in_ms":-1500,"error":"redis: down"},` +
			`"build":{"version":"v1.2.3","revision":"0123456789abcdef"},"started":"2026-01-01T00:00:00Z","uptime_s":125.5}`))
	}))
	defer fake.Close()
	r = cli(t, "", "status", "--url", fake.URL)
	for _, w := range []string{"fenced: the lease was lost", "redis, fenced, renewal in 0s, deadline in -1.5s: redis: down", "v1.2.3 (0123456789ab)", "2026-01-01T00:00:00Z, up 2m5s"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("not ready: stdout lacks %q:\n%s", w, r.stdout)
		}
	}
	if r.code != 1 || !strings.Contains(r.stderr, "not ready: fenced: the lease was lost") {
		t.Errorf("not ready: exit %d %s", r.code, r.stderr)
	}

	// Unreachable, and not a URL.
	if r := cli(t, "", "status", "--url", "http://"+nettest.DeadAddr(t)); r.code != 1 || !strings.Contains(r.stderr, "cannot be reached") {
		t.Errorf("unreachable: exit %d %s", r.code, r.stderr)
	}
	if r := cli(t, "", "status", "--url", "127.0.0.1:7080"); r.code != 2 || !strings.Contains(r.stderr, "--url") {
		t.Errorf("not a URL: exit %d %s", r.code, r.stderr)
	}
}
