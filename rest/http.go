package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// HTTP details every route shares (found by the protocol audit): HEAD
// wherever GET is, nosniff on every answer, percent-decoded path
// parameters, a body refused by its Content-Length before any of it is
// read (so a request with "Expect: 100-continue" gets 413, never 100
// Continue), and the header size limit enforced here, so that its 431 is
// the JSON error body too.
//
// net/http still answers a few requests itself, before any handler runs:
// headers past MaxHeaderBytes and the 4 KiB it reads beyond (431), a
// request line or header it cannot parse (400), an HTTP version other
// than 1.x (505), and an unknown Transfer-Encoding (501). It has not
// parsed a request then, so no handler can see one, and net/http has no
// hook for those answers. The 431, the one a client's own mistake (a
// cookie jar, a huge token) meets, is written as one fixed string to the
// connection; the listener (package connlimit) writes HeaderTooLarge
// instead, over plain HTTP/1.1. Over TLS net/http writes it to the TLS
// connection, above the listener, and its text stays; so do the others.
// They carry fixed text and echo nothing of the input.

// MaxHeaderBytes is the size of a request's headers (with its request
// line) past which the answer is 431. It is the http.Server's limit too,
// so no more than that (and net/http's 4 KiB of slack) is ever read and
// buffered; checkRequest answers in JSON what net/http read whole.
const MaxHeaderBytes = 32 << 10

// HeaderTooLarge returns the JSON error body of the 431 net/http answers
// itself, for headers past what it reads (connlimit.HTTPConfig's
// HeaderTooLarge): the shape of every other error.
func HeaderTooLarge() []byte {
	b, _ := json.Marshal(errorBody{Error: errorDetail{Code: codeInvalidArgument,
		Message: fmt.Sprintf("headers: more than %d bytes; at most %d", MaxHeaderBytes+4<<10, MaxHeaderBytes)}})
	return append(b, '\n')
}

// headKey marks, in the echo context, a HEAD request routed as GET.
const headKey = "vesta.head"

// Header values answers share, made once rather than per request (a
// header's Set allocates its value's slice): net/http and echo replace a
// header's slice or append to it, never write into it, and appending to
// a slice of capacity 1 copies it.
var (
	nosniff    = []string{"nosniff"}
	noStoreVal = []string{"no-store"}
	textPlain  = []string{echo.MIMETextPlainCharsetUTF8}
	appJSON    = []string{echo.MIMEApplicationJSON}
)

// blob answers 200 with b as ctype (one of the values above), which
// c.Blob then finds set and does not set again.
func blob(c echo.Context, ctype []string, b []byte) error {
	c.Response().Header()[echo.HeaderContentType] = ctype
	return c.Blob(http.StatusOK, ctype[0], b)
}

// pre runs before routing: it marks every answer nosniff, routes HEAD as
// GET (echo routes the very *http.Request net/http holds, so its method is
// changed for routing and restored by checkRequest: net/http then sends
// the GET answer's headers, Content-Length included, and drops the body),
// and routes Leaf's requests as Spring does (leafRewrite).
func (s *Server) pre(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header()["X-Content-Type-Options"] = nosniff
		if r := c.Request(); r.Method == http.MethodHead {
			r.Method = http.MethodGet
			c.Set(headKey, true)
		}
		leafRewrite(c) // leaf.go
		return next(c)
	}
}

// checkRequest refuses, before the handler, headers past MaxHeaderBytes
// and a body whose declared length is past the limit; it percent-decodes
// path parameters (echo matches the raw path, so /v1/ids/%31 is id "%31"
// until here). A parameter that is not valid percent-encoding is left as
// it came, for the handler to refuse.
func (s *Server) checkRequest(c echo.Context) error {
	r := c.Request()
	if c.Get(headKey) != nil {
		r.Method = http.MethodHead
	}
	leafRestore(c) // leaf.go
	if n := headerBytes(r); n > MaxHeaderBytes {
		return &apiError{status: http.StatusRequestHeaderFieldsTooLarge, code: codeInvalidArgument,
			message: fmt.Sprintf("headers: %d bytes; at most %d", n, MaxHeaderBytes)}
	}
	if r.ContentLength > s.cfg.BodyLimit {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: codeInvalidArgument,
			message: fmt.Sprintf("body: larger than %d bytes (Content-Length %d)", s.cfg.BodyLimit, r.ContentLength)}
	}
	if vals := c.ParamValues(); len(vals) > 0 {
		changed := false
		for i, v := range vals {
			if strings.IndexByte(v, '%') < 0 {
				continue
			}
			if u, err := url.PathUnescape(v); err == nil {
				vals[i], changed = u, true
			}
		}
		if changed {
			c.SetParamValues(vals...)
		}
	}
	return nil
}

// headerBytes is the size of the request line and headers as sent, give
// or take the spaces around colons.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4 + len(r.Host) + len("Host: \r\n")
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// allowHead adds HEAD to the router's Allow wherever GET is, as pre
// serves it, before the handler runs: echo's 405 handler reads Allow from
// the context; its OPTIONS handler was given the router's own string, so
// the header it writes is mended just before it goes out.
func allowHead(c echo.Context) {
	allow, ok := c.Get(echo.ContextKeyHeaderAllow).(string)
	if !ok || !strings.Contains(allow, http.MethodGet) || strings.Contains(allow, http.MethodHead) {
		return // a route matched, or no GET
	}
	c.Set(echo.ContextKeyHeaderAllow, allow+", "+http.MethodHead)
	if c.Request().Method == http.MethodOptions {
		h := c.Response().Header()
		c.Response().Before(func() {
			if a := h.Get(echo.HeaderAllow); a == allow {
				h.Set(echo.HeaderAllow, allow+", "+http.MethodHead)
			}
		})
	}
}

// metricsMiddleware is the token check of /metrics when Config.MetricsAuth
// is set, else none.
func (s *Server) metricsMiddleware() []echo.MiddlewareFunc {
	if s.cfg.MetricsAuth {
		return []echo.MiddlewareFunc{s.auth}
	}
	return nil
}
