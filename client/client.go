package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/latency"
)

// Sentinel errors. Callers test them with errors.Is; the messages add the
// server and the cause.
var (
	// ErrConfig: a Config field the client cannot use; the message names it.
	ErrConfig = errors.New("client: invalid config")

	// ErrClosed: the client was closed.
	ErrClosed = errors.New("client: closed")

	// ErrUnavailable: no server could serve the call (every breaker was
	// open or every attempt failed) and the fallback is off. It wraps the
	// last attempt's error.
	ErrUnavailable = errors.New("client: no central server available")

	// ErrTimeout: a server did not answer within Config.Timeout.
	ErrTimeout = errors.New("client: server did not answer in time")

	// ErrConnection: dialling, the TLS handshake or the connection itself
	// failed.
	ErrConnection = errors.New("client: connection failed")

	// ErrProtocol: a server sent something that is not a valid reply.
	ErrProtocol = errors.New("client: protocol error")

	// ErrServerShape: a server issues IDs of another layout, epoch, type or
	// version than the first server the client reached (whose shape
	// Explain, Make and the fallback's check use). IDs of two layouts can
	// be equal 64-bit values, so its IDs are refused: a call it would
	// serve moves on to the other servers at once (the breaker does not
	// count it; calls_total{result="shape"}; an error logged for each of
	// its connections), and fails wrapping this error when no other could
	// serve it. Sequences (NextSeq) are not IDs: it still serves them.
	ErrServerShape = errors.New("client: a server's IDs are shaped unlike the first server's")

	// ErrFallbackNotReady: a call needed the fallback (no server could
	// serve it) before the fallback could issue, and its context ended
	// first: New returns at once, while a fresh Redis lease of the
	// fallback waits out its takeover quarantine (about 19 s at the defaults)
	// and its generator starts. Joined with the servers' error
	// (ErrUnavailable) and wrapping the context's; FallbackState().Ready
	// and vesta_client_fallback_ready say when it is ready.
	ErrFallbackNotReady = errors.New("client: fallback not ready yet")

	// ErrFallbackShape: the servers issue IDs of another layout, epoch,
	// type or version than the fallback's configuration. IDs of two
	// layouts can be equal 64-bit values, so the fallback refuses to
	// issue: calls that need it fail with an error wrapping this one,
	// naming both shapes (FallbackState().ShapeMismatch; logged once).
	ErrFallbackShape = errors.New("client: the fallback's IDs are shaped unlike the servers'")
)

// errAttemptTimeout is the error of a call that the connection's watchdog
// failed at its attempt's deadline (Config.Timeout), not the caller's.
var errAttemptTimeout = errors.New("client: attempt timed out")

// errCallerGone marks an attempt cut short by the caller's own context: it
// says nothing about the server, so the breaker ignores it.
var errCallerGone = errors.New("client: caller's context ended")

// identity is what the client's IDs look like: the layout, epoch, type and
// version of the servers (or of the fallback before any server answered),
// and the machine that Make fills in.
type identity struct {
	codec    core.Codec
	typ      core.Type
	version  uint8
	machine  core.MachineID
	maxBatch int
	takeIDs  bool // the server has Vesta.TakeIDs (Vesta.Info's take_ids)
	singles  bool // and coalesced single-ID calls (Vesta.Info's singles)
}

func identityOf(cfg embed.Config) (identity, error) {
	codec, err := core.NewCodec(cfg.Layout, cfg.Epoch)
	if err != nil {
		return identity{}, err
	}
	return identity{codec: codec, typ: cfg.Type, version: cfg.Version, maxBatch: defaultMaxBatch}, nil
}

// shape names what sameShape compares, for errors.
func (a identity) shape() string {
	return fmt.Sprintf("layout %s, epoch %s, type %s, version %d",
		a.codec.Layout(), a.codec.Epoch().Format(time.RFC3339Nano), a.typ, a.version)
}

// sameShape reports whether IDs of a and b decode alike.
func (a identity) sameShape(b identity) bool {
	return a.codec.Layout() == b.codec.Layout() && a.codec.Epoch().Equal(b.codec.Epoch()) &&
		a.typ == b.typ && a.version == b.version
}

