package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/gentest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid"
)

// reexecEnv marks a child process of this test binary that runs main.
const reexecEnv = "VESTA_CMD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(reexecEnv) == "1" {
		os.Unsetenv(reexecEnv)
		main() // exits
	}
	os.Exit(isolated(m))
}

// etcConfig stands for /etc/vesta/vesta.yaml in the tests.
var etcConfig string

// isolated runs the tests away from the user's files: XDG_STATE_HOME
// (gen's time guard) and XDG_CONFIG_HOME in a directory of their own, and
// the search path's /etc/vesta/vesta.yaml moved there, so a config file
// of this machine's cannot change what the tests run.
func isolated(m *testing.M) int {
	dir, err := os.MkdirTemp("", "vesta-cmd-test-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	etcConfig = filepath.Join(dir, "etc", "vesta", "vesta.yaml")
	searchPath = func() []string {
		p := conf.SearchPath(nil)
		return append(p[:len(p)-1], etcConfig)
	}
	return m.Run()
}

// proc is one `vesta` process started from this test binary.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

// startVesta starts `vesta args...` as a process of its own in dir, with
// no VESTA_* variable of the test's environment.
func startVesta(t testing.TB, dir string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], args...)}
	p.cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VESTA_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, reexecEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// wait returns the exit code.
