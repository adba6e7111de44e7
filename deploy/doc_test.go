package deploy_test

import (
	"bufio"
	"fmt"
	"maps"
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

// deployDoc is the page whose commands the tests run: what a user copies.
const deployDoc = "../docs/deploy.md"

// docBlocks returns the lines of every ```sh block of docs/deploy.md, one
// slice per block, in order.
func docBlocks(tb testing.TB) [][]string {
	tb.Helper()
	var blocks [][]string
	var cur []string
	in := false
	for line := range strings.Lines(readFile(tb, deployDoc)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "```"):
			if in {
				blocks = append(blocks, cur)
				cur = nil
			}
			in = !in && line == "```sh"
		case in:
			cur = append(cur, line)
		}
	}
	if len(blocks) == 0 {
		tb.Fatalf("%s: no sh blocks", deployDoc)
	}
	return blocks
}

// docBlock returns the one sh block of docs/deploy.md that has a line
// starting with first.
func docBlock(tb testing.TB, first string) []string {
	tb.Helper()
	var found [][]string
	for _, b := range docBlocks(tb) {
		if slices.ContainsFunc(b, func(l string) bool { return strings.HasPrefix(l, first) }) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("%s: %d sh blocks with a line starting %q, want 1", deployDoc, len(found), first)
	}
	return found[0]
}

// docLine returns the one line of a block that starts with prefix.
func docLine(tb testing.TB, block []string, prefix string) string {
	tb.Helper()
	var found []string
	for _, l := range block {
		if strings.HasPrefix(l, prefix) {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("%s: %d lines starting %q in block %q, want 1", deployDoc, len(found), prefix, block)
	}
	return found[0]
}

// shell runs one line of the doc with sh in the repository's root, as a
// user who copied it would, and returns its standard output.
func shell(tb testing.TB, line string) string {
	tb.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = ".."
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s: %v\n%s%s", line, err, out, stderr.String())
	}
	return string(out)
}

// publish matches a published port: -p HOST:PORT:CONTAINER (or compose's
// "HOST:PORT:CONTAINER").
var publish = regexp.MustCompile(`(?:-p |")([0-9.]*):?(\d+):(\d+)\b`)

