package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/segment"
)

// Leaf's HTTP API (Meituan's leaf-server, LeafController), so that Leaf's
// clients work unchanged:
//
//	GET /api/segment/get/{key}    the next number of tag key, plain text
//	GET /api/snowflake/get/{key}  a fresh ID, plain text (Leaf ignores key)
//
// Success is 200 text/plain with the bare decimal. Failures answer as
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
// An empty key matches no route (404), as in leaf-server. Two deliberate
// differences: an ID is never 0 (a Leaf with a mode disabled
// answers 0 for every call, which repeats; here that is -1), and with
// rest.token set these routes need the bearer token like every ID route.
// Snowflake IDs are vesta IDs (method REST) as unsigned decimals: below
// 2^63, as Java's long needs, for version 0.

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
	if cause != nil {
		s.log.Debug("rest: Leaf API call failed", "path", clip(c.Request().URL.Path), "err", cause)
	}
	b, err := json.Marshal(springError{
		Timestamp: time.Now().UnixMilli(), Status: http.StatusInternalServerError,
		Error: http.StatusText(http.StatusInternalServerError), Exception: leafServerException,
		Message: message, Path: clip(c.Request().URL.Path),
	})
	if err != nil {
		return err
	}
	return c.Blob(http.StatusInternalServerError, springJSON, b)
}

// leafResult is Leaf's Result.toString of an exception.
func leafResult(code int) string {
	return "Result{id=" + strconv.Itoa(code) + ", status=EXCEPTION}"
}

// GET /api/segment/get/{key}
func (s *Server) leafSegment(c echo.Context) error {
	key := c.Param("key")
	if s.cfg.Sequences == nil {
		return s.leafFail(c, leafResult(leafInitFalse), errSeqOff)
	}
	ctx := s.issueCtx(c)
	defer ctx.release()
	v, err := s.cfg.Sequences.Next(ctx, key)
	if err != nil {
		code := leafSegmentsEmpty
		switch {
		case errors.Is(err, segment.ErrUnknownTag), errors.Is(err, segment.ErrInvalidTag):
			code = leafKeyNotExists
		case errors.Is(err, segment.ErrClosed):
			code = leafInitFalse
		case errors.Is(err, segment.ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		default:
			s.log.Error("rest: Leaf segment call failed", "key", clip(key), "err", err)
		}
		return s.leafFail(c, leafResult(code), err)
	}
	var buf [20]byte
	return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, strconv.AppendInt(buf[:0], v, 10))
}

// GET /api/snowflake/get/{key}: Leaf's snowflake ignores the key.
func (s *Server) leafSnowflake(c echo.Context) error {
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
	s.m.issued.Inc()
	var buf [20]byte
	return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, strconv.AppendUint(buf[:0], uint64(id), 10))
}
