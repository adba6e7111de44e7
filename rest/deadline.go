package rest

import (
	"context"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// deadlineCtx is a request's context bounded by the request timeout, made
// lazily: the timer and the derived context exist only once something
// waits on Done, which the generator does only when it must sleep (the
// sequence ran out, or the time guard lags). Issuing without waiting, the
// common case, then costs no timer, no context and no copy of the request.
type deadlineCtx struct {
	context.Context // the request's
	deadline        time.Time

	mu     sync.Mutex
	inner  context.Context // WithDeadline(Context, deadline), once Done was called
	cancel context.CancelFunc
}

// issueCtx returns the context for issuing on behalf of c; the caller
// must release it.
func (s *Server) issueCtx(c echo.Context) *deadlineCtx {
	return &deadlineCtx{Context: c.Request().Context(), deadline: time.Now().Add(s.cfg.RequestTimeout)}
}

func (d *deadlineCtx) Deadline() (time.Time, bool) {
	if pd, ok := d.Context.Deadline(); ok && pd.Before(d.deadline) {
		return pd, true
	}
	return d.deadline, true
}

func (d *deadlineCtx) Done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inner == nil {
		d.inner, d.cancel = context.WithDeadline(d.Context, d.deadline)
	}
	return d.inner.Done()
}

func (d *deadlineCtx) Err() error {
	d.mu.Lock()
	inner := d.inner
	d.mu.Unlock()
	if inner != nil {
		return inner.Err()
	}
	if err := d.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(d.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// release stops the timer, if Done ever started one.
func (d *deadlineCtx) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		d.cancel()
	}
}
