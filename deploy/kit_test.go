package deploy_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/vesta-go/vesta/conf"
)

// shutdown is vesta serve's graceful-stop bound: stop timeouts must exceed it.
const shutdown = 10 * time.Second

// unitFile is a parsed systemd unit: section -> key -> values (a key may
// repeat).
type unitFile map[string]map[string][]string

// readFile returns the text of the file at path, failing the test when it
// cannot be read.
func readFile(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func parseUnit(tb testing.TB, path string) unitFile {
	tb.Helper()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(readFile(tb, path)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.HasSuffix(line, `\`) {
				tb.Fatalf("%s:%d: not a key=value line of a section: %q", path, n, line)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

func (u unitFile) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func TestSystemdUnit(t *testing.T) {
	// Parallel: mostly waiting on the build of vesta for the unit.
	t.Parallel()
	const path = "systemd/vesta.service"
	u := parseUnit(t, path)
	for _, kv := range [][3]string{
		{"Service", "DynamicUser", "yes"},
		{"Service", "StateDirectory", "vesta"},
		{"Service", "ProtectSystem", "strict"},
		{"Service", "ProtectHome", "yes"},
		{"Service", "NoNewPrivileges", "yes"},
		{"Service", "PrivateTmp", "yes"},
		{"Service", "PrivateDevices", "yes"},
		{"Service", "CapabilityBoundingSet", ""},
		{"Service", "KillSignal", "SIGTERM"},
		{"Install", "WantedBy", "multi-user.target"},
	} {
		if _, ok := u[kv[0]][kv[1]]; !ok || u.get(kv[0], kv[1]) != kv[2] {
			t.Errorf("[%s] %s=%q, want %q", kv[0], kv[1], u.get(kv[0], kv[1]), kv[2])
		}
	}
	exec0 := strings.Fields(u.get("Service", "ExecStart"))
	if len(exec0) < 2 || filepath.Base(exec0[0]) != "vesta" || exec0[1] != "serve" {
		t.Errorf("ExecStart %q: want vesta serve", u.get("Service", "ExecStart"))
	}
	// The time guard writes into the state directory, the only writable
	// place under ProtectSystem=strict.
	if !slices.Contains(u["Service"]["Environment"], "VESTA_TIME_GUARD_DIR=%S/vesta") {
		t.Errorf("Environment %q: VESTA_TIME_GUARD_DIR must be the StateDirectory (%%S/vesta)", u["Service"]["Environment"])
	}
	stop, err := time.ParseDuration(u.get("Service", "TimeoutStopSec"))
	if err != nil || stop <= shutdown {
		t.Errorf("TimeoutStopSec %q: want more than the %v shutdown", u.get("Service", "TimeoutStopSec"), shutdown)
	}

	// systemd's own parser, as docs/deploy.md says to run it from a clean
	// checkout: make systemd-verify (scripts/systemd-verify.sh builds vesta
	// for the unit's ExecStart and fails on any warning about the unit).
	need(t, "systemd-analyze")
	shell(t, docLine(t, docBlock(t, "make systemd-verify"), "make systemd-verify"))
}

// TestSystemdConfigPrivate: the documented install of /etc/vesta/vesta.yaml
// (docs/deploy.md and the unit's own comment) makes it 0600 or 0640, as it may
// hold secrets, and the unit passes it to its transient user as a
// credential, which a file only root can read needs.
func TestSystemdConfigPrivate(t *testing.T) {
	mode := regexp.MustCompile(`(?:^|\s)-m\s*(0[0-7]{3})\s`)
	for _, path := range []string{deployDoc, "systemd/vesta.service"} {
		n := 0
		for line := range strings.Lines(readFile(t, path)) {
			if !strings.Contains(line, "install ") || !strings.Contains(line, "/etc/vesta/") {
				continue
			}
			n++
			if m := mode.FindStringSubmatch(line); m == nil || (m[1] != "0600" && m[1] != "0640") {
				t.Errorf("%s: %q installs a file of /etc/vesta without mode 0600 or 0640", path, strings.TrimSpace(line))
			}
		}
		if n == 0 {
			t.Errorf("%s: no install command for /etc/vesta/vesta.yaml", path)
		}
	}
	u := parseUnit(t, "systemd/vesta.service")
	if !slices.Contains(u["Service"]["LoadCredential"], "vesta.yaml:/etc/vesta/vesta.yaml") {
		t.Errorf("LoadCredential %q: want vesta.yaml:/etc/vesta/vesta.yaml", u["Service"]["LoadCredential"])
	}
	if exec0 := u.get("Service", "ExecStart"); !strings.Contains(exec0, " --config %d/vesta.yaml") {
		t.Errorf("ExecStart %q: want --config %%d/vesta.yaml, the credential", exec0)
	}
}

// The verifier the test relies on, scripts/systemd-verify.sh, does catch
// mistakes in a unit, though systemd-analyze exits 0 on them.
func TestSystemdAnalyzeCatches(t *testing.T) {
	need(t, "systemd-analyze")
	unit := filepath.Join(t.TempDir(), "bad.service")
	if err := os.WriteFile(unit, []byte("[Service]\nExecStart=/bin/true\nProtectSystem=bogus\nNoNewPrivilege=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("../scripts/systemd-verify.sh", unit).CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("bogus")) || !bytes.Contains(out, []byte("NoNewPrivilege")) {
		t.Fatalf("scripts/systemd-verify.sh passed a bad value and an unknown key (%v):\n%s", err, out)
	}
}

func readYAML(tb testing.TB, path string) map[string]any {
	tb.Helper()
	m, err := yaml.Parser().Unmarshal([]byte(readFile(tb, path)))
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return m
}

func mapAt(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, _ := m[k].(map[string]any)
		m = next
	}
	return m
}

func list(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// loadConf loads a configuration as vesta serve would: the file, then the
// environment given (and nothing of this process's).
func loadConf(tb testing.TB, file string, env map[string]string) conf.Config {
	tb.Helper()
	environ := []string{}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		environ = append(environ, k+"="+env[k])
	}
	l, err := conf.Load(conf.Options{File: file, Env: environ})
	if err != nil {
		tb.Fatalf("%s with %v: %v", file, environ, err)
	}
	return l.Config
}

func TestCompose(t *testing.T) {
	c := readYAML(t, "compose.yaml")
	services := mapAt(c, "services")
	var servers []string
	for name, s := range services {
		if s, _ := s.(map[string]any); s["image"] == "localhost/vesta:latest" {
			servers = append(servers, name)
		}
	}
	slices.Sort(servers)
	if len(servers) != 3 {
		t.Fatalf("vesta servers %v, want 3", servers)
	}
	machineIDs := map[string]string{}
	hostPorts := map[string]string{}
	volumes := map[string]string{}
	token := composeToken(t, c)
	for _, name := range servers {
		s := mapAt(services, name)
		if s["read_only"] != true || s["user"] != "65532:65532" || !slices.Contains(list(s["cap_drop"]), "ALL") {
			t.Errorf("%s: want read_only, user 65532:65532, cap_drop ALL", name)
		}
		if g, err := time.ParseDuration(fmt.Sprint(s["stop_grace_period"])); err != nil || g <= shutdown {
			t.Errorf("%s: stop_grace_period %v, want more than %v", name, s["stop_grace_period"], shutdown)
		}
		env := map[string]string{}
		for k, v := range mapAt(s, "environment") {
			env[k] = fmt.Sprint(v)
		}
		// REST's token comes from the compose secret, read where compose
		// mounts it; here a stand-in file.
		if !slices.Contains(list(s["secrets"]), token.name) || env["VESTA_REST_TOKEN_FILE"] != token.target {
			t.Errorf("%s: VESTA_REST_TOKEN_FILE %q, secrets %v: want the token of secret %s (%s)",
				name, env["VESTA_REST_TOKEN_FILE"], list(s["secrets"]), token.name, token.target)
		}
		env["VESTA_REST_TOKEN_FILE"] = token.standIn
		// The server's whole configuration: the image's file plus this
		// environment, through vesta's own loader (unknown variables and bad
		// values fail).
		cfg := loadConf(t, "rootfs/etc/vesta/vesta.yaml", env)
		if cfg.REST.Token.Reveal() != token.value || !cfg.REST.MetricsAuth {
			t.Errorf("%s: rest.token from the secret %t, metrics_auth %t; want the secret's token, on /metrics too",
				name, cfg.REST.Token.Reveal() == token.value, cfg.REST.MetricsAuth)
		}
		switch {
		case slices.Equal(cfg.Machine.Providers, []string{"redis"}):
			addr := cfg.Machine.Redis.Addrs
			if len(addr) != 1 || !strings.HasPrefix(addr[0], "redis:") {
				t.Errorf("%s: machine.redis.addrs %v, want the redis service", name, addr)
			}
		case env["VESTA_MACHINE_ID"] != "":
			if other, dup := machineIDs[env["VESTA_MACHINE_ID"]]; dup {
				t.Errorf("%s and %s share machine ID %s", name, other, env["VESTA_MACHINE_ID"])
			}
			machineIDs[env["VESTA_MACHINE_ID"]] = name
		default:
			t.Errorf("%s: providers %v and no VESTA_MACHINE_ID: its machine ID is not chosen", name, cfg.Machine.Providers)
		}
		for _, p := range list(s["ports"]) {
			host := p[:strings.LastIndex(p, ":")]
			if other, dup := hostPorts[host]; dup {
				t.Errorf("%s and %s both publish %s", name, other, host)
			}
			hostPorts[host] = name
		}
		for _, v := range list(s["volumes"]) {
			src, dst, _ := strings.Cut(v, ":")
			if dst == cfg.TimeGuard.DataDir {
				if other, dup := volumes[src]; dup {
					t.Errorf("%s and %s share the time-guard volume %s", name, other, src)
				}
				volumes[src] = name
			}
		}
	}
	if len(volumes) != len(servers) {
		t.Errorf("time-guard volumes %v: want one per server", volumes)
	}

	redis := mapAt(services, "redis")
	cmd := strings.Join(list(redis["command"]), " ")
	if !strings.Contains(cmd, "--appendonly yes") || !(strings.Contains(cmd, "--appendfsync always") || strings.Contains(cmd, "--appendfsync everysec")) {
		t.Errorf("redis command %q: want AOF (--appendonly yes, --appendfsync always or everysec)", cmd)
	}
	if mapAt(redis, "healthcheck") == nil {
		t.Error("redis has no healthcheck: the servers' depends_on waits for it")
	}
	for _, name := range servers {
		if mapAt(services, name, "depends_on", "redis")["condition"] != "service_healthy" {
			t.Errorf("%s does not wait for a healthy redis", name)
		}
	}

	// Prometheus scrapes with the servers' token (metrics_auth).
	monitoring := mapAt(readYAML(t, "compose.monitoring.yaml"), "services")
	if !slices.Contains(list(mapAt(monitoring, "prometheus")["secrets"]), token.name) {
		t.Errorf("prometheus does not mount secret %s: it cannot scrape with the token", token.name)
	}
	for _, job := range scrapeJobs(t, "../monitoring/prometheus.yml") {
		if job["job_name"] != "vesta" {
			continue
		}
		if auth := mapAt(job, "authorization"); auth == nil || auth["credentials_file"] != token.target {
			t.Errorf("monitoring/prometheus.yml job vesta authorization %v: want credentials_file %s", auth, token.target)
		}
	}

	// No profiles: Debian's podman-compose (1.0.x) ignores them and would
	// start every service; monitoring is the second file.
	for _, svcs := range []map[string]any{services, monitoring} {
		for name := range svcs {
			if p := mapAt(svcs, name)["profiles"]; p != nil {
				t.Errorf("%s has profiles %v: podman-compose 1.0.x starts it anyway", name, p)
			}
		}
	}
	// The monitoring file mounts files that exist.
	for _, name := range []string{"prometheus", "grafana"} {
		s := mapAt(monitoring, name)
		if s == nil {
			t.Errorf("compose.monitoring.yaml has no service %s", name)
		}
		for _, v := range list(s["volumes"]) {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("%s mounts %s: %v", name, src, err)
				}
			}
		}
	}
}

// Every configuration the kit ships loads with vesta's own loader: an
// unknown key, a misspelt VESTA_* variable or a bad value fails here.
func TestShippedConfigurations(t *testing.T) {
	// The image's file, with the machine ID a user must add.
	img := loadConf(t, "rootfs/etc/vesta/vesta.yaml", map[string]string{"VESTA_MACHINE_ID": "950"})
	if img.TimeGuard.DataDir != "/var/lib/vesta" || img.Central.Listen != ":7070" || img.REST.Listen != ":7080" || img.Metrics.Listen != ":7090" {
		t.Errorf("image configuration: time_guard.dir %q, listeners %q %q %q", img.TimeGuard.DataDir, img.Central.Listen, img.REST.Listen, img.Metrics.Listen)
	}
	// It sets no machine ID: each container must be given one.
	raw := readYAML(t, "rootfs/etc/vesta/vesta.yaml")
	if m := mapAt(raw, "machine"); m != nil {
		t.Errorf("the image's configuration sets machine keys %v: every container would share them", slices.Collect(maps.Keys(m)))
	}

	// The Kubernetes ConfigMap's vesta.yaml, with the files of its
	// Secrets' mounts: the token, and TLS that conf reads as the servers
	// will (RPC requires client certificates, REST serves HTTPS).
	secrets := newKitSecrets(t)
	text := secrets.local(configMapData(t, "k8s/vesta.yaml", "vesta-config", "vesta.yaml"))
	file := filepath.Join(t.TempDir(), "vesta.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	k8s := loadConf(t, file, nil)
	if !slices.Equal(k8s.Machine.Providers, []string{"k8s"}) {
		t.Errorf("ConfigMap machine.providers %v", k8s.Machine.Providers)
	}
	if k8s.REST.Token.Reveal() != secrets.token || !k8s.REST.MetricsAuth {
		t.Errorf("ConfigMap: rest.token from the Secret %t, metrics_auth %t; want the Secret's token on /metrics too",
			k8s.REST.Token.Reveal() == secrets.token, k8s.REST.MetricsAuth)
	}
	if cc, err := k8s.CentralConfig(); err != nil || cc.TLS == nil || cc.TLS.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("ConfigMap: RPC is not mutual TLS: %v", err)
	}
	if rc, err := k8s.RESTConfig(); err != nil || rc.TLS == nil || rc.TLS.ClientAuth != tls.NoClientCert {
		t.Errorf("ConfigMap: REST is not HTTPS without client certificates (the kubelet's probes have none): %v", err)
	}
	// Its keys are vesta.example.yaml's (conf.Load refused unknown ones);
	// report the example's keys it leaves at their defaults.
	example := leafKeys(readYAML(t, "../vesta.example.yaml"), "")
	have := leafKeys(readYAML(t, file), "")
	for _, k := range example {
		if !slices.Contains(have, k) && !strings.HasPrefix(k, "client.") {
			t.Logf("ConfigMap leaves %s at its default", k)
		}
	}

	// The systemd unit's environment on top of the example file.
	u := parseUnit(t, "systemd/vesta.service")
	env := map[string]string{"VESTA_MACHINE_ID": "950"}
	for _, kv := range u["Service"]["Environment"] {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = strings.ReplaceAll(v, "%S", "/var/lib")
	}
	if cfg := loadConf(t, "../vesta.example.yaml", env); cfg.TimeGuard.DataDir != "/var/lib/vesta" {
		t.Errorf("systemd: time_guard.dir %q", cfg.TimeGuard.DataDir)
	}
}

// composeSecret is the token secret of the compose kit.
type composeSecret struct {
	name, target   string // the secret and where compose mounts it
	standIn, value string // a file standing in for it, and its token
}

// composeToken finds the compose file's secret for REST's token: a file
// under deploy/secrets, whose files git ignores.
func composeToken(tb testing.TB, c map[string]any) composeSecret {
	tb.Helper()
	secrets := mapAt(c, "secrets")
	if len(secrets) != 1 {
		tb.Fatalf("compose secrets %v, want one: the token", secrets)
	}
	var tok composeSecret
	for name := range secrets {
		tok.name = name
	}
	file := fmt.Sprint(mapAt(secrets, tok.name)["file"])
	if filepath.Dir(filepath.Clean(file)) != "secrets" {
		tb.Errorf("secret %s is file %s, want one of deploy/secrets", tok.name, file)
	}
	ignore, err := os.ReadFile("secrets/.gitignore")
	if err != nil || !slices.Contains(strings.Fields(string(ignore)), "*") {
		tb.Errorf("deploy/secrets/.gitignore does not ignore every file (%v): a token could be committed", err)
	}
	// Compose mounts a service's secret at /run/secrets/NAME. The stand-in
	// is readable by a container's user, as the real file must be.
	tok.target = "/run/secrets/" + tok.name
	tok.value = newToken()
	dir := tb.TempDir()
	tok.standIn = filepath.Join(dir, tok.name)
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(tok.standIn, []byte(tok.value+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return tok
}

// scrapeJobs returns the scrape_configs of a Prometheus configuration.
func scrapeJobs(tb testing.TB, path string) []map[string]any {
	tb.Helper()
	var jobs []map[string]any
	l, _ := readYAML(tb, path)["scrape_configs"].([]any)
	for _, j := range l {
		if j, ok := j.(map[string]any); ok {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		tb.Fatalf("%s: no scrape_configs", path)
	}
	return jobs
}

func leafKeys(m map[string]any, prefix string) []string {
	var out []string
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 && k != "ip_table" {
			out = append(out, leafKeys(sub, prefix+k+".")...)
			continue
		}
		out = append(out, prefix+k)
	}
	slices.Sort(out)
	return out
}

// manifest returns the document of kind and name in a manifest file.
func manifest(tb testing.TB, path, kind, name string) map[string]any {
	tb.Helper()
	for _, doc := range strings.Split(readFile(tb, path), "\n---\n") {
		m, err := yaml.Parser().Unmarshal([]byte(doc))
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		if m["kind"] == kind && mapAt(m, "metadata")["name"] == name {
			return m
		}
	}
	tb.Fatalf("%s: no %s %s", path, kind, name)
	return nil
}

// statefulSetArgs returns the args of a StatefulSet's first container.
func statefulSetArgs(tb testing.TB, path, name string) []string {
	tb.Helper()
	containers, _ := mapAt(manifest(tb, path, "StatefulSet", name), "spec", "template", "spec")["containers"].([]any)
	if len(containers) == 0 {
		tb.Fatalf("%s: StatefulSet %s has no container", path, name)
	}
	c, _ := containers[0].(map[string]any)
	return list(c["args"])
}

// composeEnv returns the environment of a compose service.
func composeEnv(tb testing.TB, service string) map[string]string {
	tb.Helper()
	env := map[string]string{}
	for k, v := range mapAt(readYAML(tb, "compose.yaml"), "services", service, "environment") {
		env[k] = fmt.Sprint(v)
	}
	if len(env) == 0 {
		tb.Fatalf("compose service %s has no environment", service)
	}
	return env
}

// configMapData returns data[key] of the ConfigMap name in a manifest file.
func configMapData(tb testing.TB, path, name, key string) string {
	tb.Helper()
	s, ok := mapAt(manifest(tb, path, "ConfigMap", name), "data")[key].(string)
	if !ok {
		tb.Fatalf("%s: ConfigMap %s has no %s", path, name, key)
	}
	return s
}
