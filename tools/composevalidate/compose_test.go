package composevalidate_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// root is the repository's root, from this module's directory.
const root = "../.."

// composeUp returns the docker compose lines of docs/deploy.md that start
// the fleet: `docker compose -p NAME -f FILE... up -d`.
func composeUp(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "docker compose ") && strings.HasSuffix(line, " up -d") {
			found = append(found, line)
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/deploy.md: %d lines `docker compose ... up -d`, want 1: %q", len(found), found)
	}
	return found[0]
}

// load loads a docker compose command line's project as Docker Compose v2
// would, from the repository's root: its -p name and -f files, validated
// against the compose specification's schema, paths resolved.
func load(t *testing.T, line string) *types.Project {
	t.Helper()
	args := strings.Fields(line)
	var name string
	var files []string
	for i := 2; i < len(args)-1; i++ {
		switch args[i] {
		case "-p":
			name = args[i+1]
			i++
		case "-f":
			files = append(files, filepath.Join(root, args[i+1]))
			i++
		}
	}
	if name == "" || len(files) == 0 {
		t.Fatalf("%q: want -p NAME and -f FILE", line)
	}
	opts, err := cli.NewProjectOptions(files, cli.WithName(name), cli.WithEnv(nil), cli.WithResolvedPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return p
}

func TestDocComposeLines(t *testing.T) {
	up := composeUp(t)
	fleet := []string{"redis", "vesta-1", "vesta-2", "vesta-3"}
	for _, tc := range []struct {
		name, line string
		services   []string
	}{
		{"with monitoring", up, append(slices.Clone(fleet), "grafana", "prometheus")},
		// "Leave out -f deploy/compose.monitoring.yaml for the fleet alone."
		{"fleet alone", strings.Replace(up, " -f deploy/compose.monitoring.yaml", "", 1), fleet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := load(t, tc.line)
			if p.Name != "vesta" {
				t.Errorf("project name %q, want vesta", p.Name)
			}
			names := p.ServiceNames()
			slices.Sort(names)
			slices.Sort(tc.services)
			if !slices.Equal(names, tc.services) {
				t.Fatalf("services %v, want %v", names, tc.services)
			}
			for _, s := range p.Services {
				checkService(t, p, s)
			}
		})
	}
}

func checkService(t *testing.T, p *types.Project, s types.ServiceConfig) {
	t.Helper()
	for _, l := range []string{"nofile", "nproc"} {
		if u := s.Ulimits[l]; u == nil || (u.Single == 0 && u.Hard == 0) {
			t.Errorf("%s: no ulimits.%s (rootful podman's default exceeds low hard limits)", s.Name, l)
		}
	}
	for _, port := range s.Ports {
		pub, _ := strconv.Atoi(strings.Split(port.Published, "-")[0])
		if port.HostIP != "127.0.0.1" || pub == 7070 || pub == 7080 || pub == 7090 {
			t.Errorf("%s publishes %s:%s, want 127.0.0.1 and not make run's 7070/7080/7090", s.Name, port.HostIP, port.Published)
		}
	}
	switch {
	case strings.HasPrefix(s.Name, "vesta-"):
		if !s.ReadOnly || s.User != "65532:65532" || !slices.Contains(s.CapDrop, "ALL") {
			t.Errorf("%s: read_only %t, user %q, cap_drop %v: want read-only, 65532:65532, ALL", s.Name, s.ReadOnly, s.User, s.CapDrop)
		}
		if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= 10*time.Second {
			t.Errorf("%s: stop_grace_period %v, want more than vesta's 10s stop", s.Name, s.StopGracePeriod)
		}
		if d, ok := s.DependsOn["redis"]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("%s does not wait for a healthy redis: %+v", s.Name, s.DependsOn)
		}
		checkTokenSecret(t, p, s)
	case s.Name == "prometheus":
		checkTokenSecret(t, p, s)
		fallthrough
	case s.Name == "grafana":
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s mounts %s: %v", s.Name, v.Source, err)
			}
		}
	}
}

// checkTokenSecret: the service has secret vesta-token, the file of
// deploy/secrets (which git ignores).
func checkTokenSecret(t *testing.T, p *types.Project, s types.ServiceConfig) {
	t.Helper()
	if !slices.ContainsFunc(s.Secrets, func(c types.ServiceSecretConfig) bool { return c.Source == "vesta-token" }) {
		t.Errorf("%s has no secret vesta-token", s.Name)
	}
	want, err := filepath.Abs(filepath.Join(root, "deploy", "secrets", "vesta-token"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Secrets["vesta-token"].File; got != want {
		t.Errorf("secret vesta-token is file %q, want %q", got, want)
	}
}
