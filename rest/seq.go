package rest

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// seqRoutes registers the sequence routes, Leaf's HTTP API among them.
// They exist whether or not Config.Sequences is set, so the OpenAPI
// document holds for every server; without it they answer that sequences
// are off.
func (s *Server) seqRoutes() {
	s.markIssuing(s.echo.GET("/v1/seq/:tag", s.apiSeq, s.auth))
	s.markIssuing(s.echo.GET("/api/segment/get/:key", s.leafSegment, s.auth))
	s.markIssuing(s.echo.GET("/api/snowflake/get/:key", s.leafSnowflake, s.auth))
	s.echo.GET("/decodeSnowflakeId", s.leafDecodeID, s.auth) // leafops.go
	s.echo.GET("/cache", s.leafCache, s.auth)
	s.echo.GET("/db", s.leafDB, s.auth)
}

// errSeqOff answers sequence calls of a server without a segment store.
var errSeqOff = errors.New("segment sequences are off on this server (segment.store)")

// GET /v1/seq/{tag}[?count=N] → {"tag":"…","id":"…"} or
// {"tag":"…","ids":["…",…]}, numbers as strings as IDs are.
func (s *Server) apiSeq(c echo.Context) error {
	tag := c.Param("tag")
	n := uint64(0)
	if v, ok, err := query(c, "count"); err != nil {
		return err
	} else if ok {
		if n, err = parseUint("count", v); err != nil {
			return err
		}
		if n < 1 || n > uint64(s.cfg.MaxBatch) {
			return badParam("count", "%d out of range 1-%d", n, s.cfg.MaxBatch)
		}
	}
	if s.cfg.Sequences == nil {
		return &apiError{status: http.StatusNotFound, code: codeNotFound, message: fmt.Sprintf("tag %q: %v", clip(tag), errSeqOff)}
	}
	ctx := s.issueCtx(c)
	defer ctx.release()
	b := make([]byte, 0, 64)
	b = append(b, `{"tag":`...)
	b = strconv.AppendQuote(b, tag) // a valid tag needs no JSON escaping beyond Go's quoting
	if n == 0 {
		v, err := s.cfg.Sequences.Next(ctx, tag)
		if err != nil {
			return fromCore(err)
		}
		b = append(b, `,"id":"`...)
		b = strconv.AppendInt(b, v, 10)
		b = append(b, "\"}\n"...)
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
	}
	vs, err := s.cfg.Sequences.NextN(ctx, tag, int(n))
	if err != nil {
		return fromCore(err)
	}
	b = append(b, `,"ids":[`...)
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '"')
	}
	b = append(b, "]}\n"...)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// segmentStatus is the /readyz line of the segment store: "ok", or why
// sequence numbers cannot be issued now; "" (no line) without a store.
func (s *Server) segmentStatus() string {
	if s.cfg.Sequences == nil {
		return ""
	}
	if err := s.cfg.Sequences.Ready(); err != nil {
		return "unavailable: " + strings.TrimPrefix(err.Error(), "segment: ")
	}
	return "ok"
}
