package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit/proctest"
)

// testComposeFleet brings up the compose fleet for real with Debian's
// podman-compose, from the doc's lines: `up -d`, the curl, `down -t 20`.
// What it substitutes, and why:
//   - the project name (-p vesta): the test's own, beside a user's fleet;
//   - the files: a copy of compose.yaml in a temporary directory whose host
//     ports are free ones and whose vesta image is the one TestImage built,
//     with a stand-in token in its secrets/, plus an override file that
//     gives redis a stand-in image (no registry is reachable here to pull
//     Redis's; Prometheus and Grafana cannot be pulled either, so the
//     monitoring file is left out); the Redis is new, so each server's
//     first claim waits out a quarantine (about 19 s);
//   - in the curl line, that port and the token's path.
//
// Then every server issues, with the token, on a machine ID of its own.
func testComposeFleet(t *testing.T, tag string) {
	need(t, "podman-compose")
	if backend := strings.TrimSpace(podman(t, "info", "--format", "{{.Host.NetworkBackend}}")); backend == "cni" {
		if _, err := os.Stat("/usr/lib/cni/dnsname"); err != nil {
			t.Fatalf("podman's CNI networks resolve no service names without the dnsname plugin (scripts/deps.sh installs it): %v", err)
		}
	}
	block := docBlock(t, "podman-compose ")
	up := docLine(t, block, "podman-compose -p vesta -f deploy/compose.yaml -f deploy/compose.monitoring.yaml up -d")
	down := docLine(t, block, "podman-compose -p vesta -f deploy/compose.yaml -f deploy/compose.monitoring.yaml down ")
	curl := docLine(t, block, "curl ")

	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // the servers' user reads the secret
		t.Fatal(err)
	}
	redis := standInRedis(t)
	text := readFile(t, "compose.yaml")
	if n := strings.Count(text, "image: localhost/vesta:latest"); n != 1 {
		t.Fatalf("compose.yaml names localhost/vesta:latest %d times, want once (x-vesta, the servers' common part)", n)
	}
	compose := strings.ReplaceAll(text, "image: localhost/vesta:latest", "image: "+tag)
	ports := regexp.MustCompile(`"127\.0\.0\.1:(\d+):`).FindAllStringSubmatch(compose, -1)
	if len(ports) != 6 {
		t.Fatalf("compose.yaml publishes %d ports on loopback, want RPC and REST of 3 servers", len(ports))
	}
	free, err := proctest.FreePorts(len(ports))
	if err != nil {
		t.Fatal(err)
	}
	hostPort := map[string]string{} // the file's host port -> the test's
	for i, m := range ports {
		hostPort[m[1]] = strconv.Itoa(free[i])
		compose = strings.Replace(compose, `"127.0.0.1:`+m[1]+`:`, `"127.0.0.1:`+hostPort[m[1]]+`:`, 1)
	}
	override := "services:\n  redis:\n    image: " + redis + "\n"
	token := newToken()
	for name, content := range map[string]string{"compose.yaml": compose, "override.yaml": override, "secrets/vesta-token": token + "\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	project := fmt.Sprintf("vesta-test-%d", os.Getpid())
	files := "-f " + filepath.Join(dir, "compose.yaml") + " -f " + filepath.Join(dir, "override.yaml")
	line := func(doc string) string {
		l := strings.Replace(doc, "-p vesta ", "-p "+project+" ", 1)
		return strings.Replace(l, "-f deploy/compose.yaml -f deploy/compose.monitoring.yaml", files, 1)
	}
	t.Cleanup(func() {
		exec.Command("sh", "-c", line(strings.Replace(down, "down -t 20", "down -t 0", 1))).Run()
		vols, _ := exec.Command("podman", "volume", "ls", "-q", "--filter", "label=io.podman.compose.project="+project).Output()
		for _, v := range strings.Fields(string(vols)) {
			exec.Command("podman", "volume", "rm", "-f", v).Run()
		}
		// Unlabelled by podman-compose 1.0.x: named after the project.
		for _, v := range []string{"vesta-1", "vesta-2", "vesta-3", "redis"} {
			exec.Command("podman", "volume", "rm", "-f", project+"_"+v).Run()
		}
		exec.Command("podman", "network", "rm", "-f", project+"_default").Run()
	})
	shell(t, line(up))

	// The doc's curl, at vesta-1's REST port with the token's file here.
	c := strings.Replace(curl, "127.0.0.1:17081/", "127.0.0.1:"+hostPort["17081"]+"/", 1)
	c = strings.Replace(c, "$(cat deploy/secrets/vesta-token)", "$(cat "+filepath.Join(dir, "secrets", "vesta-token")+")", 1)
	if c == curl || !strings.Contains(c, hostPort["17081"]) {
		t.Fatalf("%s: the curl line %q does not ask vesta-1 (17081) with the token of deploy/secrets", deployDoc, curl)
	}
	if out := shell(t, c); !strings.Contains(out, `"id"`) {
		t.Errorf("%s: %q", c, out)
	}
	// Every server of the fleet issues, on its own machine ID.
	machines := map[int]string{}
	for n := 1; n <= 3; n++ {
		server := fmt.Sprintf("vesta-%d", n)
		rest := restClient{base: "http://127.0.0.1:" + hostPort[fmt.Sprint(17080+n)], token: token}
		waitReady(t, project+"_"+server+"_1", rest)
		m := infoMachine(t, rest)
		if other, dup := machines[m]; dup || m < 924 || m > 1023 {
			t.Errorf("%s: machine ID %d (also %s's), want one of its own in the server range", server, m, other)
		}
		machines[m] = server
	}

	shell(t, line(down))
	out, _ := exec.Command("podman", "ps", "-a", "-q", "--filter", "label=io.podman.compose.project="+project).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		t.Errorf("after %s: containers %v remain", line(down), ids)
	}
}

