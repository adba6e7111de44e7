package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
)

// reexecEnv marks a child process of this test binary that runs main.
const reexecEnv = "VESTA_CMD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(reexecEnv) == "1" {
		os.Unsetenv(reexecEnv)
		main() // exits
	}
	os.Exit(m.Run())
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
		for _, w := range []string{"machine.id", "--machine", "VESTA_MACHINE_ID", "redis", "k8s", "iptable"} {
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
	checkNoDuplicate(t, all)
}
