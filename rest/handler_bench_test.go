package rest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/rest"
)

// BenchmarkHandler measures the handler stacks alone, in-process with no
// network: what the REST server's middleware and handlers add per request
// over a minimal echo handler.
func BenchmarkHandler(b *testing.B) {
	trivial := echo.New()
	trivial.GET("/", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	cfg := core.DefaultConfig()
	cfg.Layout, cfg.Machine = core.Vesta, 1022
	gen, err := core.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer gen.Close()
	s, err := rest.NewServer(gen, rest.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name, target string
		h            http.Handler
	}{
		{"trivial", "/", trivial},
		{"genid", "/genid", s.Handler()},
		{"v1_id", "/v1/id", s.Handler()},
		{"ids100", "/v1/ids?count=100", s.Handler()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "http://localhost"+tc.target, nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				tc.h.ServeHTTP(w, req)
			}
			if w.code != http.StatusOK {
				b.Fatalf("%s: status %d", tc.target, w.code)
			}
		})
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
