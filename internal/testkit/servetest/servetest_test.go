package servetest_test

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/servetest"
)

// fakeVesta writes a program that stands for vesta: it checks it was run
// as `serve`, then runs body (sh).
func fakeVesta(t *testing.T, body string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vesta")
	script := "#!/bin/sh\n[ \"$1\" = serve ] || { echo \"not serve: $*\" >&2; exit 2; }\n" + body
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestRun: the server gets the caller's VESTA_* variables and JSON logs
// but none of the test's own VESTA_* ones, runs in Dir under Wrap, and
// every stderr line (the last without a newline too) reaches Line before
// Exit, and Exit before Exited.
func TestRun(t *testing.T) {
	t.Setenv("VESTA_STRAY", "from the test's environment")
	bin := fakeVesta(t, `echo "x=$VESTA_X" >&2
echo "stray=${VESTA_STRAY:-unset} format=$VESTA_LOG_FORMAT" >&2
echo "dir=$(pwd)" >&2
printf 'last' >&2
exit 3
`)
	dir := t.TempDir()
	var (
		mu    sync.Mutex
		lines []string
		exit  = -1
	)
	r, err := servetest.Start(servetest.Config{
		Bin:  bin,
		Env:  map[string]string{"VESTA_X": "1"},
		Wrap: []string{"sh", "-c", `exec "$0" "$@"`},
		Dir:  dir,
		Line: func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() },
		Exit: func(st *os.ProcessState) { mu.Lock(); exit = st.ExitCode(); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Exited():
	case <-time.After(30 * time.Second):
		r.Kill()
		t.Fatal("the fake server did not exit")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"x=1", "stray=unset format=json", "dir=" + dir, "last"}
	if !slices.Equal(lines, want) {
		t.Errorf("lines %q; want %q", lines, want)
	}
	if exit != 3 || r.State().ExitCode() != 3 || r.Running() {
		t.Errorf("Exit saw %d, State %v, Running %v; want 3, 3, false", exit, r.State(), r.Running())
	}
}

// TestKill: Kill ends a server that would run on, and waits for it; a
// Signal after the exit is no error.
func TestKill(t *testing.T) {
	bin := fakeVesta(t, "echo up >&2\nexec sleep 60\n")
	up := make(chan struct{})
	var once sync.Once
	r, err := servetest.Start(servetest.Config{Bin: bin, Line: func(string) { once.Do(func() { close(up) }) }})
	if err != nil {
		t.Fatal(err)
	}
	<-up
	if !r.Running() || r.State() != nil {
		t.Fatalf("Running %v, State %v before Kill; want true, nil", r.Running(), r.State())
	}
	r.Kill()
	if r.Running() || r.State() == nil || r.State().ExitCode() != -1 {
		t.Fatalf("after Kill: Running %v, State %v; want ended by a signal", r.Running(), r.State())
	}
	if err := r.Signal(os.Interrupt); err != nil {
		t.Errorf("Signal after the exit: %v; want nil", err)
	}
}

func TestStartWithoutBin(t *testing.T) {
	if _, err := servetest.Start(servetest.Config{}); err == nil {
		t.Fatal("Start without Bin: no error")
	}
}
