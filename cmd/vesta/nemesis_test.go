package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// The nemesis build tag's clock hook (cmd/vesta/assemble/nemesis.go), on
// real binaries: built with the tag, `vesta serve` shifts its clock by the
// offset in VESTA_NEMESIS_CLOCK_FILE; the default build has no hook, and
// given the same environment refuses to start, naming the variable. Then a step back of the shifted clock issues
// nothing below what was issued, as docs/design/generator.md says (the
// checked path; borrow, then sleep).
func TestNemesisClock(t *testing.T) {
	testkit.SkipShort(t, "two builds of the binary")
	dir := t.TempDir()
	bins := map[string][]string{"tagged": {"-tags", "nemesis"}, "default": nil}
	var wg sync.WaitGroup
	errs := make(chan error, len(bins))
	for name, flags := range bins {
		wg.Go(func() {
			// No symbol tables: the link is most of the build's time.
			args := append([]string{"build", "-ldflags=-s -w"}, flags...)
			out, err := exec.Command("go", append(args, "-o", filepath.Join(dir, name), ".")...).CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("go build %s: %w\n%s", name, err, out)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	plainDir := t.TempDir()
	// Bounded: a default build that took the variable would serve on.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain := exec.CommandContext(ctx, filepath.Join(dir, "default"), "serve")
	plain.Env = nemesisEnv(plainDir, filepath.Join(plainDir, "clock"))
	out, err := plain.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), nemesisClockEnv+": unknown environment variable") {
		t.Errorf("default: serve with %s: %v; want exit 2 naming the variable as unknown\n%s", nemesisClockEnv, err, out)
	}
	tagged := startNemesis(t, filepath.Join(dir, "tagged"))
	codec, _ := core.NewCodec(core.Sorted, time.Time{})
	near := func(srv *nemesisServer, id core.ID, offset time.Duration) {
		t.Helper()
		e := codec.Explain(id)
		if e.Type != core.MinGranularity || e.Machine != 1000 {
			t.Fatalf("%s: ID %d is %+v; want min-granularity, machine 1000", srv.name, id, e)
		}
		if d := e.Instant.Sub(time.Now().Add(offset)); d.Abs() > 3*time.Second {
			t.Fatalf("%s: ID %d decodes to %s, %s from now%+v", srv.name, id, e.Instant, d, offset)
		}
	}
	var issued []core.ID // the tagged server's, in the order issued
	take := func() core.ID {
		t.Helper()
		id, status, _ := tagged.nextID(t)
		if status != http.StatusOK {
			t.Fatalf("tagged: GET /v1/id answered %d", status)
		}
		issued = append(issued, id)
		return id
	}
	near(tagged, take(), 0)

	// +1h: the tagged server's next IDs are an hour ahead, within a poll
	// or two.
	tagged.setClock(t, "+1h")
	tagged.waitLog(t, "nemesis clock: offset now 1h0m0s")
	near(tagged, take(), time.Hour)

	// A file that does not parse keeps the offset, and is said once.
	tagged.setClock(t, "soon")
	tagged.waitLog(t, "nemesis clock: the file does not read")
	time.Sleep(3 * nemesisPoll)
	near(tagged, take(), time.Hour)
	if n := strings.Count(tagged.log.String(), "the file does not read"); n != 1 {
		t.Errorf("tagged: the bad file logged %d times; want once", n)
	}

	// -1h, a step back of two hours below IDs already issued: the rest of
	// the unit last entered is issued, above everything before (the
	// checked path); past it the sequence would have to wait for the clock
	// to come back, so REST answers 503 unavailable at once, with a
	// Retry-After of about those two hours (borrow, then sleep;
	// docs/design/ceiling.md). Never a lower ID, never a repeat.
	tagged.setClock(t, "-1h")
	tagged.waitLog(t, "nemesis clock: offset now -1h0m0s")
	before := len(issued)
	var refused http.Header
	for range 2 << 10 { // a unit holds 1024 IDs of min-granularity
		id, status, h := tagged.nextID(t)
		if status != http.StatusOK {
			if status != http.StatusServiceUnavailable {
				t.Fatalf("tagged after the step back: GET /v1/id answered %d; want 200 or 503", status)
			}
			refused = h
			break
		}
		issued = append(issued, id)
	}
	if refused == nil {
		t.Fatalf("tagged: %d IDs issued after a step back of 2h; want at most the rest of one unit, then 503", len(issued)-before)
	}
	if after := issued[before:]; len(after) > 0 {
		near(tagged, after[len(after)-1], time.Hour)
	}
	if s, err := strconv.Atoi(refused.Get("Retry-After")); err != nil || s < 3600 {
		t.Errorf("tagged: 503 with Retry-After %q; want about the 2h the clock went back", refused.Get("Retry-After"))
	}
	// Not ready while it cannot issue, so that a balancer sends callers to
	// another server for those two hours.
	resp, err := tagged.http.Get("http://" + tagged.rest + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "resumes at") {
		t.Errorf("tagged: /readyz after the step back answered %d %s; want 503 saying when issuing resumes", resp.StatusCode, body)
	}
	// Strictly increasing: none below one issued before, none twice.
	for i := 1; i < len(issued); i++ {
		if issued[i] <= issued[i-1] {
			t.Fatalf("tagged: ID %d (#%d) is not above %d (#%d), issued before it", issued[i], i, issued[i-1], i-1)
		}
	}
	t.Logf("tagged: %d IDs before the step back, %d after it, then 503 (Retry-After %ss)",
		before, len(issued)-before, refused.Get("Retry-After"))
	if err := tagged.stop(); err != nil {
		t.Errorf("%s: %v\n%s", tagged.name, err, tagged.log)
	}
}

// nemesisPoll is how often the tagged build reads its clock file.
const nemesisPoll = 50 * time.Millisecond

// nemesisClockEnv is the tagged build's clock variable (conf.EnvNemesisClock,
// which only that build declares).
const nemesisClockEnv = "VESTA_NEMESIS_CLOCK_FILE"

// nemesisEnv is the environment of TestNemesisClock's servers: this
// process's but for VESTA_* variables, then free ports of 127.0.0.1,
// min-granularity IDs, machine ID 1000, the time guard in dir and the
// clock file.
func nemesisEnv(dir, clock string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VESTA_") {
			env = append(env, kv)
		}
	}
	return append(env, "VESTA_CENTRAL_LISTEN=127.0.0.1:0", "VESTA_REST_LISTEN=127.0.0.1:0",
		"VESTA_METRICS_LISTEN=127.0.0.1:0", "VESTA_MACHINE_ID=1000", "VESTA_TIME_GUARD_DIR="+filepath.Join(dir, "guard"),
		"VESTA_ID_TYPE=min-granularity", nemesisClockEnv+"="+clock)
}