// Client issues IDs from central servers over MessagePack-RPC, falling
// back to an embedded generator when every server is down. It implements
// vesta.Issuer and is safe for concurrent use.
type Client struct {
	cfg     Config
	log     *slog.Logger
	ceiling *latency.Histogram // the waits of calls at the ceiling (Stats)
	servers []*server
	next    atomic.Uint32 // round-robin start over servers
	fb      *fallback     // nil with NoFallback
	pf      *prefetch     // nil without Prefetch
	seq     seqState      // per-tag buffers of segment sequences (seq.go)
	clock   core.Clock    // busy marks and waits at the ceiling (tests: a ManualClock)

	ident    atomic.Pointer[identity] // the first server's
	preset   identity                 // the fallback's (or FallbackConfig's), until ident is set
	fallback atomic.Bool              // IDs currently come from the fallback

	bg     context.Context // ends at Close; bounds background work
	cancel context.CancelFunc
	wg     sync.WaitGroup // connection and prefetch goroutines

	mu     sync.Mutex
	conns  map[*conn]struct{} // open connections
	closed bool

	closeOnce sync.Once
	closeErr  error
}

// New validates cfg and returns a Client. Unless NoFallback, it acquires the
// embedded fallback's machine ID at once (embed.Acquire: a Redis lease then
// renewed until Close, or a fixed ID and its time guard's lock), and fails
// if that fails; ctx bounds that and is not retained. The rest of the
// fallback's opening (a fresh lease's takeover quarantine, the generator's
// start) runs in the background, so New does not wait for it: calls that
// need the fallback before it is ready wait within their own context (see
// ErrFallbackNotReady). New does not dial: connections open on first use
// (with Prefetch, the first refill starts at once, in the background), so
// New succeeds while servers are down; calls then fail over to the
// fallback, or fail with ErrUnavailable without it.
func New(ctx context.Context, cfg Config) (*Client, error) {
	return newClient(ctx, cfg, core.NewSystemClock())
}

// newClient is New with the clock that times waits at the ceiling.
func newClient(ctx context.Context, cfg Config, clock core.Clock) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	preset, err := identityOf(cfg.FallbackConfig)
	if err != nil {
		preset, _ = identityOf(embed.Config{})
	}
	var fb *fallback
	if !cfg.NoFallback {
		if fb, err = newFallback(ctx, cfg); err != nil {
			return nil, err
		}
		preset = fb.own
	}
	c := &Client{cfg: cfg, log: cfg.Logger, ceiling: latency.New(latency.CeilingBounds...), preset: preset, fb: fb, clock: clock,
		conns: make(map[*conn]struct{})}
	c.bg, c.cancel = context.WithCancel(context.Background())
	for _, addr := range cfg.Servers {
		s := &server{addr: addr, slots: make([]slot, cfg.ConnsPerServer), c: c}
		s.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
			Name:    addr,
			Timeout: cfg.BreakerTimeout,
			ReadyToTrip: func(n gobreaker.Counts) bool {
				return n.ConsecutiveFailures >= cfg.BreakerFailures
			},
			OnStateChange: func(_ string, from, to gobreaker.State) { c.breakerChanged(s, from, to) },
			IsExcluded: func(err error) bool {
				// errSilent: the connection was closed because another
				// call timed out, which the breaker counted already.
				// ErrServerShape: the server answers; the client refuses.
				return errors.Is(err, errCallerGone) || errors.Is(err, ErrClosed) || errors.Is(err, errSilent) ||
					errors.Is(err, ErrServerShape)
			},
			IsSuccessful: func(err error) bool { return err == nil || answered(err) },
		})
		c.servers = append(c.servers, s)
	}
	c.logStart()
	if fb != nil {
		c.wg.Go(func() { fb.open(c.bg) })
	}
	if cfg.Prefetch > 0 {
		c.pf = newPrefetch(cfg.Prefetch, c.refill)
		c.wg.Go(func() { c.pf.run(c.bg) })
		c.pf.mu.Lock()
		c.pf.askLocked()
		c.pf.mu.Unlock()
	}
	return c, nil
}

// breakerChanged runs under the breaker's lock: it must not call back.
func (c *Client) breakerChanged(s *server, from, to gobreaker.State) {
	s.calls.breaker.Store(breakerValue(to))
	c.log.Info("client: breaker state", "server", s.addr, "from", from.String(), "to", to.String())
}

// adopt fixes the client's identity to the first server's unless one is
// set already, and checks that the fallback's IDs decode alike. A later
// server whose IDs decode otherwise is refused: the error (wrapping
// ErrServerShape) fails every call for IDs on its connection.
func (c *Client) adopt(addr string, id identity) error {
	if c.ident.CompareAndSwap(nil, &id) {
		if c.fb != nil {
			c.fb.checkShape(id)
		}
		return nil
	}
	first := c.ident.Load()
	if first.sameShape(id) {
		return nil
	}
	err := fmt.Errorf("%w: %s issues %s; the first server reached %s", ErrServerShape, addr, id.shape(), first.shape())
	c.log.Error("client: refusing a server's IDs: they are shaped unlike the first server's; configure every server alike", "server", addr, "err", err)
	return err
}

