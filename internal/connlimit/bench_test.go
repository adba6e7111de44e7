package connlimit_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/connlimit"
)

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(p []byte) (int, error) { return len(p), nil }
func (w *discard) WriteHeader(int)             {}

// oneConn is a listener that accepts c.
type oneConn struct {
	net.Listener
	c net.Conn
}

func (l *oneConn) Accept() (net.Conn, error) { return l.c, nil }
func (l *oneConn) Close() error              { return nil }
func (l *oneConn) Addr() net.Addr            { return &net.TCPAddr{} }

// BenchmarkHandler: what the policy's HTTP handler adds to an ID's answer
// (an HTTP/1.1 request of an admitted connection), against the handler
// alone.
func BenchmarkHandler(b *testing.B) {
	l := connlimit.NewLimiter(connlimit.Config{MaxConns: 10, MaxConnsPerPeer: 10})
	body := []byte(`{"id":"259562095417229875"}` + "\n")
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	srv := l.HTTPServer(connlimit.HTTPConfig{Handler: h, RequestTimeout: time.Second, MaxHeaderBytes: 1 << 10})
	a, c := net.Pipe()
	defer c.Close()
	nc, err := l.Listen(&oneConn{c: a}).Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	req := httptest.NewRequest(http.MethodGet, "/v1/id", nil).WithContext(srv.ConnContext(context.Background(), nc))
	w := &discard{h: http.Header{}}
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"alone", h}, {"policy", srv.Handler}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				bc.h.ServeHTTP(w, req)
			}
		})
	}
}
