package integration_test

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
)

// TestTwoHostsOnDefaults runs `vesta gen --servers DEAD -n 20000` on two
// test hosts at once, each in a working directory of its own, with no
// configuration at all: its central server is down, so each would fall
// back to issuing IDs itself. Two hosts on defaults may not issue the same
// IDs (19,617 of 20,000 were, while there was a default machine ID): each
// refuses clearly (a usage error naming the machine-ID setting) or the IDs
// of both are distinct.
func TestTwoHostsOnDefaults(t *testing.T) {
	n := netnstest.New(t)
	hosts := []*netnstest.Host{n.Host("app1"), n.Host("app2")}
	const count = 20000
	bin := vestaBinary(t)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VESTA_") {
			env = append(env, kv)
		}
	}
	type result struct {
		stdout, stderr bytes.Buffer
		err            error
	}
	results := make([]*result, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		r := &result{}
		results[i] = r
		// The host's own loopback: nothing listens there.
		cmd := h.Command(bin, "gen", "--servers", "127.0.0.1:7070", "-n", strconv.Itoa(count))
		cmd.Dir, cmd.Env, cmd.SysProcAttr = t.TempDir(), env, procAttr()
		cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
		wg.Go(func() { r.err = cmd.Run() })
	}
	wg.Wait()

	led := newLedger(core.MaxPeak)
	for i, r := range results {
		name := hosts[i].Name
		var ee *exec.ExitError
		switch {
		case r.err == nil:
			s := led.stream(name, true, core.Central, core.Embedded)
			for _, line := range strings.Fields(r.stdout.String()) {
				id, err := strconv.ParseUint(line, 10, 64)
				if err != nil {
					t.Fatalf("%s printed %q: %v", name, line, err)
				}
				s.add(core.ID(id))
			}
			if len(s.ids) != count {
				t.Errorf("%s printed %d IDs; want %d", name, len(s.ids), count)
			}
			t.Logf("%s issued %d IDs", name, len(s.ids))
		case errors.As(r.err, &ee):
			msg := r.stderr.String()
			if code := ee.ExitCode(); code != 2 || !strings.Contains(msg, "machine") {
				t.Errorf("%s: exit code %d; want 2 (a usage error) naming the machine-ID setting; stderr:\n%s", name, code, msg)
			} else {
				t.Logf("%s refused (exit code 2): %s", name, strings.TrimSpace(msg))
			}
		default:
			t.Fatalf("%s: %v", name, r.err)
		}
	}
	if led.total() > 0 {
		led.check(t)
	}
}

// TestRestartChangedShape restarts a server on the same machine ID (a
// static one, its time guard in the same directory) with a changed ID
// shape, right after it issued under load: with an epoch 5s later (its
// time fields would repeat those of 5s ago) and with the other layout.
// The restarted server either refuses, naming the old and the new value,
// or issues IDs distinct from every ID issued before.
func TestRestartChangedShape(t *testing.T) {
	testkit.SkipShort(t, "about 20 s of restarts")
	layoutEpoch := core.Sorted.DefaultEpoch()
	for _, tc := range []struct {
		name   string
		kv     []string
		naming []string // what a refusal must name
	}{
		{"epoch 5s later", []string{"VESTA_ID_EPOCH", layoutEpoch.Add(5 * time.Second).Format("2006-01-02T15:04:05Z07:00")},
			[]string{layoutEpoch.Format("2006-01-02"), "epoch"}},
		{"layout vesta", []string{"VESTA_ID_LAYOUT", "vesta"}, []string{"sorted", "vesta"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1000")
			var all []core.ID
			// Paced over d, so that the restarted server's first
			// seconds, 5s back in time, meet seconds of the first one's
			// however long the restart takes (up to 4s).
			issue := func(p *proc, d time.Duration) int {
				conn := dialRaw(t, p.Central)
				n := 0
				for start := time.Now(); time.Since(start) < d; {
					ids, err := conn.genIDs(500)
					if err != nil {
						t.Fatalf("%s: %v", p.name, err)
					}
					all = append(all, ids...)
					n += len(ids)
					time.Sleep(20 * time.Millisecond)
				}
				return n
			}
			first := serve(t, "first", env)
			n1 := issue(first, 6*time.Second)
			stopAll(t, first)

			changed := maps.Clone(env)
			for i := 0; i+1 < len(tc.kv); i += 2 {
				changed[tc.kv[i]] = tc.kv[i+1]
			}
			restart := time.Now()
			second := launch(t, "restarted", changed)
			err := second.waitServing()
			t.Logf("the restarted server serves %v after start", time.Since(restart).Round(time.Millisecond))
			if err != nil {
				out := second.output()
				for _, want := range tc.naming {
					if !strings.Contains(out, want) {
						t.Errorf("the restarted server refused without naming %q:\n%s", want, second.tail(10))
					}
				}
				if second.running() {
					t.Fatal(err)
				}
				t.Logf("refused: %s", second.tail(3))
				return
			}
			n2 := issue(second, 3*time.Second)
			stopAll(t, second)
			dups := duplicates(all)
			if len(dups) > 0 {
				t.Errorf("%d IDs issued twice among %d (%d before the restart, %d after); the first: %v", len(dups), len(all), n1, n2, dups[:min(len(dups), 5)])
			} else {
				t.Logf("%d IDs before the restart, %d after: no duplicate", n1, n2)
			}
		})
	}
}
