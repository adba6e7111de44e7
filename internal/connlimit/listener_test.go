package connlimit_test

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/connlimit"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
)

// emfileListener fails Accept with EMFILE until ok, then returns conn.
type emfileListener struct {
	net.Listener
	calls atomic.Int64
	ok    atomic.Bool
	conn  net.Conn
}

func (l *emfileListener) Accept() (net.Conn, error) {
	l.calls.Add(1)
	if l.ok.Load() {
		return l.conn, nil
	}
	return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
}

func (l *emfileListener) Close() error { return nil }

func (l *emfileListener) Addr() net.Addr { return &net.TCPAddr{} }

// TestAcceptBacksOffOnEMFILE: out of descriptors, Accept neither spins nor
// returns: it retries, backing off, until a connection comes; Close ends
// the wait.
func TestAcceptBacksOffOnEMFILE(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	fake := &emfileListener{conn: a}
	ln := connlimit.NewLimiter(connlimit.Config{MaxConns: 5, MaxConnsPerPeer: 5}).Listen(fake)
	got := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err == nil && connlimit.Of(nc) == nil {
			err = errors.New("not an admitted connection")
		}
		got <- err
	}()
	time.Sleep(300 * time.Millisecond)
	// 5, 10, 20, 40, 80, 160 ms: at most 7 calls in 300 ms, not thousands.
	if n := fake.calls.Load(); n < 3 || n > 8 {
		t.Fatalf("%d accept calls in 300ms of EMFILE; want a backoff (3-8)", n)
	}
	fake.ok.Store(true)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Accept did not return the connection once descriptors were back")
	}

	fake2 := &emfileListener{}
	ln2 := connlimit.NewLimiter(connlimit.Config{MaxConns: 5, MaxConnsPerPeer: 5}).Listen(fake2)
	go func() { _, err := ln2.Accept(); got <- err }()
	time.Sleep(50 * time.Millisecond)
	ln2.Close()
	select {
	case err := <-got:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v; want net.ErrClosed", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not end Accept's backoff")
	}
}

// TestFirstRequestDeadline: a connection that proves nothing within
// FirstRequest is closed; a proven one stays; a refused one is closed at
// once and counted.
func TestFirstRequestDeadline(t *testing.T) {
	inner := nettest.Loopback(t)
	l := connlimit.NewLimiter(connlimit.Config{MaxConns: 2, MaxConnsPerPeer: 2, FirstRequest: 100 * time.Millisecond})
	ln := l.Listen(inner)
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- nc
		}
	}()
	dial := func() net.Conn {
		nc, err := net.Dial("tcp", inner.Addr().String())
		return testkit.Closed(t, "net.Dial", nc, err)
	}
	silent := dial()
	s := <-accepted
	defer s.Close()
	good := dial()
	g := <-accepted
	defer g.Close()
	connlimit.Of(g).Proven()
	t0 := time.Now()
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a silent connection: read %v; want it closed by the server", err)
	} else if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("closed after %v; want about 100ms", d)
	}
	good.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := good.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("a proven connection: read %v; want it open", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
