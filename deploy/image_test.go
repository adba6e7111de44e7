package deploy_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
)

// need returns the path of a program the tests run; a missing one fails the
// test (scripts/deps.sh installs it) rather than skipping it, except under
// go test -short, which skips every test that runs one.
func need(tb testing.TB, prog string) string {
	tb.Helper()
	testkit.SkipShort(tb, prog)
	p, err := exec.LookPath(prog)
	if err != nil {
		tb.Fatalf("%s not found (scripts/deps.sh installs it): %v", prog, err)
	}
	return p
}

// podmanRun is `podman run` with the flags docs/deploy.md's command gives
// it to run where rootful podman meets low hard limits or no systemd (as
// in this kind of sandbox: a container, no systemd): resource limits below
// the hard ones, no healthcheck timer (the test runs the image's health
// check itself instead). Read from the doc, so that the doc says what the
// tests need.
func podmanRun(tb testing.TB) []string {
	tb.Helper()
	run := []string{"run"}
	for _, f := range podmanOnlyFlags(tb) {
		run = append(run, strings.Fields(f)...)
	}
	return run
}

func podman(tb testing.TB, args ...string) string {
	tb.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command("podman", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("podman %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// imageInfo is the part of `podman image inspect` the test reads.
type imageInfo struct {
	Config struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		ExposedPorts map[string]struct{}
		Env          []string
		WorkingDir   string
		StopSignal   string
	}
	Healthcheck *struct {
		Test []string
	}
	Labels map[string]string
	Size   int64
	RootFS struct{ Layers []string }
}

// TestImage builds the image of deploy/Containerfile with scripts/image.sh
// (the same path as make image), inspects it, and runs it: the version, then
// the server on a read-only root as its non-root user, its health check,
// /readyz and an ID, and a graceful stop.
func TestImage(t *testing.T) {
	// Parallel: mostly waiting on podman and the servers it runs.
	t.Parallel()
	need(t, "podman")
	tag := fmt.Sprintf("localhost/vesta-test:%d", os.Getpid())
	build := exec.Command("../scripts/image.sh", tag)
	build.Env = append(os.Environ(), "ENGINE=podman", "VERSION=image-test", "ENGINE_FLAGS=")
	out, err := build.CombinedOutput()
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", tag).Run() })
	if err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	// FROM scratch plus COPY: nothing was pulled.
	if bytes.Contains(out, []byte("Trying to pull")) {
		t.Fatalf("the build pulled an image:\n%s", out)
	}

	var infos []imageInfo
	if err := json.Unmarshal([]byte(podman(t, "image", "inspect", tag)), &infos); err != nil || len(infos) != 1 {
		t.Fatalf("image inspect: %v (%d images)", err, len(infos))
	}
	img := infos[0]
	cfg := img.Config
	if u := strings.Split(cfg.User, ":")[0]; u == "" || u == "0" || u == "root" {
		t.Errorf("user %q: the image must not run as root", cfg.User)
	}
	if cfg.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (numeric, for runAsNonRoot)", cfg.User)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/usr/local/bin/vesta"}) || !slices.Equal(cfg.Cmd, []string{"serve"}) {
		t.Errorf("entrypoint %q cmd %q, want [/usr/local/bin/vesta] [serve]", cfg.Entrypoint, cfg.Cmd)
	}
	var ports []string
	for p := range cfg.ExposedPorts {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	if !slices.Equal(ports, []string{"7070/tcp", "7080/tcp", "7090/tcp"}) {
		t.Errorf("exposed ports %v, want 7070 (RPC), 7080 (HTTP), 7090 (metrics)", ports)
	}
	if !slices.Contains(cfg.Env, "VESTA_CONFIG=/etc/vesta/vesta.yaml") {
		t.Errorf("env %v: VESTA_CONFIG does not name the image's configuration", cfg.Env)
	}
	if cfg.StopSignal != "SIGTERM" {
		t.Errorf("stop signal %q", cfg.StopSignal)
	}
	if img.Healthcheck == nil || len(img.Healthcheck.Test) < 3 || img.Healthcheck.Test[0] != "CMD" ||
		img.Healthcheck.Test[1] != "/usr/local/bin/vesta" || img.Healthcheck.Test[2] != "health" {
		t.Fatalf("healthcheck %+v: want CMD /usr/local/bin/vesta health ...", img.Healthcheck)
	}
	if v := img.Labels["org.opencontainers.image.version"]; v != "image-test" {
		t.Errorf("label org.opencontainers.image.version %q, want image-test (VERSION)", v)
	}
	// The binary, CA bundle and a few small files: nothing like a distro.
	if img.Size > 60<<20 {
		t.Errorf("image is %d MiB", img.Size>>20)
	}

	run := podmanRun(t)

	t.Run("documented run", func(t *testing.T) { testDocRun(t, tag, img) })
	t.Run("k8s ordinal", func(t *testing.T) { testK8sOrdinal(t, run, tag) })
	// In parallel: the compose fleet waits out a new Redis's quarantine.
	t.Run("redis lease", func(t *testing.T) { t.Parallel(); testRedisLease(t, run, tag) })
	t.Run("compose fleet", func(t *testing.T) { t.Parallel(); testComposeFleet(t, tag) })
}

// container runs the image detached, read-only and without capabilities,
// removed when the test ends.
func container(tb testing.TB, run []string, name string, args ...string) string {
	tb.Helper()
	name = fmt.Sprintf("vesta-test-%d-%s", os.Getpid(), name)
	// -v: and its anonymous volume (the image's VOLUME /var/lib/vesta).
	tb.Cleanup(func() { exec.Command("podman", "rm", "-f", "-v", "-t", "0", name).Run() })
	podman(tb, append(append(run, "-d", "--name", name, "--read-only", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges"), args...)...)
	return name
}

func logsOf(name string) string {
	out, _ := exec.Command("podman", "logs", name).CombinedOutput()
	return string(out)
}

// restClient asks a server's REST listener: base is http://host:port or
// https://host:port, tr (nil for the default) trusts its certificate, and
// token, when not empty, is sent as the bearer token.
type restClient struct {
	base  string
	tr    http.RoundTripper
	token string
}

func plainREST(addr string) restClient { return restClient{base: "http://" + addr} }

func (r restClient) get(path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, r.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	code, b, err := nettest.Do(&http.Client{Transport: r.tr, Timeout: 5 * time.Second}, req)
	return code, string(b), err
}

// waitReady polls /readyz; the bound is generous and only catches a server
// that never comes up.
func waitReady(tb testing.TB, name string, rest restClient) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _, err := rest.get("/readyz")
		if err == nil && code == 200 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("/readyz never answered 200 (last: %d %v); logs:\n%s", code, err, logsOf(name))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// info is the machine ID /v1/info reports.
func infoMachine(tb testing.TB, rest restClient) int {
	tb.Helper()
	code, body, err := rest.get("/v1/info")
	var info struct{ Machine int }
	if err != nil || code != 200 || json.Unmarshal([]byte(body), &info) != nil {
		tb.Fatalf("/v1/info: %d %q %v", code, body, err)
	}
	return info.Machine
}

// stopGracefully sends SIGTERM and checks a clean stop: exit status 0 and
// nothing logged at warning or error level.
func stopGracefully(tb testing.TB, name string) {
	tb.Helper()
	podman(tb, "stop", "-t", "20", name)
	checkStopped(tb, name)
}

// checkStopped checks a container stopped cleanly by SIGTERM: exit status 0
// and nothing logged at warning or error level.
func checkStopped(tb testing.TB, name string) {
	tb.Helper()
	exit := strings.TrimSpace(podman(tb, "inspect", "--format", "{{.State.ExitCode}}", name))
	l := logsOf(name)
	if exit != "0" || !strings.Contains(l, `"msg":"stopped"`) {
		tb.Errorf("after SIGTERM: exit %s; logs:\n%s", exit, l)
	}
	for line := range strings.SplitSeq(l, "\n") {
		// A lease on a new Redis waits out its takeover quarantine, and
		// says so at Warn: expected where the Redis is new.
		if strings.Contains(line, `"msg":"machineid: quarantine:`) {
			continue
		}
		// The mTLS check dials RPC without a client certificate on
		// purpose; the refused handshake is logged at Warn (once a minute
		// per peer).
		if strings.Contains(line, `"msg":"central: TLS handshake failed"`) && strings.Contains(line, "didn't provide a certificate") {
			continue
		}
		// And the metrics listener in plain HTTP, to see it refused.
		if strings.Contains(line, `"msg":"metrics: TLS handshake failed"`) && strings.Contains(line, "HTTP request to an HTTPS server") {
			continue
		}
		if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`) {
			tb.Errorf("the server logged warnings or errors:\n%s", l)
			break
		}
	}
}

// testDocRun runs docs/deploy.md's podman block line by line, as a user
// copies it, with only the container's name, the image's tag and the host
// ports substituted (the test's own free ports: a make run or another test
// may be up). make image is the image TestImage built with scripts/image.sh.
// Between the lines it checks what the doc promises: an ID, the stamped
// version and label, the health check; then the image's own HEALTHCHECK
// command, /readyz, /metrics on the metrics port, the server's user, and a
// graceful stop.
func testDocRun(t *testing.T, tag string, img imageInfo) {
	block := docBlock(t, "podman run ")
	name := fmt.Sprintf("vesta-test-%d-doc", os.Getpid())
	d := newDocPodman(t, block, name, tag)
	t.Cleanup(func() { exec.Command("podman", "rm", "-f", "-v", "-t", "0", name).Run() })
	if block[0] != "make image" {
		t.Fatalf("%s: the podman block starts %q, want make image", deployDoc, block[0])
	}
	for _, doc := range block[1:] {
		l := d.line(doc)
		switch {
		case strings.HasPrefix(doc, "podman run "):
			// No wait here: the doc's curl retries, as the block may be
			// pasted whole.
			shell(t, l)
		case strings.HasPrefix(doc, "curl "):
			if out := shell(t, l); !strings.Contains(out, `"id"`) {
				t.Errorf("%s: %q", l, out)
			}
		case strings.HasSuffix(doc, " vesta version"):
			if v := shell(t, l); !regexp.MustCompile(`^vesta image-test go1\.\d+.* linux/`).MatchString(v) {
				t.Errorf("%s: %q, want the version scripts/image.sh stamped", l, v)
			}
		case strings.HasSuffix(doc, " vesta health"):
			if out := shell(t, l); !strings.Contains(out, "200") {
				t.Errorf("%s: %q", l, out)
			}
		case strings.HasPrefix(doc, "podman image inspect "):
			if v := strings.TrimSpace(shell(t, l)); v != "image-test" {
				t.Errorf("%s: %q, want image-test", l, v)
			}
		case strings.HasPrefix(doc, "podman stop "):
			checkServing(t, name, d.port(t, "17080"), d.port(t, "17090"), img)
			stop, rm, ok := strings.Cut(l, " && ")
			if !ok {
				t.Fatalf("%q: want podman stop ... && podman rm ...", l)
			}
			shell(t, stop)
			checkStopped(t, name)
			shell(t, rm)
		default:
			t.Errorf("%s: the test does not know the line %q of the podman block: run it here", deployDoc, doc)
		}
	}
}

// checkServing checks a running container of the image: /v1/id, /metrics
// on the metrics port, the image's own HEALTHCHECK command, and the
// server's user in the host's view.
func checkServing(t *testing.T, name, restPort, metricsPort string, img imageInfo) {
	t.Helper()
	rest, metrics := plainREST("127.0.0.1:"+restPort), plainREST("127.0.0.1:"+metricsPort)
	if code, body, err := rest.get("/v1/id"); err != nil || code != 200 || !strings.Contains(body, `"id"`) {
		t.Errorf("/v1/id: %d %q %v", code, body, err)
	}
	if code, body, err := metrics.get("/metrics"); err != nil || code != 200 ||
		!strings.Contains(body, `vesta_generator_info{layout="sorted",machine="950"`) {
		t.Errorf("/metrics on 7090: %d %v\n%.500s", code, err, body)
	}
	if out, err := exec.Command("podman", append([]string{"exec", name}, img.Healthcheck.Test[1:]...)...).CombinedOutput(); err != nil {
		t.Errorf("healthcheck %v: %v\n%s", img.Healthcheck.Test[1:], err, out)
	}
	pid := strings.TrimSpace(podman(t, "inspect", "--format", "{{.State.Pid}}", name))
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if uid := regexp.MustCompile(`(?m)^Uid:\s+(\d+)\s+(\d+)`).FindStringSubmatch(string(status)); uid == nil || uid[1] != "65532" || uid[2] != "65532" {
		t.Errorf("server process uid %v, want 65532", uid)
	}
}

// testK8sOrdinal runs the image as the StatefulSet of deploy/k8s does: pod
// vesta-2 with the ConfigMap and the Secrets mounted and the container's
// args gets machine ID k8s_offset + 2, serves REST over HTTPS with the
// token (the probes' routes without it), the metrics listener over HTTPS
// with the token (never in clear), and RPC over mutual TLS only.
func testK8sOrdinal(t *testing.T, run []string, tag string) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // read by the image's user
		t.Fatal(err)
	}
	cfg := configMapData(t, "k8s/vesta.yaml", "vesta-config", "vesta.yaml")
	if err := os.WriteFile(filepath.Join(dir, "vesta.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	secrets := newKitSecrets(t)
	args := statefulSetArgs(t, "k8s/vesta.yaml", "vesta")
	flags := append([]string{"--hostname", "vesta-2", "-v", dir + ":/etc/vesta/config:ro",
		"-p", "127.0.0.1::7070", "-p", "127.0.0.1::7080", "-p", "127.0.0.1::7090"}, secrets.podmanVolumes()...)
	name := container(t, run, "k8s", append(append(flags, tag), args...)...)
	port := func(p string) string { return strings.Split(strings.TrimSpace(podman(t, "port", name, p)), "\n")[0] }
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: secrets.pki.Pool}}
	defer tr.CloseIdleConnections()
	open := restClient{base: "https://" + port("7080/tcp"), tr: tr}
	waitReady(t, name, open) // as the readiness probe: no token
	withToken := open
	withToken.token = secrets.token
	if m := infoMachine(t, withToken); m != 924+2 {
		t.Errorf("pod vesta-2 has machine ID %d, want 926 (k8s_offset 924 + ordinal 2); logs:\n%s", m, logsOf(name))
	}
	if code, _, err := open.get("/v1/id"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("/v1/id without the token: %d %v, want 401", code, err)
	}
	if code, _, err := open.get("/metrics"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d %v, want 401 (metrics_auth)", code, err)
	}
	// The metrics listener, as Prometheus scrapes it: HTTPS with the token.
	metrics := restClient{base: "https://" + port("7090/tcp"), tr: tr, token: secrets.token}
	if code, _, err := metrics.get("/metrics"); err != nil || code != http.StatusOK {
		t.Errorf("7090 /metrics over HTTPS with the token: %d %v, want 200", code, err)
	}
	plain := restClient{base: "http://" + port("7090/tcp"), tr: tr, token: secrets.token}
	if code, _, err := plain.get("/metrics"); err == nil && code == http.StatusOK {
		t.Error("7090 /metrics over plain HTTP: 200; want no answer in clear (metrics.tls)")
	}

	// RPC: the Go client with the client certificate gets an ID; without
	// one the server refuses it.
	rpc := port("7070/tcp")
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
		ok    bool
	}{{"with a client certificate", []tls.Certificate{secrets.pki.Client}, true}, {"without a client certificate", nil, false}} {
		ccfg := client.DefaultConfig(rpc)
		ccfg.NoFallback, ccfg.Retries, ccfg.Timeout = true, -1, 5*time.Second
		ccfg.TLS = &tls.Config{RootCAs: secrets.pki.Pool, Certificates: tc.certs}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := client.New(ctx, ccfg)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		id, err := c.NextID(ctx)
		c.Close()
		cancel()
		if (err == nil) != tc.ok {
			t.Errorf("RPC %s: ID %d, %v", tc.name, id, err)
		}
	}
	stopGracefully(t, name)
}

// testRedisLease runs the image with the environment of the compose file's
// servers against a real redis-server: it leases a server-range ID, and
// releases it on SIGTERM.
func testRedisLease(t *testing.T, run []string, tag string) {
	redis := redistest.Start(t)
	redis.Established("vesta") // a Redis in service: the claim need not wait out a new one's quarantine
	env := composeEnv(t, "vesta-1")
	env["VESTA_MACHINE_REDIS_ADDRS"] = redis.Addr()
	token := composeToken(t, readYAML(t, "compose.yaml"))
	// The host's network, to reach the test's Redis on loopback; listeners
	// on free ports, read back from the log.
	env["VESTA_CENTRAL_LISTEN"], env["VESTA_REST_LISTEN"], env["VESTA_METRICS_LISTEN"] = "127.0.0.1:0", "127.0.0.1:0", ""
	// The token file where compose mounts the secret.
	args := []string{"--network", "host", "-v", token.standIn + ":" + token.target + ":ro"}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		args = append(args, "-e", k+"="+env[k])
	}
	name := container(t, run, "redis", append(args, tag)...)
	var rest string
	deadline := time.Now().Add(60 * time.Second)
	for rest == "" {
		if m := regexp.MustCompile(`"msg":"serving".*"rest":"([^"]+)"`).FindStringSubmatch(logsOf(name)); m != nil {
			rest = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("the server did not start; logs:\n%s", logsOf(name))
		} else {
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitReady(t, name, plainREST(rest))
	if code, _, err := plainREST(rest).get("/v1/info"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("/v1/info without the token: %d %v, want 401", code, err)
	}
	m := infoMachine(t, restClient{base: "http://" + rest, token: token.value})
	if m < 924 || m > 1023 {
		t.Fatalf("machine ID %d is outside the server range", m)
	}
	rc := goredis.NewClient(&goredis.Options{Addr: redis.Addr()})
	defer rc.Close()
	ctx := context.Background()
	lease, mark := fmt.Sprintf("{vesta:machine:%d}:lease", m), fmt.Sprintf("{vesta:machine:%d}:mark", m)
	if n, err := rc.Exists(ctx, lease, mark).Result(); err != nil || n != 2 {
		t.Errorf("Redis holds %d of %s and %s (%v), want both", n, lease, mark, err)
	}
	stopGracefully(t, name)
	// Released on SIGTERM; the mark stays for the next holder.
	if n, err := rc.Exists(ctx, lease).Result(); err != nil || n != 0 {
		t.Errorf("%s still exists after a graceful stop (%v)", lease, err)
	}
	if n, err := rc.Exists(ctx, mark).Result(); err != nil || n != 1 {
		t.Errorf("%s is gone after a graceful stop (%v)", mark, err)
	}
}
