package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"sort"
	"sync"
	"testing"
)

// stopRun is the value tb panics with on Fatal: recovered at the top of
// the run (or of a fault), it ends what was being done, and the
// cleanups still run.
type stopRun struct{ msg string }

func (s stopRun) String() string { return s.msg }

// tb lets the test kits of internal/ run outside a test: cleanups run
// last-in first-out at the end, temporary directories live under one
// root, Fatal logs and panics with stopRun.
type tb struct {
	testing.TB // nil: only the methods below are called

	name string
	root string
	ctx  context.Context

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	dirs     int
}

func newTB(ctx context.Context, name, root string) *tb {
	return &tb{name: name, root: root, ctx: ctx}
}

func (t *tb) Helper()                  {}
func (t *tb) Name() string             { return t.name }
func (t *tb) Context() context.Context { return t.ctx }

func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// runCleanups runs every cleanup, the last registered first; a cleanup
// that fails (panics) is logged and the others still run.
func (t *tb) runCleanups() {
	for {
		t.mu.Lock()
		if len(t.cleanups) == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[len(t.cleanups)-1]
		t.cleanups = t.cleanups[:len(t.cleanups)-1]
		t.mu.Unlock()
		func() {
			defer func() {
				if r := recover(); r != nil {
					log.Printf("cleanup: %v", r)
				}
			}()
			f()
		}()
	}
}

func (t *tb) TempDir() string {
	t.mu.Lock()
	t.dirs++
	n := t.dirs
	t.mu.Unlock()
	dir := fmt.Sprintf("%s/%03d", t.root, n)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	return dir
}

func (t *tb) Setenv(key, value string) {
	old, had := os.LookupEnv(key)
	os.Setenv(key, value)
	t.Cleanup(func() {
		if had {
			os.Setenv(key, old)
		} else {
			os.Unsetenv(key)
		}
	})
}

func (t *tb) fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}

func (t *tb) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *tb) Log(args ...any)                 { log.Print(args...) }
func (t *tb) Logf(format string, args ...any) { log.Printf(format, args...) }
func (t *tb) Error(args ...any)               { t.fail(); log.Print(append([]any{"error: "}, args...)...) }
func (t *tb) Errorf(format string, args ...any) {
	t.fail()
	log.Printf("error: "+format, args...)
}
func (t *tb) Fatal(args ...any) { t.stop(fmt.Sprint(args...)) }
func (t *tb) Fatalf(format string, args ...any) {
	t.stop(fmt.Sprintf(format, args...))
}
func (t *tb) FailNow() { t.stop("FailNow") }

func (t *tb) stop(msg string) {
	t.fail()
	log.Printf("fatal: %s", msg)
	panic(stopRun{msg})
}

// try runs f, turning a Fatal inside it into an error.
func try(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if s, ok := r.(stopRun); ok {
				err = fmt.Errorf("%s", s.msg)
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
