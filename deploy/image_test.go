package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// need returns the path of a program the tests run; a missing one fails the
// test (scripts/deps.sh installs it) rather than skipping it.
func need(tb testing.TB, prog string) string {
	tb.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		tb.Fatalf("%s not found (scripts/deps.sh installs it): %v", prog, err)
	}
	return p
}

// podmanRun are the flags `podman run` needs in this kind of sandbox
// (rootful podman inside a container, cgroup v1 with a hybrid v2 mount,
// no systemd): runc, because crun refuses hybrid cgroups ("cgroups in
// hybrid mode not supported"); resource limits no higher than this
// process's hard limits, because rootful podman asks for nofile=1048576,
// which the sandbox may not grant; no healthcheck timer, which needs
// systemd (the test runs the image's health check itself instead).
func podmanRun(tb testing.TB) []string {
	tb.Helper()
	need(tb, "runc")
	var nofile, nproc syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Getrlimit(6 /* RLIMIT_NPROC */, &nproc); err != nil {
		tb.Fatal(err)
	}
	lim := func(r syscall.Rlimit, cap uint64) uint64 { return min(r.Max, cap) }
	return []string{"--runtime", "runc", "run",
		"--ulimit", fmt.Sprintf("nofile=%d:%d", lim(nofile, 65536), lim(nofile, 65536)),
		"--ulimit", fmt.Sprintf("nproc=%d:%d", lim(nproc, 4096), lim(nproc, 4096)),
		"--no-healthcheck"}
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
	Size   int64
	RootFS struct{ Layers []string }
}

// TestImage builds the image of deploy/Containerfile with scripts/image.sh
// (the same path as make image), inspects it, and runs it: the version, then
// the server on a read-only root as its non-root user, its health check,
// /readyz and an ID, and a graceful stop.
func TestImage(t *testing.T) {
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
	// The binary, CA bundle and a few small files: nothing like a distro.
	if img.Size > 60<<20 {
		t.Errorf("image is %d MiB", img.Size>>20)
	}

	run := podmanRun(t)

	// vesta version, as the image's user.
	v := podman(t, append(run, "--rm", tag, "version")...)
	if !regexp.MustCompile(`^vesta image-test go1\.\d+.* linux/`).MatchString(v) {
		t.Errorf("vesta version in the image: %q", v)
	}

	// The server: read-only root, every capability dropped, a fixed machine
	// ID chosen explicitly, ports published on loopback at random.
	name := fmt.Sprintf("vesta-test-%d", os.Getpid())
	t.Cleanup(func() { exec.Command("podman", "rm", "-f", "-t", "0", name).Run() })
	podman(t, append(run, "-d", "--name", name, "--read-only", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges",
		"-e", "VESTA_MACHINE_ID=950",
		"-p", "127.0.0.1::7070", "-p", "127.0.0.1::7080", "-p", "127.0.0.1::7090", tag)...)
	logs := func() string {
		out, _ := exec.Command("podman", "logs", name).CombinedOutput()
		return string(out)
	}
	hostPort := func(p string) string {
		s := strings.TrimSpace(podman(t, "port", name, p))
		if s == "" {
			t.Fatalf("port %s not published", p)
		}
		return strings.Split(s, "\n")[0]
	}
	rest, metrics := hostPort("7080/tcp"), hostPort("7090/tcp")

	get := func(url string) (int, string, error) {
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	// Generous: only catches a server that never comes up.
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _, err := get("http://" + rest + "/readyz")
		if err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never answered 200 (last: %d %v); logs:\n%s", code, err, logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, body, err := get("http://" + rest + "/v1/id"); err != nil || code != 200 || !strings.Contains(body, `"id"`) {
		t.Errorf("/v1/id: %d %q %v", code, body, err)
	}
	if code, body, err := get("http://" + metrics + "/metrics"); err != nil || code != 200 ||
		!strings.Contains(body, `vesta_generator_info{layout="sorted",machine="950"`) {
		t.Errorf("/metrics on 7090: %d %v\n%.500s", code, err, body)
	}
	// The image's own HEALTHCHECK command, run inside the container.
	if out, err := exec.Command("podman", append([]string{"exec", name}, img.Healthcheck.Test[1:]...)...).CombinedOutput(); err != nil {
		t.Errorf("healthcheck %v: %v\n%s", img.Healthcheck.Test[1:], err, out)
	}
	// The server process runs as 65532 on the host's view too.
	pid := strings.TrimSpace(podman(t, "inspect", "--format", "{{.State.Pid}}", name))
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if uid := regexp.MustCompile(`(?m)^Uid:\s+(\d+)\s+(\d+)`).FindStringSubmatch(string(status)); uid == nil || uid[1] != "65532" || uid[2] != "65532" {
		t.Errorf("server process uid %v, want 65532", uid)
	}

	// SIGTERM: a graceful stop within the 10s bound, exit status 0, the
	// final mark saved in the writable volume.
	podman(t, "stop", "-t", "20", name)
	exit := strings.TrimSpace(podman(t, "inspect", "--format", "{{.State.ExitCode}}", name))
	l := logs()
	if exit != "0" || !strings.Contains(l, `"msg":"stopped"`) {
		t.Errorf("after SIGTERM: exit %s; logs:\n%s", exit, l)
	}
	if strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, `"level":"WARN"`) {
		t.Errorf("the server logged warnings or errors:\n%s", l)
	}
}