// identity is the client's identity, or the preset from FallbackConfig
// while no server (and no fallback) has been used.
func (c *Client) identity() identity {
	if id := c.ident.Load(); id != nil {
		return *id
	}
	return c.preset
}

// MaxCount is the largest count NextIDs accepts: a larger one is an error
// wrapping core.ErrInvalidCount, never an allocation that cannot succeed.
// It is core's bound on one call, so a count the embedded issuer (and the
// fallback) refuses is refused here too.
const MaxCount = core.MaxCount

// maxRetryAfter caps a server's retry_after_ms: a server that asks for a
// longer wait is asked again after this long instead, so a wrong or
// hostile answer cannot park callers for long.
const maxRetryAfter = 2 * time.Second

// NextID issues one ID: from the prefetch buffer if it holds one, else
// from a server, else (every server down) from the fallback.
func (c *Client) NextID(ctx context.Context) (core.ID, error) {
	var buf [1]core.ID
	var ids []core.ID
	var err error
	if c.pf != nil {
		id, ok, cause := c.pf.take(ctx)
		switch {
		case ok:
			return id, nil
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case c.fb != nil && errors.Is(cause, ErrUnavailable):
			// The refill just found no server: do not try them all again.
			ids, err = c.fromFallback(ctx, buf[:0], 1, cause)
		}
	}
	if ids == nil && err == nil {
		ids, err = c.issue(ctx, buf[:0], 1)
	}
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// NextIDs issues n IDs (1 to MaxCount) in increasing order. Counts above a
// server's max_batch are split into several calls, spread over the servers
// in turn (and the fallback, when every server is down); the result is
// sorted, and IDs of every server and the fallback are distinct.
func (c *Client) NextIDs(ctx context.Context, n int) ([]core.ID, error) {
	return c.AppendIDs(ctx, nil, n)
}

// AppendIDs is NextIDs appending to dst, so that a caller reusing its slice
// allocates nothing: the n IDs appended are in increasing order. On error
// it returns nil.
func (c *Client) AppendIDs(ctx context.Context, dst []core.ID, n int) ([]core.ID, error) {
	if n < 1 || n > MaxCount {
		return nil, fmt.Errorf("client: NextIDs(%d): want 1-%d: %w", n, MaxCount, core.ErrInvalidCount)
	}
	if c.pf != nil {
		if out, ok := c.pf.takeN(dst, n); ok {
			return out, nil // sorted by takeN
		}
	}
	start := len(dst)
	dst, err := c.issue(ctx, slices.Grow(dst, n), n)
	if err != nil {
		return nil, err
	}
	// Pieces from several servers (split at max_batch, or the rest of a
	// busy server's share asked from the next) and the fallback's
	// interleave: sort them.
	if ids := dst[start:]; !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
	return dst, nil
}

// issue appends n IDs to dst from the servers, and from the fallback for
// what they cannot give.
func (c *Client) issue(ctx context.Context, dst []core.ID, n int) ([]core.ID, error) {
	want := len(dst) + n
	dst, err := c.central(ctx, dst, n, false)
	if err == nil {
		return dst, nil
	}
	if c.fb == nil || !errors.Is(err, ErrUnavailable) {
		return nil, err
	}
	return c.fromFallback(ctx, dst, want-len(dst), err)
}

// fromFallback appends k IDs of the fallback to dst, waiting within ctx
// for it to be ready; cause is why the servers could not give them.
func (c *Client) fromFallback(ctx context.Context, dst []core.ID, k int, cause error) ([]core.ID, error) {
	is, err := c.fb.issuer(ctx, c.bg.Done())
	if err != nil {
		return nil, c.fallbackErr(cause, err)
	}
	if k == 1 {
		id, err := is.NextID(ctx)
		if err != nil {
			return nil, c.fallbackErr(cause, fmt.Errorf("client: fallback: %w", err))
		}
		dst = append(dst, id)
	} else {
		ids, err := is.NextIDs(ctx, k)
		if err != nil {
			return nil, c.fallbackErr(cause, fmt.Errorf("client: fallback: %w", err))
		}
		dst = append(dst, ids...)
	}
	if c.fallback.CompareAndSwap(false, true) {
		c.log.Warn("client: fallback: IDs come from the embedded generator (method embedded)", "machine", is.Generator().Machine(), "cause", cause)
	}
	return dst, nil
}

// fallbackErr is the error of a call that neither the servers (central)
// nor the fallback (err, naming the fallback) could serve: both, or
// ErrClosed once the client is closing.
func (c *Client) fallbackErr(central, err error) error {
	if c.bg.Err() != nil || errors.Is(err, core.ErrClosed) || errors.Is(err, ErrClosed) {
		return ErrClosed
	}
	return errors.Join(central, err)
}

// refill fetches n IDs for the prefetch buffer from the servers only
// (never the fallback), handing each piece to put as it comes, so callers
// waiting on an empty buffer get IDs before the whole refill is in. Pieces
// are at most one max_batch, each from the next server in turn.
func (c *Client) refill(ctx context.Context, n int, put func([]core.ID)) error {
	for n > 0 {
		piece, err := c.central(ctx, nil, min(n, c.identity().maxBatch), true)
		if len(piece) > 0 {
			n -= len(piece)
			put(piece)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// central appends n IDs to dst from the servers; eager returns what it has
// instead of waiting at the ceiling, once it has some.
//
// It walks the servers in turn, from the next one in the client's turn.
// Each attempt asks one server for the rest (at most its max_batch). A
// server that gives fewer than asked is busy (its ceiling): it is marked
// busy until its retry_after (for every call of the client) and the rest
// is asked from the next server at once. Servers marked busy and those
// whose breaker is open are skipped; a failed attempt (the server's own
// fault: see retryable) moves on too, up to 1+Retries failed attempts
// between two answers. Only when a whole turn of the servers gave nothing
// does the call stop: it waits for the earliest busy mark to pass (bounded
// by ctx and Close, never by Timeout) and walks again, or, when no server
// was busy, fails with ErrUnavailable wrapping the last failure.
func (c *Client) central(ctx context.Context, dst []core.ID, n int, eager bool) ([]core.ID, error) {
	want, had := len(dst)+n, len(dst)
	ns := len(c.servers)
	i := int(c.next.Add(1) - 1)
	idle, fails := 0, 0    // servers in a row that gave nothing now; failed attempts
	var until int64        // the earliest busy mark seen since the last answer, as clock nanoseconds
	var last, shaped error // the last failure; a server refused for its shape (ErrServerShape)
	var waited time.Duration
	resent := false // asked a server again after its connection was closed for silence
	defer func() {
		if waited > 0 {
			c.ceiling.Observe(waited)
		}
	}()
	for len(dst) < want {
		if err := c.live(ctx); err != nil {
			return dst, err
		}
		if idle >= ns {
			if until == 0 {
				cause := errors.Join(last, shaped)
				if cause == nil {
					cause = errors.New("client: every server's breaker is open")
				}
				return dst, fmt.Errorf("%w: %w", ErrUnavailable, cause)
			}
			if eager && len(dst) > had {
				return dst, nil
			}
			d, err := c.wait(ctx, until)
			waited += d
			if err != nil {
				return dst, err
			}
			idle, fails, until = 0, 0, 0
			continue
		}
		s := c.servers[i%ns]
		i++
		if b := s.busyUntil.Load(); b != 0 && b > c.clock.Now().UnixNano() {
			idle++
			until = earliest(until, b)
			continue
		}
		if fails > c.cfg.Retries {
			idle++
			continue
		}
		var out []core.ID
		var retry time.Duration
		err := s.guarded(func() error {
			var err error
			out, retry, err = c.attempt(ctx, s, dst, want-len(dst))
			return err
		})
		if err == nil {
			dst = out
			// Read first: a compare-and-swap takes the line for writing even
			// when it fails, and every call passes here.
			if c.fallback.Load() && c.fallback.CompareAndSwap(true, false) {
				c.log.Info("client: a server answers again (method central)", "server", s.addr)
			}
			if retry > 0 {
				b := c.clock.Now().Add(retry).UnixNano()
				s.busyUntil.Store(b)
				idle++
				until = earliest(until, b)
				continue
			}
			idle, fails, until = 0, 0, 0
			continue
		}
		if errors.Is(err, errSilent) && !resent {
			// Another call's timeout closed the connection this one was
			// on (and the breaker counted that call): ask again, once,
			// on a new connection, so that one pause fails one call,
			// not every call in flight.
			resent = true
			i--
			continue
		}
		idle++
		if rejected(err) {
			s.calls.add(resultRejected)
			if last == nil {
				last = fmt.Errorf("client: %s: %w", s.addr, err)
			}
			continue
		}
		if errors.Is(err, ErrServerShape) { // not a failure: no retry spent
			shaped = err
			continue
		}
		fails++
		switch {
		case errors.Is(err, errCallerGone):
			return dst, context.Cause(ctx)
		case errors.Is(err, ErrClosed):
			return dst, ErrClosed
		case !retryable(err):
			return dst, err
		}
		c.log.Debug("client: attempt failed", "server", s.addr, "err", err)
		last = err
	}
	return dst, nil
}

// earliest is the earlier of two busy marks; 0 is none.
func earliest(a, b int64) int64 {
	if a == 0 || b < a {
		return b
	}
	return a
}

// wait sleeps until the clock reads until (nanoseconds), or ctx ends, or
// the client closes; it returns how long it slept.
func (c *Client) wait(ctx context.Context, until int64) (time.Duration, error) {
	start := c.clock.Now()
	d := time.Duration(until - start.UnixNano())
	if d <= 0 {
		return 0, nil
	}
	select {
	case <-c.clock.After(d):
		return d, nil
	case <-ctx.Done():
		return c.clock.Now().Sub(start), ctx.Err()
	case <-c.bg.Done():
		return c.clock.Now().Sub(start), ErrClosed
	}
}

// spawn runs f on a goroutine that Close waits for, unless the client is
// closed.
func (c *Client) spawn(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Go(f)
	return true
}

// live fails when the client is closed or the caller's context ended.
func (c *Client) live(ctx context.Context) error {
	if c.bg.Err() != nil {
		return ErrClosed
	}
	return ctx.Err()
}

// attempt makes one call on s within Timeout. A retry above zero says the
// server was busy: it gave fewer IDs than asked (maybe none) and has room
// again after retry.
func (c *Client) attempt(ctx context.Context, s *server, dst []core.ID, n int) ([]core.ID, time.Duration, error) {
	out, retry, err := c.call(ctx, c.cfg.Timeout, s, dst, n)
	if err == nil {
		if retry > 0 {
			s.calls.busy.Add(1)
		} else {
			s.calls.ok.Add(1)
		}
		return out, retry, nil
	}
	result, err := c.classify(ctx, s, err)
	s.calls.add(result)
	return out, 0, err
}

// call asks s for up to n IDs: with Vesta.TakeIDs when the server has it
// (it answers at once, with fewer IDs and a retry_after_ms when its
// sequence is short), else Vesta.GenID for one and Vesta.GenIDs for more
// (at most the server's max_batch; they wait in the server at the ceiling).
// The call's deadline is timeout from now; a single call riding a group
// that another opened reads no clock for it (the group's is the opener's).
func (c *Client) call(ctx context.Context, timeout time.Duration, s *server, dst []core.ID, n int) ([]core.ID, time.Duration, error) {
	cn, err := s.conn(ctx, timeout)
	if err != nil {
		return dst, 0, err
	}
	if cn.refused != nil {
		return dst, 0, cn.refused
	}
	k := min(n, cn.info.maxBatch)
	if k == 1 && cn.info.singles {
		// One ID: ride the connection's group with the other single
		// calls queued meanwhile, one request for all of them.
		id, retry, err := cn.single(ctx, timeout)
		if err != nil || retry > 0 {
			return dst, retry, err
		}
		return append(dst, id), 0, nil
	}
	deadline := time.Now().Add(timeout)
	if cn.info.takeIDs {
		var res wire.TakeIDsResult
		if err := cn.invoke(ctx, deadline, wire.ProcTakeIDs, &wire.TakeIDsParams{Count: uint64(k)}, &res); err != nil {
			return dst, 0, err
		}
		if len(res.IDs) > k {
			return dst, 0, fmt.Errorf("%w: %s: %d IDs for a count of %d", ErrProtocol, wire.ProcTakeIDs, len(res.IDs), k)
		}
		for _, id := range res.IDs {
			dst = append(dst, core.ID(id))
		}
		if len(res.IDs) == k {
			return dst, 0, nil
		}
		// Short: busy. A retry_after_ms of 0 would be a server's bug; a
		// millisecond keeps the client from spinning on it.
		ms := min(max(res.RetryAfterMS, 1), uint64(maxRetryAfter/time.Millisecond))
		return dst, time.Duration(ms) * time.Millisecond, nil
	}
	if k == 1 {
		var id uint64
		if err := cn.invoke(ctx, deadline, wire.ProcGenID, nil, &id); err != nil {
			return dst, 0, err
		}
		return append(dst, core.ID(id)), 0, nil
	}
	var ids []uint64
	if err := cn.invoke(ctx, deadline, wire.ProcGenIDs, wire.GenIDsParams{Count: uint64(k)}, &ids); err != nil {
		return dst, 0, err
	}
	if len(ids) != k {
		return dst, 0, fmt.Errorf("%w: %s: %d IDs for a count of %d", ErrProtocol, wire.ProcGenIDs, len(ids), k)
	}
	for _, id := range ids {
		dst = append(dst, core.ID(id))
	}
	return dst, 0, nil
}

// classify turns an attempt's error into the error returned and the
// metric's result label.
func (c *Client) classify(ctx context.Context, s *server, err error) (string, error) {
	switch {
	case c.bg.Err() != nil:
		return resultCanceled, ErrClosed
	case ctx.Err() != nil:
		return resultCanceled, fmt.Errorf("%w: %w", errCallerGone, ctx.Err())
	case errors.Is(err, ErrTimeout):
		return resultTimeout, fmt.Errorf("client: %s: %w (%v)", s.addr, ErrTimeout, c.cfg.Timeout)
	case errors.Is(err, ErrServerShape):
		return resultShape, err // it names the server
	}
	if we := (*api.Error)(nil); errors.As(err, &we) {
		return string(we.Code), fmt.Errorf("client: %s: %w", s.addr, err)
	}
	if errors.Is(err, ErrProtocol) {
		return resultProtocol, fmt.Errorf("client: %s: %w", s.addr, err)
	}
	return resultNetwork, fmt.Errorf("client: %s: %w", s.addr, err)
}

// answered reports a server's refusal of the call as sent (bad arguments,
// an unknown tag): the server works, so its breaker counts a success.
func answered(err error) bool {
	return errors.Is(err, &api.Error{Code: api.InvalidArgument}) || errors.Is(err, &api.Error{Code: api.NotFound})
}

// retryable reports whether another server may succeed: after any failure
// of the connection, and after the error codes api calls retryable.
func retryable(err error) bool {
	if we := (*api.Error)(nil); errors.As(err, &we) {
		return we.Code.Retryable()
	}
	return true
}

// Explain takes an ID apart with the servers' layout and epoch, learned
// from Vesta.Info on first contact; before any server was reached, with
// FallbackConfig's.
func (c *Client) Explain(id core.ID) core.Explanation { return c.identity().codec.Explain(id) }

// Make builds an ID locally with the servers' codec. Fields left nil take
// the first server's version, type and machine and the central method
// (before any server was reached: FallbackConfig's version, type and
// machine).
func (c *Client) Make(p core.Partial) (core.ID, error) {
	id := c.identity()
	own := core.Fields{Version: uint64(id.version), Type: uint64(id.typ), Method: uint64(core.Central), Machine: uint64(id.machine)}
	return id.codec.Make(p.Fill(own))
}

// TransTime turns a time field of the servers' type into an instant.
func (c *Client) TransTime(units uint64) (time.Time, error) {
	id := c.identity()
	return id.codec.TransTime(id.typ, units)
}

// ServerState is a server's address and breaker state, for monitoring.
type ServerState struct {
	Addr    string
	Breaker gobreaker.State
}

// Servers returns the state of every server, in Config.Servers order.
func (c *Client) Servers() []ServerState {
	out := make([]ServerState, len(c.servers))
	for i, s := range c.servers {
		out[i] = ServerState{Addr: s.addr, Breaker: s.cb.State()}
	}
	return out
}

// InFallback reports whether the last IDs came from the fallback.
func (c *Client) InFallback() bool { return c.fallback.Load() }

// Close drops prefetched IDs, closes every connection, waits for the
// client's goroutines and closes the fallback (saving its time guard's
// mark). Calls in flight fail with ErrClosed. It is idempotent; later
// calls return the first result.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.cancel()
		c.mu.Lock()
		c.closed = true
		conns := make([]*conn, 0, len(c.conns))
		for cn := range c.conns {
			conns = append(conns, cn)
		}
		c.mu.Unlock()
		for _, cn := range conns {
			cn.close(ErrClosed)
		}
		c.wg.Wait()
		if c.fb != nil {
			c.closeErr = c.fb.close()
		}
	})
	return c.closeErr
}
