package rest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
)

// Leaf's HTTP API (Meituan's leaf-server: LeafController and
// LeafMonitorController), so that Leaf's clients and operators' scripts
// work unchanged:
//
//	/api/segment/get/{key}           the next number of tag key, plain text
//	/api/snowflake/get/{key}         a fresh ID, plain text (Leaf ignores key)
//	/decodeSnowflakeId?snowflakeId=  Leaf's decoding of an ID, JSON (leafops.go)
//	/cache, /db                      the buffers and the store's rows, HTML or JSON (leafops.go)
//
// Leaf maps them with @RequestMapping and no method, and Spring 4.3 also
// matches them with a trailing slash (useTrailingSlashMatch): here too
// every method but OPTIONS and TRACE is answered as GET, and one trailing
// slash is dropped (leafRewrite). The ID routes answer Content-Type
// application/json, still with the bare number, when Accept prefers it,
// as Spring's StringHttpMessageConverter (which writes any media type)
// does; text/plain otherwise.
//
// Success is 200 with the bare decimal. Failures answer as
// leaf-server (Spring Boot 1.5) does when its controller throws: 500 with
// Spring's JSON error body, whose message is Leaf's Result{id=CODE,
// status=EXCEPTION} with Leaf's codes:
//
//	segment  -1  cannot issue at all (Leaf: the ID cache failed to
//	             initialise; here: sequences off, or the issuer closed)
//	         -2  the key is not in the store (Leaf: EXCEPTION_ID_KEY_NOT_EXISTS;
//	             here also a key that is no valid tag)
//	         -3  the store is down and both buffers are empty (Leaf:
//	             EXCEPTION_ID_TWO_SEGMENTS_ARE_NULL), or the request timed out
//	snowflake -3 the clock is unusable (Leaf: it went back more than 5ms)
//	          -1 any other failure (fenced, closed, timed out)
//
// An empty key, or one holding a slash (echo's last parameter would take
// it; Spring's {key} is one path segment), matches no route (404), as in
// leaf-server. Two deliberate differences: an ID is never 0 (a Leaf with a
// mode disabled answers 0 for every call, which repeats; here that is -1),
// and with rest.token set these routes need the bearer token like every
// ID route.
// Snowflake IDs are the server's generator's, in its layout (method REST
// where the layout has method bits), as unsigned decimals: below 2^63, as
// Java's long needs, for version 0, and always so for the leaf layout,
// whose IDs continue above Leaf's own.

// Leaf's exception codes (SegmentIDGenImpl).
const (
	leafInitFalse     = -1
	leafKeyNotExists  = -2
	leafSegmentsEmpty = -3
)

// springJSON is the content type of Spring's error body.
const springJSON = "application/json;charset=UTF-8"

// leafServerException is the class name in Spring's error body, as
// leaf-server's.
const leafServerException = "com.sankuai.inf.leaf.server.exception.LeafServerException"

// springError is Spring Boot 1.5's default error body (DefaultErrorAttributes),
// keys in its order.
type springError struct {
	Timestamp int64  `json:"timestamp"`
	Status    int    `json:"status"`
	Error     string `json:"error"`
	Exception string `json:"exception"`
	Message   string `json:"message"`
	Path      string `json:"path"`
}

// leafFail answers as leaf-server does when its controller throws.
func (s *Server) leafFail(c echo.Context, message string, cause error) error {
	return s.leafError(c, http.StatusInternalServerError, leafServerException, message, cause)
}

// leafError answers as Spring Boot does for an exception of class
// exception, or a request it refuses, with status.
func (s *Server) leafError(c echo.Context, status int, exception, message string, cause error) error {
	if cause != nil {
		s.log.Debug("rest: Leaf API call failed", "path", clip(c.Request().URL.Path), "err", cause)
	}
	b, err := json.Marshal(springError{
		Timestamp: time.Now().UnixMilli(), Status: status, Error: http.StatusText(status),
		Exception: exception, Message: message, Path: clip(c.Request().URL.Path),
	})
	if err != nil {
		return err
	}
	return c.Blob(status, springJSON, b)
}

// leafResult is Leaf's Result.toString of an exception.
func leafResult(code int) string {
	return "Result{id=" + strconv.Itoa(code) + ", status=EXCEPTION}"
}

// Leaf's paths: the ID routes' prefixes (a key follows) and the operator
// routes.
var (
	leafPrefixes = [...]string{"/api/segment/get/", "/api/snowflake/get/"}
	leafPages    = [...]string{"/decodeSnowflakeId", "/cache", "/db"}
)

// leafKey holds, in the echo context, a Leaf request's method and path as
// sent, which leafRewrite changed for routing.
const leafKey = "vesta.leaf"

type leafSent struct {
	method        string // "" if unchanged
	path, rawPath string
}

