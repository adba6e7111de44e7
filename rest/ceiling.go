package rest

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vesta-go/vesta/core"
)

// At the sequence's ceiling (about a million IDs a second, about four
// million in the leaf layout, plus the generator's MaxBorrow) an ID request waits, within its deadline (the
// request timeout), in the server's core.Share: batches are paced and
// waiting requests served round-robin per client address, so a greedy
// client cannot starve others, and what waits is bounded (MaxWaitingIDs,
// MaxWaitingCalls). A request whose wait would outlast its deadline, or
// that would pass the bounds, is answered at once with 503, code
// unavailable and Retry-After; one that ran out of time waiting gets the
// same. Never a 500, never past the deadline.

// errCeiling marks an answer given because the sequence is at its ceiling.
var errCeiling = errors.New("rest: the ID sequence is at its ceiling")

// keySeed hashes client addresses into Share keys.
var keySeed = maphash.MakeSeed()

// clientKey is the Share key of a request: its peer's address (not a
// header a client could set to look like many).
func clientKey(r *http.Request) uint64 {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return maphash.String(keySeed, host)
}

// issueOne returns one ID for the request c: the common case, without a
// context, a queue or a slice.
func (s *Server) issueOne(c echo.Context) (core.ID, error) {
	id, err := s.gen.NextID(noWait, core.REST)
	if err == nil || !errors.Is(err, context.Canceled) {
		return id, err
	}
	ids, err := s.issue(c, 1)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// issue returns n IDs for the request c, in increasing order.
func (s *Server) issue(c echo.Context, n int) ([]core.ID, error) {
	if n == 1 { // without a context or a queue when it needs no wait
		id, err := s.gen.NextID(noWait, core.REST)
		if err == nil {
			return []core.ID{id}, nil
		}
		if !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	ctx := s.issueCtx(c)
	defer ctx.release()
	if wait := s.share.Backlog(n); wait > 0 {
		if dl, _ := ctx.Deadline(); time.Until(dl) < wait {
			s.ceil.Retried()
			return nil, busy(wait, fmt.Sprintf("%d IDs would wait %s at the ceiling, past the request's deadline", n, wait.Round(time.Millisecond)))
		}
	}
	type result struct {
		ids []core.ID
		err error
	}
	ch := make(chan result, 1)
	queuedAt := time.Now()
	ids, queued, err := s.share.Append(ctx, clientKey(c.Request()), core.REST, nil, n,
		func(ids []core.ID, err error) { ch <- result{ids, err} })
	if queued {
		r := <-ch
		s.ceil.Waited(time.Since(queuedAt))
		ids, err = r.ids, r.err
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, busy(time.Second, "request timed out waiting at the ID sequence's ceiling")
		}
	}
	if errors.Is(err, core.ErrBusy) {
		s.ceil.Retried()
		return nil, busy(time.Second, err.Error())
	}
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// busy is the 503 of a request refused at the ceiling, retried after
// wait rounded up to whole seconds.
func busy(wait time.Duration, msg string) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, message: msg,
		retryAfter: retrySeconds(wait), cause: errCeiling}
}

// retrySeconds is wait as Retry-After says it: whole seconds, rounded up,
// at least 1.
func retrySeconds(wait time.Duration) int {
	return max(int((wait+time.Second-1)/time.Second), 1)
}

// noWait is an ended context: given it, the generator issues what needs no
// wait and fails with context.Canceled instead of waiting.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
