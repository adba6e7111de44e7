package nettest_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/nettest"
)

func TestDeadAddrRefuses(t *testing.T) {
	addr := nettest.DeadAddr(t)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("dial %s succeeded; want refused", addr)
	}
}

// stubServer answers one byte on every connection; Serve returns err once
// closed, and Close returns closeErr.
type stubServer struct {
	ln       net.Listener
	err      error
	closeErr error
}

func (s *stubServer) Serve(ln net.Listener) error {
	s.ln = ln
	for {
		c, err := ln.Accept()
		if err != nil {
			return s.err
		}
		c.Write([]byte{'x'})
		c.Close()
	}
}

func (s *stubServer) Close() error {
	s.ln.Close()
	return s.closeErr
}

// TestServe: the server answers on the address Serve returns, and a
// server that stops with another error than the one awaited, or whose
// Close fails, fails the test at cleanup.
func TestServe(t *testing.T) {
	errOwn := errors.New("own")
	for _, tc := range []struct {
		name          string
		err, closeErr error
		closed        error
		fails         bool
	}{
		{"nil after Close", nil, nil, nil, false},
		{"the closed error", fmt.Errorf("wrapped: %w", http.ErrServerClosed), nil, http.ErrServerClosed, false},
		{"an error of its own", errOwn, nil, nil, true},
		{"nil where closed is awaited", nil, nil, http.ErrServerClosed, true},
		{"Close fails", nil, errOwn, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stubServer{err: tc.err, closeErr: tc.closeErr}
			var failed bool
			sub := &recordTB{TB: t, failed: &failed}
			func() {
				defer sub.cleanup()
				addr := nettest.Serve(sub, s, nil, tc.closed)
				c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				b := make([]byte, 1)
				if _, err := c.Read(b); err != nil || b[0] != 'x' {
					t.Fatalf("read %q, %v; want x", b, err)
				}
			}()
			if failed != tc.fails {
				t.Errorf("failed = %v; want %v", failed, tc.fails)
			}
		})
	}
}

// recordTB runs cleanups when told and records Errorf instead of failing.
type recordTB struct {
	testing.TB
	failed   *bool
	cleanups []func()
}

func (r *recordTB) Helper()               {}
func (r *recordTB) Cleanup(f func())      { r.cleanups = append(r.cleanups, f) }
func (r *recordTB) Errorf(string, ...any) { *r.failed = true }
func (r *recordTB) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestGet: Get answers any status with its whole body, and a refused
// dial as an error.
func TestGet(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	})}
	addr := nettest.Serve(t, srv, nil, http.ErrServerClosed)
	code, body, err := nettest.Get(http.DefaultClient, "http://"+addr.String()+"/brew")
	if err != nil || code != http.StatusTeapot || string(body) != "GET /brew" {
		t.Errorf("Get = %d %q, %v; want 418 \"GET /brew\"", code, body, err)
	}
	if code, _, err := nettest.Get(http.DefaultClient, "http://"+nettest.DeadAddr(t)+"/"); err == nil {
		t.Errorf("Get of a dead address = %d, nil; want an error", code)
	}
}
