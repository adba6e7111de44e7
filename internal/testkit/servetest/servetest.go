package servetest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Config says how to run one `vesta serve`.
type Config struct {
	// Bin is the vesta binary; required.
	Bin string
	// Env holds the VESTA_* variables the server starts with; Environ
	// says what else its environment holds.
	Env map[string]string
	// Wrap is a command prefix that must exec Bin (`ip netns exec NS`,
	// `sh -c 'ulimit -n 256 && exec "$0" "$@"'`); nil runs Bin itself.
	Wrap []string
	// Dir is the working directory, so that a relative path in the
	// configuration cannot land in the repository; "" is the caller's.
	Dir string
	// Line receives every line of the server's stderr, without its
	// newline, in order, on the Run's reader goroutine; nil discards.
	Line func(line string)
	// Exit, when set, receives the process's state once it has exited
	// and Line has had every line, before Exited closes.
	Exit func(state *os.ProcessState)
}

// Run is one `vesta serve` process. Its methods are safe for concurrent
// use.
type Run struct {
	cmd    *exec.Cmd
	exited chan struct{}

	mu    sync.Mutex
	state *os.ProcessState // set before exited closes
}

// Environ is the environment of a server started with env: this process's
// own without VESTA_* variables, then env's in key order, then
// VESTA_LOG_FORMAT=json.
func Environ(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VESTA_") {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return append(out, "VESTA_LOG_FORMAT=json")
}

// Start starts `vesta serve` as cfg says and returns at once. The process
// gets SIGKILL when the thread that started it ends (Linux), so that a
// test binary or nemesis that dies leaves no server behind.
func Start(cfg Config) (*Run, error) {
	if cfg.Bin == "" {
		return nil, errors.New("servetest: Config.Bin is empty")
	}
	argv := append(slices.Clone(cfg.Wrap), cfg.Bin, "serve")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = Environ(cfg.Env)
	cmd.Dir = cfg.Dir
	cmd.SysProcAttr = procAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("servetest: starting %s serve: %w", cfg.Bin, err)
	}
	r := &Run{cmd: cmd, exited: make(chan struct{})}
	go r.read(stderr, cfg.Line, cfg.Exit)
	return r, nil
}

// read hands every line to line until the process closes its stderr, then
// reaps it.
func (r *Run) read(stderr io.Reader, line func(string), exit func(*os.ProcessState)) {
	br := bufio.NewReaderSize(stderr, 64<<10)
	for {
		s, err := br.ReadString('\n')
		if s != "" && line != nil {
			line(strings.TrimSuffix(s, "\n"))
		}
		if err != nil {
			break
		}
	}
	_ = r.cmd.Wait() // the exit is the state's to tell
	r.mu.Lock()
	r.state = r.cmd.ProcessState
	r.mu.Unlock()
	if exit != nil {
		exit(r.cmd.ProcessState)
	}
	close(r.exited)
}

// Pid is the server's process ID (under a prefix that execs it, the
// server's own).
func (r *Run) Pid() int { return r.cmd.Process.Pid }

// Exited is closed once the process has exited and its output is read.
func (r *Run) Exited() <-chan struct{} { return r.exited }

// Running reports whether the process has not exited.
func (r *Run) Running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// State is the process's exit state; nil while it runs.
func (r *Run) State() *os.ProcessState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// Signal sends sig to the process; one that has exited gets nothing and
// no error.
func (r *Run) Signal(sig os.Signal) error {
	if !r.Running() {
		return nil
	}
	if err := r.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Kill ends the process with SIGKILL, as a crash would, and waits until
// it has exited and its output is read.
func (r *Run) Kill() {
	_ = r.Signal(syscall.SIGKILL) // it may have exited meanwhile
	<-r.exited
}
