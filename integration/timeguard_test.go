package integration_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// TestTimeGuardBehind restarts a server whose time guard says IDs were
// issued up to an instant ahead of the clock (as after the clock was set
// back): the mark is written by hand, ahead of now, in the guard's file for
// a static machine ID or in Redis beside the lease for a leased one. Ahead
// by less than time_guard.max_startup_wait the server waits, says so, and
// then issues IDs above the mark; ahead by more it exits non-zero with an
// error naming the gap, leaving the mark as it was (and a lease released).
func TestTimeGuardBehind(t *testing.T) {
	rds := redistest.Start(t)
	rc := redisClient(t, rds)
	// A mark 3s ahead: with max_borrow 1s the server must wait about 2-3s.
	const waitAhead, refuseAhead = 3 * time.Second, time.Hour

	type store struct {
		env   func(t *testing.T, machine int) map[string]string
		write func(t *testing.T, env map[string]string, machine int, mark time.Time)
		read  func(t *testing.T, env map[string]string, machine int) string
	}
	file := store{
		env: func(t *testing.T, machine int) map[string]string {
			return serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", strconv.Itoa(machine))
		},
		write: func(t *testing.T, env map[string]string, machine int, mark time.Time) {
			b, _ := json.Marshal(map[string]any{"machine": machine, "mark_unix_ms": mark.UnixMilli(),
				"mark": mark.UTC().Format(time.RFC3339Nano)})
			if err := os.WriteFile(guardFile(env, machine), b, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		read: func(t *testing.T, env map[string]string, machine int) string {
			return strconv.FormatInt(fileMark(t, env, machine), 10)
		},
	}
	leased := store{
		env: func(t *testing.T, machine int) map[string]string {
			// A range of one ID, so the lease is the one whose mark we set,
			// on a Redis in service: a mark ahead of the clock, not a
			// quarantine, is what the server waits for.
			rds.Established(t.Name())
			m := strconv.Itoa(machine)
			return serverEnv(t, rds, t.Name(), 2*time.Second, "VESTA_MACHINE_SERVER_RANGE", m+"-"+m)
		},
		write: func(t *testing.T, env map[string]string, machine int, mark time.Time) {
			_, key := redislease.Keys(env["VESTA_MACHINE_REDIS_KEY_PREFIX"], core.MachineID(machine))
			if err := rc.Set(context.Background(), key, mark.UnixMilli(), 0).Err(); err != nil {
				t.Fatal(err)
			}
		},
		read: func(t *testing.T, env map[string]string, machine int) string {
			_, key := redislease.Keys(env["VESTA_MACHINE_REDIS_KEY_PREFIX"], core.MachineID(machine))
			v, err := rc.Get(context.Background(), key).Result()
			if err != nil {
				t.Fatal(err)
			}
			return v
		},
	}

	for _, tc := range []struct {
		name    string
		store   store
		machine int
		refuse  bool
	}{
		{"file/waits", file, 1000, false},
		{"file/refuses", file, 1001, true},
		{"redis/waits", leased, 1002, false},
		{"redis/refuses", leased, 1003, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := tc.store.env(t, tc.machine)
			if tc.refuse {
				env["VESTA_TIME_GUARD_MAX_STARTUP_WAIT"] = "2s"
				mark := time.Now().Add(refuseAhead).Truncate(time.Millisecond)
				tc.store.write(t, env, tc.machine, mark)
				p := launch(t, "vesta", env)
				if code := p.waitExit(); code != 1 {
					t.Fatalf("exit code %d; want 1:\n%s", code, p.tail(10))
				}
				out := p.output()
				if strings.Contains(out, `"msg":"serving"`) {
					t.Error("it served")
				}
				requireGap(t, out, tc.machine, refuseAhead)
				if got, want := tc.store.read(t, env, tc.machine), strconv.FormatInt(mark.UnixMilli(), 10); got != want {
					t.Errorf("the mark is %s after refusing; want it untouched, %s", got, want)
				}
				if prefix := env["VESTA_MACHINE_REDIS_KEY_PREFIX"]; prefix != "" {
					key, _ := redislease.Keys(prefix, core.MachineID(tc.machine))
					if n, err := rc.Exists(context.Background(), key).Result(); err != nil || n != 0 {
						t.Errorf("the lease %s is still held after refusing (%d, %v); a restart would find the ID taken", key, n, err)
					}
				}
				return
			}

			mark := time.Now().Add(waitAhead).Truncate(time.Millisecond)
			tc.store.write(t, env, tc.machine, mark)
			p := launch(t, "vesta", env)
			waiting, err := p.waitRecord(startTimeout, msgIs("clock is behind the time guard's mark; waiting"))
			if err != nil {
				t.Fatal(err)
			}
			// vesta's log writes a duration as text ("1.998s").
			text, _ := waiting["wait"].(string)
			if d, err := time.ParseDuration(text); err != nil || d <= 0 || d > waitAhead {
				t.Errorf("it says it waits %v; want a duration in (0, %v]", waiting["wait"], waitAhead)
			}
			if err := p.waitServing(); err != nil {
				t.Fatal(err)
			}
			if p.Machine != tc.machine {
				t.Fatalf("machine %d; want %d", p.Machine, tc.machine)
			}
			rc := dialRaw(t, p.Central)
			id, err := rc.genID()
			if err != nil {
				t.Fatal(err)
			}
			f := decode(id)
			if f.instant().Before(mark) || f.machine != uint64(tc.machine) {
				t.Errorf("first ID %d %v; want machine %d at or after the mark %s", id, f, tc.machine, mark.Format(time.RFC3339Nano))
			}
			stopAll(t, p)
			after, _ := strconv.ParseInt(tc.store.read(t, env, tc.machine), 10, 64)
			if end := f.instant().Add(time.Second); after < end.UnixMilli() {
				t.Errorf("mark after the stop: %d; want at least the end of the last ID's second, %d", after, end.UnixMilli())
			}
		})
	}
}

// guardFile is the file time guard of machine, in the time_guard.dir of a
// server's environment.
func guardFile(env map[string]string, machine int) string {
	return filepath.Join(env["VESTA_TIME_GUARD_DIR"], "machine-"+strconv.Itoa(machine)+".json")
}

// fileMark reads the mark of guardFile, in Unix milliseconds.
func fileMark(t testing.TB, env map[string]string, machine int) int64 {
	t.Helper()
	b, err := os.ReadFile(guardFile(env, machine))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		MarkUnixMs int64 `json:"mark_unix_ms"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m.MarkUnixMs
}

// gapRE finds the gap in the refusal: "..., 59m59.9s behind the mark ...".
var gapRE = regexp.MustCompile(`([0-9][0-9hms.µ]*) behind the mark`)

// requireGap fails t unless out holds the refusal naming machine and a
// gap within a minute of want.
func requireGap(t *testing.T, out string, machine int, want time.Duration) {
	t.Helper()
	line := out[strings.LastIndex(out, "\n")+1:]
	if !strings.HasPrefix(line, "vesta: ") || !strings.Contains(line, "machine "+strconv.Itoa(machine)) {
		t.Errorf("last line %q; want the refusal, naming machine %d", line, machine)
	}
	m := gapRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("the refusal does not name the gap: %q", line)
	}
	gap, err := time.ParseDuration(m[1])
	if err != nil || gap < want-time.Minute || gap > want+time.Minute {
		t.Errorf("the refusal names a gap of %q; want about %v: %q", m[1], want, line)
	}
}