// standInRedis builds an image FROM scratch with this host's redis-server,
// redis-cli and sh and the libraries they load, standing in for Redis's image,
// which cannot be pulled here: the same command and health check run in
// it. Like the official image's entrypoint, it turns protected mode off
// (there is no configuration file), so that the servers may connect over
// the compose network.
func standInRedis(t *testing.T) string {
	t.Helper()
	ctx := t.TempDir()
	var progs []string
	for _, p := range []string{"redis-server", "redis-cli", "sh"} {
		progs = append(progs, need(t, p))
	}
	lib := regexp.MustCompile(`(/\S+\.so[^\s]*)`)
	files := slices.Clone(progs)
	for _, p := range progs {
		out, err := exec.Command("ldd", p).Output()
		if err != nil {
			t.Fatalf("ldd %s: %v", p, err)
		}
		for _, m := range lib.FindAllStringSubmatch(string(out), -1) {
			files = append(files, m[1])
		}
	}
	for _, f := range files {
		b := readFile(t, f) // through symbolic links
		dst := filepath.Join(ctx, f)
		if slices.Contains(progs, f) { // at the names the compose file runs
			dst = filepath.Join(ctx, "usr", "bin", filepath.Base(f))
			if filepath.Base(f) == "sh" {
				dst = filepath.Join(ctx, "bin", "sh")
			}
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entry, _ := json.Marshal([]string{"/bin/sh", "-c", `exec "$0" "$@" --protected-mode no`})
	containerfile := filepath.Join(t.TempDir(), "Containerfile")
	if err := os.WriteFile(containerfile, []byte("FROM scratch\nCOPY . /\nENTRYPOINT "+string(entry)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("localhost/vesta-test-redis:%d", os.Getpid())
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", tag).Run() })
	podman(t, "build", "-q", "--pull=never", "-f", containerfile, "-t", tag, ctx)
	return tag
}
