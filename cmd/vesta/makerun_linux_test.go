package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
)

// `make run`: serve with nothing but the machine ID chosen in the open
// runs on the defaults (./vesta-data, 127.0.0.1:7070 and :7080); without
// the choice it refuses (TestBadInput).
//
// The default ports are the machine's, and someone's `make run` may hold
// them while the tests run: the server runs in a network namespace of its
// own, whose loopback has every port free.
func TestServeMakeRun(t *testing.T) {
	testkit.SkipShort(t, "a build of the binary and a network namespace (root)")
	bin := filepath.Join(t.TempDir(), "vesta")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	h := netnstest.New(t).Host("make-run")
	dir := t.TempDir()
	cmd := h.Command(bin, "serve", "--machine", "1023")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VESTA_LOG_FORMAT=text")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var log strings.Builder
	serving := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "msg=serving") {
				serving <- sc.Text()
			}
		}
	}()
	var line string
	select {
	case line = <-serving:
	case <-done:
		t.Fatalf("serve exited before serving:\n%s", log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start within 30s")
	}
	if !strings.Contains(line, "central=127.0.0.1:7070") || !strings.Contains(line, "rest=127.0.0.1:7080") {
		t.Fatalf("serving on other addresses than the defaults: %s", line)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: h.Dial}, Timeout: 5 * time.Second}
	resp, err := hc.Get("http://127.0.0.1:7080/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"machine":1023`) {
		t.Fatalf("/v1/info %d %s", resp.StatusCode, body)
	}
	if c, err := h.Dial(context.Background(), "tcp", "127.0.0.1:7070"); err != nil {
		t.Errorf("RPC on the default 127.0.0.1:7070: %v", err)
	} else {
		c.Close()
	}
	cmd.Process.Signal(syscall.SIGTERM)
	<-done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, log.String())
	}
	// The one start-up line says what runs, as whom and from which file.
	for _, w := range []string{"version=", "machine=1023 provider=static", "config=none"} {
		if !strings.Contains(line, w) {
			t.Errorf("the start-up line lacks %q: %s", w, line)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "vesta-data", "machine-1023.json")); err != nil {
		t.Fatal(err)
	}
}

// A refused configuration exits 2 naming its key even while the port it
// would listen on is taken: judged before anything listens.
func TestServeRefusedBeforeListening(t *testing.T) {
	ln := nettest.Loopback(t)
	defer ln.Close()
	for _, m := range []string{"5", "5000"} { // outside the server range; outside every range
		r := cli(t, "", "serve", "--machine", m, "--central-listen", ln.Addr().String(), "--rest-listen", "",
			"--data-dir", t.TempDir())
		if r.code != 2 || !strings.Contains(r.stderr, "machine.id") || strings.Contains(r.stderr, "address already in use") {
			t.Errorf("--machine %s: exit %d, stderr %q; want 2 naming machine.id, not the port", m, r.code, r.stderr)
		}
	}
}
