package peerrate_test

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/peerrate"
	"github.com/vesta-go/vesta/internal/testkit/logtest"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func TestBucket(t *testing.T) {
	l := peerrate.New(3, time.Second, 10)
	if w := l.Wait("a", t0); w != 0 || l.Len() != 0 {
		t.Fatalf("Wait of an unknown peer = %v with %d entries; want 0, none made", w, l.Len())
	}
	for i := range 3 {
		if ok, _, _ := l.Spend("a", t0); !ok {
			t.Fatalf("spend %d of a burst of 3 refused", i+1)
		}
	}
	ok, wait, _ := l.Spend("a", t0)
	if ok || wait != time.Second {
		t.Fatalf("fourth spend: %v, wait %v; want refused for 1s", ok, wait)
	}
	l.Spend("a", t0.Add(500*time.Millisecond))
	if w := l.Wait("a", t0.Add(500*time.Millisecond)); w != 500*time.Millisecond {
		t.Fatalf("Wait = %v; want 500ms", w)
	}
	if ok, _, _ := l.Spend("b", t0); !ok {
		t.Fatal("another peer is refused")
	}
	ok, _, refused := l.Spend("a", t0.Add(time.Second))
	if !ok || refused != 2 {
		t.Fatalf("spend after a second: %v, %d refused; want served, 2 refused before", ok, refused)
	}
	if ok, _, refused := l.Spend("a", t0.Add(time.Hour)); !ok || refused != 0 {
		t.Fatalf("spend an hour on: %v, %d; want served, none refused", ok, refused)
	}
}

// TestBounded: many peers never hold more than the cap; entries whose
// buckets are full again leave as new ones come.
func TestBounded(t *testing.T) {
	l := peerrate.New(2, time.Second, 100)
	for i := range 100_000 {
		l.Spend(strconv.Itoa(i), t0)
		if n := l.Len(); n > 100 {
			t.Fatalf("%d entries after %d peers; want at most 100", n, i+1)
		}
	}
	// Two seconds on, every bucket is full: one new peer clears them.
	l.Spend("late", t0.Add(2*time.Second))
	if n := l.Len(); n != 1 {
		t.Fatalf("%d entries after the others' buckets filled up; want 1", n)
	}
	// A peer pushed out at the cap starts again with a full burst.
	l = peerrate.New(1, time.Hour, 2)
	l.Spend("a", t0)
	l.Spend("b", t0)
	l.Spend("c", t0)
	if ok, _, _ := l.Spend("a", t0); !ok || l.Len() != 2 {
		t.Fatalf("the least recently used peer: %v, %d entries; want pushed out, so served", ok, l.Len())
	}
}

func TestWarn(t *testing.T) {
	var buf logtest.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	l := peerrate.New(1, time.Hour, 10)
	for range 5 {
		l.Warn(log, "10.0.0.1", "bad", "remote", "10.0.0.1:1")
	}
	l.Warn(log, "10.0.0.2", "bad", "remote", "10.0.0.2:1")
	if n := strings.Count(buf.String(), "msg=bad"); n != 2 || !strings.Contains(buf.String(), "suppressed=0") {
		t.Fatalf("log:\n%s\nwant one line for each of two peers", buf.String())
	}
}
