package proctest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Failure runs fn with a testing.TB whose Fatal, Fatalf and FailNow end
// fn, as testing.T's do, and returns the message; "" when fn returned
// without failing. A skip in fn (a harness in the inner loop) skips t.
// Cleanups fn registers are t's. It is for tests of a harness that must
// fail with a clear message (a missing binary, a server that does not
// start), which would otherwise fail the test itself.
func Failure(t testing.TB, fn func(tb testing.TB)) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	tb.mu.Lock()
	msg, skipped := tb.msg, tb.skipped
	tb.mu.Unlock()
	if skipped {
		t.Skip(msg)
	}
	return msg
}

// fatalTB records the first fatal message and ends the goroutine.
type fatalTB struct {
	testing.TB
	mu      sync.Mutex
	msg     string
	skipped bool
}

func (f *fatalTB) Fatalf(format string, args ...any) { f.fail(fmt.Sprintf(format, args...)) }
func (f *fatalTB) Fatal(args ...any)                 { f.fail(fmt.Sprint(args...)) }
func (f *fatalTB) FailNow()                          { f.fail("FailNow") }
func (f *fatalTB) Helper()                           {}
func (f *fatalTB) Skipf(format string, args ...any)  { f.skip(fmt.Sprintf(format, args...)) }
func (f *fatalTB) Skip(args ...any)                  { f.skip(fmt.Sprint(args...)) }
func (f *fatalTB) SkipNow()                          { f.skip("SkipNow") }

func (f *fatalTB) fail(msg string) { f.end(msg, false) }
func (f *fatalTB) skip(msg string) { f.end(msg, true) }

func (f *fatalTB) end(msg string, skipped bool) {
	f.mu.Lock()
	if f.msg == "" {
		f.msg, f.skipped = msg, skipped
	}
	f.mu.Unlock()
	runtime.Goexit()
}

// MissingBinary runs start with an empty PATH and fails t unless start
// fails naming program and scripts/deps.sh: a harness whose server is not
// installed points at the script that installs it. It is each harness's
// test of Binary's message.
func MissingBinary(t testing.TB, program string, start func(tb testing.TB)) {
	t.Helper()
	t.Setenv("PATH", t.TempDir())
	msg := Failure(t, start)
	if !strings.Contains(msg, "scripts/deps.sh") || !strings.Contains(msg, program) {
		t.Fatalf("failure message %q does not name %s and scripts/deps.sh", msg, program)
	}
}