// leafRewrite routes a request for one of Leaf's routes as Spring routes
// it: any method but OPTIONS and TRACE as GET (HEAD is GET already, see
// pre), one trailing slash dropped. checkRequest restores both, for the
// handlers, the error bodies and the access log.
func leafRewrite(c echo.Context) {
	r := c.Request()
	p := r.URL.RawPath // echo routes the raw path when there is one
	if p == "" {
		p = r.URL.Path
	}
	if !isLeafPath(p) {
		return
	}
	sent := leafSent{path: r.URL.Path, rawPath: r.URL.RawPath}
	switch r.Method {
	case http.MethodGet, http.MethodOptions, http.MethodTrace:
		// OPTIONS is answered as on every route (Allow); Tomcat refuses
		// TRACE for leaf-server with 405.
	default:
		sent.method, r.Method = r.Method, http.MethodGet
	}
	if strings.HasSuffix(p, "/") {
		r.URL.Path = strings.TrimSuffix(r.URL.Path, "/")
		r.URL.RawPath = strings.TrimSuffix(r.URL.RawPath, "/")
	} else if sent.method == "" {
		return
	}
	c.Set(leafKey, sent)
}

// isLeafPath says whether p is under one of Leaf's ID routes or is an
// operator route, with a trailing slash or not. A key holding a slash is
// refused by the handlers, whatever the method.
func isLeafPath(p string) bool {
	for _, pre := range leafPrefixes {
		if key, ok := strings.CutPrefix(p, pre); ok {
			return key != ""
		}
	}
	p = strings.TrimSuffix(p, "/")
	for _, page := range leafPages {
		if p == page {
			return true
		}
	}
	return false
}

// leafRestore undoes leafRewrite once the request is routed.
func leafRestore(c echo.Context) {
	sent, ok := c.Get(leafKey).(leafSent)
	if !ok {
		return
	}
	r := c.Request()
	if sent.method != "" {
		r.Method = sent.method
	}
	r.URL.Path, r.URL.RawPath = sent.path, sent.rawPath
}

// prefersJSON says whether the media type an Accept header prefers is
// application/json: of its ranges, the highest q wins, then the more
// specific (type/subtype over type/* over */*), then the first, as Spring's
// sortBySpecificityAndQuality orders them for the types it can write.
func prefersJSON(accept string) bool {
	best, bestQ, bestSpec := "", 0.0, -1
	for rest := accept; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		typ, params, _ := strings.Cut(part, ";")
		typ = strings.ToLower(strings.TrimSpace(typ))
		if typ == "" {
			continue
		}
		q := 1.0
		for params != "" {
			var p string
			p, params, _ = strings.Cut(params, ";")
			if k, v, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
					q = f
				} else {
					q = 0 // a q Spring cannot parse fails the header; ignore the range
				}
			}
		}
		spec := 2
		switch {
		case typ == "*/*" || typ == "*":
			spec = 0
		case strings.HasSuffix(typ, "/*"):
			spec = 1
		}
		if q > bestQ || (q == bestQ && q > 0 && spec > bestSpec) {
			best, bestQ, bestSpec = typ, q, spec
		}
	}
	return best == "application/json"
}

// leafNumber answers a Leaf ID route's number: the bare decimal, as
// application/json when Accept prefers it (Spring writes the String with
// the negotiated type), else text/plain.
func leafNumber(c echo.Context, b []byte) error {
	h := c.Response().Header()
	h.Add(echo.HeaderVary, echo.HeaderAccept)
	ct := echo.MIMETextPlainCharsetUTF8
	if prefersJSON(c.Request().Header.Get(echo.HeaderAccept)) {
		ct = springJSON
	}
	return c.Blob(http.StatusOK, ct, b)
}

// /api/segment/get/{key}
func (s *Server) leafSegment(c echo.Context) error {
	key := c.Param("key")
	if strings.Contains(key, "/") {
		return echo.ErrNotFound
	}
	if s.cfg.Sequences == nil {
		return s.leafFail(c, leafResult(leafInitFalse), errSeqOff)
	}
	ctx := s.issueCtx(c)
	defer ctx.release()
	v, err := s.cfg.Sequences.Next(ctx, key)
	if err != nil {
		// Leaf's result codes, by the one table's code: what no store
		// holds is Leaf's "key not exists", what may pass (a store down,
		// a deadline, a server closing) Leaf's "segments not ready".
		code := leafSegmentsEmpty
		switch api.CodeOf(err) {
		case api.NotFound, api.InvalidArgument:
			code = leafKeyNotExists
		case api.Unavailable:
		default:
			s.log.Error("rest: Leaf segment call failed", "key", clip(key), "err", err)
		}
		return s.leafFail(c, leafResult(code), err)
	}
	var buf [20]byte
	return leafNumber(c, strconv.AppendInt(buf[:0], v, 10))
}

// /api/snowflake/get/{key}: Leaf's snowflake ignores the key.
func (s *Server) leafSnowflake(c echo.Context) error {
	if strings.Contains(c.Param("key"), "/") {
		return echo.ErrNotFound
	}
	ctx := s.issueCtx(c)
	defer ctx.release()
	id, err := s.gen.NextID(ctx, core.REST)
	if err != nil {
		code := -1
		if errors.Is(err, core.ErrClockBehind) || errors.Is(err, core.ErrBeforeEpoch) || errors.Is(err, core.ErrEndOfTime) {
			code = -3 // Leaf's snowflake: the clock went back too far
		}
		return s.leafFail(c, leafResult(code), err)
	}
	s.m.issued.Add(1)
	var buf [20]byte
	return leafNumber(c, strconv.AppendUint(buf[:0], uint64(id), 10))
}