// Every port the doc publishes, with podman, docker, compose or kubectl, is
// on loopback and none is make run's, so that both may run at once.
func TestDocPortsLoopback(t *testing.T) {
	n := 0
	for _, b := range docBlocks(t) {
		for _, l := range b {
			for _, m := range publish.FindAllStringSubmatch(l, -1) {
				n++
				if m[1] != "127.0.0.1" {
					t.Errorf("%s: %q publishes %s:%s on every interface, want 127.0.0.1", deployDoc, l, m[1], m[2])
				}
				if p, _ := strconv.Atoi(m[2]); p == 7070 || p == 7080 || p == 7090 {
					t.Errorf("%s: %q publishes host port %d, which make run serves", deployDoc, l, p)
				}
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s: no published ports found", deployDoc)
	}
	for _, f := range []string{"compose.yaml", "compose.monitoring.yaml"} {
		for _, s := range mapAt(readYAML(t, f), "services") {
			s, _ := s.(map[string]any)
			for _, p := range list(s["ports"]) {
				host, port, _ := strings.Cut(p, ":")
				if hp, _ := strconv.Atoi(strings.Split(port, ":")[0]); host != "127.0.0.1" || hp == 7070 || hp == 7080 || hp == 7090 {
					t.Errorf("%s: port %q, want 127.0.0.1 and not make run's 7070/7080/7090", f, p)
				}
			}
		}
	}
}

// The docker lines are the podman lines, less the flags podman alone needs
// (docker's daemon sets its own limits and runs the health check itself),
// and the docker compose lines the podman-compose ones: no docker daemon
// runs here, so the podman lines are what the tests run (and
// tools/composevalidate loads the docker compose line), and this keeps the
// docker lines from drifting.
func TestDocDockerMatchesPodman(t *testing.T) {
	podmanRunLine := docLine(t, docBlock(t, "podman run "), "podman run ")
	docker := docBlock(t, "docker run ")
	want := "docker " + strings.TrimPrefix(podmanRunLine, "podman ")
	for _, f := range podmanOnlyFlags(t) {
		want = strings.Replace(want, " "+f, "", 1)
	}
	if got := docLine(t, docker, "docker run "); got != want {
		t.Errorf("docker run line\n%s\nwant the podman line less its podman-only flags\n%s", got, want)
	}
	if docLine(t, docker, "ENGINE=docker ") != "ENGINE=docker make image" {
		t.Errorf("the docker block does not build the image with docker (ENGINE=docker make image)")
	}
	// Compose: "the same lines with docker compose for podman-compose and
	// the image built by docker".
	compose := slices.Clone(docBlock(t, "podman-compose "))
	for i, l := range compose {
		compose[i] = strings.Replace(strings.Replace(l, "podman-compose ", "docker compose ", 1), "make image", "ENGINE=docker make image", 1)
	}
	if got := docBlock(t, "docker compose "); !slices.Equal(got, compose) {
		t.Errorf("docker compose block\n%s\nwant the podman-compose block with docker compose\n%s", strings.Join(got, "\n"), strings.Join(compose, "\n"))
	}
}

// podmanOnlyFlags returns the flags of the doc's podman run that make it
// work where rootful podman runs without systemd or under low hard limits
// (this machine: a container, no systemd): the image test's other
// containers use them too, so they are set in one place, the doc.
func podmanOnlyFlags(tb testing.TB) []string {
	tb.Helper()
	f := strings.Fields(docLine(tb, docBlock(tb, "podman run "), "podman run "))
	var out []string
	for i := 0; i < len(f); i++ {
		switch {
		case f[i] == "--ulimit" && i+1 < len(f):
			out = append(out, f[i]+" "+f[i+1])
			i++
		case f[i] == "--no-healthcheck":
			out = append(out, f[i])
		}
	}
	if len(out) != 3 {
		tb.Fatalf("podman run flags %q: want two --ulimit and --no-healthcheck", out)
	}
	return out
}

// docPodman rewrites a line of the doc's podman block for a test: the
// container's name, the image's tag and each host port substituted by a
// test's own (free ports, so that a make run or another test may run
// beside it); nothing else changes.
type docPodman struct {
	name, tag string
	ports     map[string]string // the doc's host port -> a free one
}

func newDocPodman(tb testing.TB, block []string, name, tag string) *docPodman {
	tb.Helper()
	d := &docPodman{name: name, tag: tag, ports: map[string]string{}}
	for _, l := range block {
		for _, m := range publish.FindAllStringSubmatch(l, -1) {
			d.ports[m[2]] = ""
		}
	}
	free, err := proctest.FreePorts(len(d.ports))
	if err != nil {
		tb.Fatal(err)
	}
	for i, p := range slices.Sorted(maps.Keys(d.ports)) {
		d.ports[p] = strconv.Itoa(free[i])
	}
	return d
}

var docName = regexp.MustCompile(`(--name|exec|stop -t \d+|rm) vesta\b`)

func (d *docPodman) line(l string) string {
	l = docName.ReplaceAllString(l, "${1} "+d.name)
	l = strings.ReplaceAll(l, "localhost/vesta:latest", d.tag)
	for doc, free := range d.ports {
		l = strings.ReplaceAll(l, "127.0.0.1:"+doc+":", "127.0.0.1:"+free+":")
		l = strings.ReplaceAll(l, "127.0.0.1:"+doc+"/", "127.0.0.1:"+free+"/")
	}
	return l
}

// port returns the test's host port for the doc's.
func (d *docPodman) port(tb testing.TB, doc string) string {
	tb.Helper()
	p, ok := d.ports[doc]
	if !ok {
		tb.Fatalf("%s publishes no host port %s", deployDoc, doc)
	}
	return p
}

// The documented one-line checks exist as written: make systemd-verify
// (run by TestSystemdUnit), make k8s-validate and make compose-validate,
// the go test of the modules tools/k8svalidate and tools/composevalidate
// (scripts/test.sh runs those modules already, so here only the targets'
// recipes are checked, not run twice).
func TestDocChecks(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"make systemd-verify", "scripts/systemd-verify.sh"},
		{"make k8s-validate", "cd tools/k8svalidate && go test"},
		{"make compose-validate", "cd tools/composevalidate && go test"},
	} {
		docLine(t, docBlock(t, tc.line), tc.line)
		out, err := exec.Command("make", "-C", "..", "-n", strings.TrimPrefix(tc.line, "make ")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("make -n %s: %v\n%s\nwant it to run %q", tc.line, err, out, tc.want)
		}
	}
	for _, m := range []string{"k8svalidate", "composevalidate"} {
		if _, err := os.Stat(filepath.Join("..", "tools", m, "go.mod")); err != nil {
			t.Error(err)
		}
	}
}