func (p *proc) wait(t testing.TB) int {
	t.Helper()
	err := p.cmd.Wait()
	if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// Two `vesta gen --servers DEAD -n 20000` processes started together from
// two working directories (each its own ./vesta-data): on a default
// machine ID they would issue the same IDs. There is none: both refuse
// with a usage error naming machine.id and --machine. With machine IDs
// chosen, their 40000 IDs hold no duplicate.
func TestTwoGenProcessesOnDefaults(t *testing.T) {
	ln := nettest.Loopback(t)
	dead := ln.Addr().String()
	ln.Close()
	dirs := []string{t.TempDir(), t.TempDir()}

	var ps []*proc
	for _, dir := range dirs {
		ps = append(ps, startVesta(t, dir, "gen", "--servers", dead, "-n", "20000"))
	}
	for i, p := range ps {
		if code := p.wait(t); code != 2 {
			t.Fatalf("process %d: exit %d; want 2 (usage). stderr:\n%s", i, code, p.stderr.String())
		}
		for _, w := range append([]string{"machine.id", "--machine", "VESTA_MACHINE_ID"}, machineid.Providers()...) {
			if !strings.Contains(p.stderr.String(), w) {
				t.Errorf("process %d: stderr %q does not say %q", i, p.stderr.String(), w)
			}
		}
		if p.stdout.Len() != 0 {
			t.Errorf("process %d printed %d bytes of IDs", i, p.stdout.Len())
		}
		if _, err := os.Stat(dirs[i] + "/vesta-data"); err == nil {
			t.Errorf("process %d created its data directory before refusing", i)
		}
	}

	ps = ps[:0]
	for i, dir := range dirs {
		ps = append(ps, startVesta(t, dir, "gen", "--servers", dead, "-n", "20000", "--machine", []string{"1", "2"}[i]))
	}
	var all []core.ID
	codec, _ := core.NewCodec(core.Sorted, time.Time{})
	for i, p := range ps {
		if code := p.wait(t); code != 0 {
			t.Fatalf("process %d with --machine: exit %d: %s", i, code, p.stderr.String())
		}
		ids := parseIDs(t, p.stdout.String())
		if len(ids) != 20000 {
			t.Fatalf("process %d: %d IDs; want 20000", i, len(ids))
		}
		for _, id := range ids {
			if e := codec.Explain(id); e.Method != core.Embedded || e.Machine != core.MachineID(i+1) {
				t.Fatalf("process %d: %d is %+v; want the fallback's, machine %d", i, id, e, i+1)
			}
		}
		all = append(all, ids...)
	}
	gentest.Unique(t, all)
}

// serveConfig writes a YAML config for one server of a fleet on rs:
// server_range 1000-1004 of which Redis leases hand out 1000-1003 only
// (machine.redis.server_range, in the config every host shares), REST on
// a free port, its own time guard directory; extra holds this host's own
// machine keys.
func serveConfig(t testing.TB, rs string, extra string) string {
	return writeConfig(t, t.TempDir(), `
id: {max_borrow: 0}
machine:
  server_range: 1000-1004
  redis:
    addrs: [`+rs+`]
    key_prefix: chain
    lease_ttl: 3s
    max_clock_skew: 100ms
    server_range: 1000-1003
`+extra+`central: {listen: ""}
rest: {listen: "127.0.0.1:0"}
`)
}

// [redis, static], the first server started while Redis is down: on the
// default ranges its static ID could be leased to another server, so the
// chain is refused, naming both keys. With the lease range narrowed in the
// shared config, the first server falls back to its static ID outside it,
// four servers lease the four IDs of the lease range, a fifth leasing
// server is refused (never the static ID), and a ledger of every ID the
// five live servers issued holds no duplicate.
func TestRedisStaticChainFleet(t *testing.T) {
	rs := redistest.Start(t)
	rs.Established("vesta") // the servers start at once

	r := cli(t, "", "serve", "--config", serveConfig(t, rs.Addr(), "  providers: [redis, static]\n  id: 1003\n"))
	if r.code != 2 || !strings.Contains(r.stderr, "machine.id: 1003 lies in the IDs leases hand out (machine.redis.server_range 1000-1003)") {
		t.Fatalf("static 1003 inside the lease range: exit %d; want 2 naming machine.id and machine.redis.server_range: %s", r.code, r.stderr)
	}
	t.Setenv("VESTA_MACHINE_REDIS_SERVER_RANGE", "") // the default: all of server_range
	r = cli(t, "", "serve", "--config", serveConfig(t, rs.Addr(), "  providers: [redis, static]\n  id: 1004\n"))
	if r.code != 2 || !strings.Contains(r.stderr, "machine.redis.server_range 1000-1004, all of machine.server_range by default") {
		t.Fatalf("static 1004 on the default lease range: exit %d; want 2 naming both keys: %s", r.code, r.stderr)
	}
	os.Unsetenv("VESTA_MACHINE_REDIS_SERVER_RANGE")

	rs.Stop()
	first := startServe(t, "--config", serveConfig(t, rs.Addr(), "  providers: [redis, static]\n  id: 1004\n"))
	if m := machineOf(t, first); m != 1004 {
		t.Fatalf("the server started with Redis down has machine %d; want its static 1004", m)
	}
	rs.Restart()
	servers := []served{first}
	held := map[int]bool{1004: true}
	for range 4 {
		s := startServe(t, "--config", serveConfig(t, rs.Addr(), "  providers: [redis]\n"))
		m := machineOf(t, s)
		if m < 1000 || m > 1003 || held[m] {
			t.Fatalf("a leasing server got machine %d (held: %v); want a free one of 1000-1003", m, held)
		}
		held[m] = true
		servers = append(servers, s)
	}
	r = cli(t, "", "serve", "--config", serveConfig(t, rs.Addr(), "  providers: [redis]\n"))
	if r.code == 0 || !strings.Contains(r.stderr, "1000-1003") {
		t.Fatalf("a fifth leasing server on four lease IDs: exit %d: %s", r.code, r.stderr)
	}

	// The ledger: every ID of every server, issued in rounds across them.
	var all []core.ID
	codec, _ := core.NewCodec(core.Sorted, time.Time{})
	for range 5 {
		for _, s := range servers {
			var v struct{ IDs []string }
			if getJSON(t, s, "/v1/ids?count=2000", &v); len(v.IDs) != 2000 {
				t.Fatalf("/v1/ids?count=2000: %d IDs", len(v.IDs))
			}
			m := machineOf(t, s)
			for _, txt := range v.IDs {
				id, err := core.ParseID(txt)
				if err != nil {
					t.Fatal(err)
				}
				if e := codec.Explain(id); int(e.Machine) != m || e.Method != core.REST {
					t.Fatalf("server on machine %d issued %+v", m, e)
				}
				all = append(all, id)
			}
		}
	}
	gentest.Unique(t, all)
	t.Logf("%d IDs from machines %v: no duplicate", len(all), held)
}
