package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
)

func TestTBCleanupsLIFOAndFatal(t *testing.T) {
	x := newTB(context.Background(), "x", t.TempDir())
	var order []int
	x.Cleanup(func() { order = append(order, 1) })
	x.Cleanup(func() { order = append(order, 2); x.Fatal("in a cleanup") })
	x.Cleanup(func() { order = append(order, 3) })
	err := try(func() { x.Fatalf("stop %d", 7) })
	if err == nil || err.Error() != "stop 7" || !x.Failed() {
		t.Fatalf("try: %v, failed %v", err, x.Failed())
	}
	x.runCleanups()
	if len(order) != 3 || order[0] != 3 || order[1] != 2 || order[2] != 1 {
		t.Fatalf("cleanups ran %v; want [3 2 1]", order)
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--providers etcd,zk", "--providers"},
		{"--duration 1s", "--duration"},
		{"--rate 5", "--rate"},
		{"--interval 0s", "--interval"},
		{"--providers etcd,etcd", "twice"},
		{"--standbys 9", "--standbys"},
		{"--min-handovers -1", "--min-handovers"},
		{"--min-handovers 5 --standbys 0", "--standbys 0"},
		{"--faults pause,nap", `--faults: "nap"`},
		{"--faults pause,pause", "twice"},
		{"--faults kill,clock --min-handovers 3", "--min-handovers 3 with --faults"},
		{"--seed x", "-seed"},
	} {
		_, err := parseFlags(append(strings.Fields(c.args), "--repo", "."))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error naming %s", c.args, err, c.want)
		}
	}
	o, err := parseFlags([]string{"--seed", "7", "--repo", "."})
	if err != nil || o.seed != 7 || len(o.providers) != 2 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"--ci", "--repo", "."})
	if err != nil || o.seed != 1 || o.duration != 30*time.Second || o.interval != 3*time.Second || len(o.providers) != 2 || o.minHandovers != 10 || o.standbys != 2 {
		t.Fatalf("--ci: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"--faults", "pause, store-cut", "--repo", "."})
	if err != nil || len(o.faults) != 2 || o.faults[1] != "store-cut" {
		t.Fatalf("--faults pause, store-cut: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"--ci", "--seed", "5", "--duration", "40s", "--repo", "."})
	if err != nil || o.seed != 5 || o.duration != 40*time.Second || o.interval != 3*time.Second {
		t.Fatalf("--ci --seed 5 --duration 40s: %+v, %v", o, err)
	}
}

func TestServerKinds(t *testing.T) {
	f := &fleet{store: map[*server]string{}}
	for i, name := range []string{"A", "B", "S1"} {
		s := &server{name: name}
		f.servers = append(f.servers, s)
		f.store[s] = []string{"mysql", "redis", ""}[i]
	}
	for i, want := range []string{"client rest-A rpc-A seq-mariadb seq-mariadb-A", "client rest-B rpc-B seq-redis seq-redis-B", "client rest-S1 rpc-S1"} {
		if got := strings.Join(f.serverKinds(f.servers[i]), " "); got != want {
			t.Errorf("%s: %q, want %q", f.servers[i].name, got, want)
		}
	}
	if got := strings.Join(f.storeKinds("mysql"), " "); got != "seq-mariadb seq-mariadb-A" {
		t.Errorf("mysql: %q", got)
	}
}

// Every fault kind has a unique name, and the CI run's providers run
// them all between them.
func TestFaultKinds(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range faultKinds {
		if seen[k.name] {
			t.Errorf("kind %s twice", k.name)
		}
		seen[k.name] = true
		if k.only != "" && k.only != "etcd" && k.only != "sentinel" {
			t.Errorf("kind %s only for %q", k.name, k.only)
		}
	}
}

// The schedule runs every kind, holds at most two faults at once, never
// two sharing a resource, and replays from its seed.
func TestScheduleOverlaps(t *testing.T) {
	run := func(seed uint64) []faultRecord {
		f := &fleet{t: newTB(context.Background(), "x", t.TempDir()), store: map[*server]string{}, classes: map[string]int{}}
		var mu sync.Mutex
		held := map[string]int{}
		maxHeld, total := 0, 0
		var kinds []faultKind
		for i, res := range []string{"a", "b", "c", "a"} {
			kinds = append(kinds, faultKind{name: fmt.Sprintf("k%d-%s", i, res), free: freeOf(res),
				inject: func(f *fleet, rng *rand.Rand) injection {
					f.claim(res)
					mu.Lock()
					defer mu.Unlock()
					if held[res]++; held[res] > 1 {
						t.Errorf("two faults hold %s", res)
					}
					total++
					maxHeld = max(maxHeld, total)
					return injection{target: res, hold: between(rng, 20*time.Millisecond, 60*time.Millisecond), heal: func() {
						mu.Lock()
						defer mu.Unlock()
						held[res]--
						total--
					}}
				}})
		}
		out, failed := f.schedule(context.Background(), rand.New(rand.NewPCG(seed, 1)), kinds, scheduleOptions{end: time.Now().Add(time.Second), interval: 40 * time.Millisecond})
		if len(failed) > 0 {
			t.Errorf("failed: %v", failed)
		}
		if maxHeld > 2 || maxHeld < 1 {
			t.Errorf("held %d at once", maxHeld)
		}
		if total != 0 {
			t.Errorf("%d faults left held", total)
		}
		return out
	}
	a, b := run(7), run(7)
	seen := map[string]bool{}
	overlapped := 0
	for i, fl := range a {
		seen[fl.Kind] = true
		if fl.End.IsZero() {
			t.Errorf("fault %d never healed", i+1)
		}
		if i > 0 && fl.Start.Before(a[i-1].End) {
			overlapped++
		}
	}
	if len(seen) != 4 {
		t.Errorf("kinds run: %v; want all 4", seen)
	}
	if overlapped == 0 {
		t.Errorf("no fault of %d overlapped another", len(a))
	}
	n := min(len(a), len(b), 8)
	for i := range n {
		if a[i].Kind != b[i].Kind {
			t.Fatalf("seed 7 replayed fault %d as %s, first %s", i+1, b[i].Kind, a[i].Kind)
		}
	}
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	fr := &frames{w: bufio.NewWriter(&buf)}
	fr.write(streamEmbedded, []core.ID{1, 1 << 62, 42}, nil)
	fr.write(streamClient, []core.ID{7}, errors.New("down"))
	s, ok, vs, err := readFrame(&buf)
	if err != nil || s != streamEmbedded || !ok || len(vs) != 3 || vs[1] != 1<<62 {
		t.Fatalf("frame 1: %d %v %v %v", s, ok, vs, err)
	}
	s, ok, vs, err = readFrame(&buf)
	if err != nil || s != streamClient || ok || len(vs) != 0 {
		t.Fatalf("frame 2: %d %v %v %v", s, ok, vs, err)
	}
	if _, _, _, err := readFrame(&buf); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v", err)
	}
}