// fakePodman writes a stand-in for podman that records its arguments, one
// call a line, and answers as podman 4.3 would the calls podman-compose
// makes (its version; success for the rest): what podman-compose would
// run, with nothing created and no image pulled.
func fakePodman(tb testing.TB) (path string, calls func() []string) {
	tb.Helper()
	dir := tb.TempDir()
	path, log := filepath.Join(dir, "podman"), filepath.Join(dir, "calls")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >>%q\n[ \"$1\" = --version ] && echo 'podman version 4.3.1'\nexit 0\n", log)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
	return path, func() []string {
		b, _ := os.ReadFile(log)
		os.Remove(log)
		var out []string
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			out = append(out, sc.Text())
		}
		return out
	}
}

// TestComposePodmanCompose runs the doc's podman-compose lines with
// Debian's podman-compose, podman replaced by a recorder (--podman-path,
// the one word added; no registry is reachable here to pull Redis,
// Prometheus and Grafana): both files are accepted, every service is
// started with the limits podman needs, the servers read-only as 65532
// with the token's secret, every port on loopback; without the monitoring
// file only the fleet starts; down stops the servers with time for their
// graceful stop.
func TestComposePodmanCompose(t *testing.T) {
	// Parallel: podman-compose 1.0.x sleeps 1s after starting each container.
	t.Parallel()
	need(t, "podman-compose")
	block := docBlock(t, "podman-compose ")
	up := docLine(t, block, "podman-compose -p vesta -f deploy/compose.yaml -f deploy/compose.monitoring.yaml up -d")
	down := docLine(t, block, "podman-compose -p vesta -f deploy/compose.yaml -f deploy/compose.monitoring.yaml down ")
	fake, calls := fakePodman(t)
	withFake := func(l string) string {
		return strings.Replace(l, "podman-compose ", "podman-compose --podman-path "+fake+" ", 1)
	}
	fleet := []string{"redis", "vesta-1", "vesta-2", "vesta-3"}
	for _, tc := range []struct {
		line     string
		services []string
	}{
		{up, append(slices.Clone(fleet), "grafana", "prometheus")},
		// "Leave out -f deploy/compose.monitoring.yaml for the fleet alone."
		{strings.Replace(up, " -f deploy/compose.monitoring.yaml", "", 1), fleet},
	} {
		shell(t, withFake(tc.line))
		var started []string
		for _, c := range calls() {
			args := strings.Fields(c)
			if len(args) == 0 || args[0] != "run" {
				continue
			}
			name := strings.TrimSuffix(strings.TrimPrefix(args[1], "--name=vesta_"), "_1")
			started = append(started, name)
			has := func(flag, value string) bool {
				for i := range len(args) - 1 {
					if args[i] == flag && strings.HasPrefix(args[i+1], value) {
						return true
					}
				}
				return false
			}
			if !has("--ulimit", "nofile=") || !has("--ulimit", "nproc=") {
				t.Errorf("%s: no --ulimit nofile and nproc (rootful podman's defaults fail under low hard limits):\n%s", name, c)
			}
			for i, a := range args {
				if a == "-p" && !strings.HasPrefix(args[i+1], "127.0.0.1:") {
					t.Errorf("%s publishes %s beyond loopback", name, args[i+1])
				}
			}
			if strings.HasPrefix(name, "vesta-") && (!slices.Contains(args, "--read-only") || !has("-u", "65532:65532") ||
				!has("--volume", "./secrets/vesta-token:/run/secrets/vesta-token:ro")) {
				t.Errorf("%s: want --read-only, -u 65532:65532 and the token's secret:\n%s", name, c)
			}
		}
		slices.Sort(started)
		slices.Sort(tc.services)
		if !slices.Equal(started, tc.services) {
			t.Errorf("%s started %v, want %v", tc.line, started, tc.services)
		}
	}
	shell(t, withFake(down))
	stopped := 0
	for _, c := range calls() {
		if strings.HasPrefix(c, "stop ") {
			if !strings.HasPrefix(c, "stop -t 20 ") {
				t.Errorf("down: %q, want stop -t 20 (vesta's graceful stop takes up to 10s)", c)
			}
			stopped++
		}
	}
	if stopped < len(fleet) {
		t.Errorf("down stopped %d containers, want at least %d", stopped, len(fleet))
	}
}