// nemesisServer is one `vesta serve` process of TestNemesisClock.
type nemesisServer struct {
	name  string
	clock string // its VESTA_NEMESIS_CLOCK_FILE
	rest  string
	log   *syncBuffer
	cmd   *exec.Cmd
	done  chan error
	http  *http.Client

	stopOnce sync.Once
	stopErr  error
}

// startNemesis runs bin's `vesta serve` on free ports of 127.0.0.1, with
// min-granularity IDs, machine ID 1000, its own time guard directory and a
// clock file reading 0; it is stopped when the test ends.
func startNemesis(t *testing.T, bin string) *nemesisServer {
	t.Helper()
	dir := t.TempDir()
	s := &nemesisServer{name: filepath.Base(bin), clock: filepath.Join(dir, "clock"), log: new(syncBuffer),
		done: make(chan error, 1), http: &http.Client{Timeout: 10 * time.Second}}
	s.setClock(t, "0")
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = nemesisEnv(dir, s.clock)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { _ = s.stop() })
	srv, exited := awaitServing(t, s.name+": serve", s.log, s.done)
	if exited != nil {
		t.Fatalf("%s: serve exited before serving: %v\n%s", s.name, *exited, s.log)
	}
	s.rest = srv.rest
	return s
}

// setClock replaces the clock file at once (a rename: never half written).
func (s *nemesisServer) setClock(t *testing.T, offset string) {
	t.Helper()
	tmp := s.clock + ".tmp"
	if err := os.WriteFile(tmp, []byte(offset+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.clock); err != nil {
		t.Fatal(err)
	}
}

// nextID is GET /v1/id: the ID when the status is 200, and the headers.
func (s *nemesisServer) nextID(t *testing.T) (core.ID, int, http.Header) {
	t.Helper()
	resp, err := s.http.Get("http://" + s.rest + "/v1/id")
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, resp.StatusCode, resp.Header
	}
	var body struct{ ID string }
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%s: %q: %v", s.name, b, err)
	}
	id, err := core.ParseID(body.ID)
	if err != nil {
		t.Fatalf("%s: %q: %v", s.name, b, err)
	}
	return id, resp.StatusCode, resp.Header
}

// waitLog waits until the server has logged msg.
func (s *nemesisServer) waitLog(t *testing.T, msg string) {
	t.Helper()
	waittest.Until(t, fmt.Sprintf("%s to log %q", s.name, msg), func() bool { return strings.Contains(s.log.String(), msg) })
}

// stop ends the server with SIGTERM, as an operator would, and returns a
// failed exit; a second stop returns the first one's result.
func (s *nemesisServer) stop() error {
	s.stopOnce.Do(func() {
		s.http.CloseIdleConnections()
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			s.stopErr = err
		}
		select {
		case err := <-s.done:
			s.stopErr = errors.Join(s.stopErr, err)
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
			s.stopErr = errors.Join(s.stopErr, errors.New("no exit within 15s of SIGTERM"))
		}
	})
	return s.stopErr
}
