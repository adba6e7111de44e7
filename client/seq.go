package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/segment"
)

// Segment sequences: dense numbers per tag from the servers' segment
// issuers (Vesta.NextSeq, Vesta.NextSeqs). Unlike IDs they have no
// fallback: numbers come only from the store the servers share. An attempt
// that fails for a reason of one server (unavailable: its buffers ran out
// while the store is down, or the connection) is retried on another, whose
// buffers may still hold numbers.

// Defaults and bounds of the sequence fields of Config.
const (
	defaultSeqMaxTags = 64
	maxSeqMaxTags     = 1 << 16
	maxSeqPrefetch    = 1 << 20
)

// seqState is the client's per-tag prefetch buffers. A tag gets a buffer
// only once a server issued numbers of it, so calls with unknown tags
// cannot push out the buffers of real ones; past Config.SeqMaxTags the
// least recently used buffer is dropped (its numbers are skipped, never
// reused).
type seqState struct {
	mu   sync.Mutex
	bufs map[string]*seqBuf
	tick uint64
}

// seqBuf holds numbers of one tag, taken from the front. Every number
// leaves it exactly once, under seqState.mu.
type seqBuf struct {
	tag     string
	nums    pieces[int64] // in the order the refills' pieces came
	used    uint64        // seqState.tick at the last take, for eviction
	filling bool          // a refill is running
	round   chan struct{} // closed when the running refill ends
	failed  error         // why the last refill fell short
	dropped bool          // evicted: refills no longer add to it
}

// NextSeq returns the next number of tag's segment sequence. With
// Config.SeqPrefetch it comes from the tag's buffer when that holds one
// (refilled in the background when half empty), else from a server.
// Numbers are unique across every server and client of a store; they
// increase within one server, but not across servers, so a client that
// spreads calls over several servers (or refills from several) sees them
// unordered.
//
// Errors: an unknown tag is a *api.Error with code not_found (test it
// with errors.Is(err, &api.Error{Code: api.NotFound})),
// a bad tag name segment.ErrInvalidTag, no server able to issue
// ErrUnavailable.
func (c *Client) NextSeq(ctx context.Context, tag string) (int64, error) {
	if err := segment.ValidTag(tag); err != nil {
		return 0, fmt.Errorf("client: NextSeq: %w", err)
	}
	if c.cfg.SeqPrefetch > 0 {
		v, ok, err := c.takeSeq(ctx, tag)
		switch {
		case ok:
			return v, nil
		case err != nil:
			return 0, err
		}
	}
	var v int64
	err := c.seqServers(ctx, func(ctx context.Context, deadline time.Time, cn *conn) error {
		return cn.invoke(ctx, deadline, wire.ProcNextSeq, wire.NextSeqParams{Tag: tag}, &v)
	})
	if err != nil {
		return 0, err
	}
	c.seqKnown(tag)
	return v, nil
}

// NextSeqs returns n numbers of tag in increasing order: from the tag's
// buffer when it holds n, else from the servers, in calls of at most a
// server's max_batch that may reach different servers.
func (c *Client) NextSeqs(ctx context.Context, tag string, n int) ([]int64, error) {
	if err := segment.ValidTag(tag); err != nil {
		return nil, fmt.Errorf("client: NextSeqs: %w", err)
	}
	if n < 1 || n > segment.MaxCount {
		return nil, fmt.Errorf("client: NextSeqs(%d): %w: want 1-%d", n, segment.ErrInvalidCount, segment.MaxCount)
	}
	var out []int64
	if c.cfg.SeqPrefetch > 0 {
		out = c.takeSeqN(tag, n)
	}
	if out == nil {
		var err error
		if out, err = c.fetchSeq(ctx, tag, n); err != nil {
			return nil, err
		}
		c.seqKnown(tag)
	}
	if !slices.IsSorted(out) {
		slices.Sort(out)
	}
	return out, nil
}

// fetchSeq gets n numbers of tag from the servers; on error it returns
// what came before it.
func (c *Client) fetchSeq(ctx context.Context, tag string, n int) ([]int64, error) {
	return inParts(ctx, c, n, 0, "Vesta.NextSeqs: %d numbers for a count of %d", tag,
		func(ctx context.Context, deadline time.Time, cn *conn, tag string, _, k int, got *[]int64) error {
			return cn.invoke(ctx, deadline, wire.ProcNextSeqs, wire.NextSeqsParams{Tag: tag, Count: uint64(k)}, got)
		})
}

// inParts makes a call of n items (numbers, IDs, masks) as parts a server
// takes, each of at most its max_batch and of most (0: no other limit),
// one seqServers call each, and returns the answers in order; on an error,
// the answers before it. call asks cn for the k answers of the part at
// start into got (arg is the call's own, so that a call that needs no
// more captures nothing); an answer that is not k long is ErrProtocol,
// told by short (a format of the answers' and the items' count).
func inParts[T, A any](ctx context.Context, c *Client, n, most int, short string, arg A, call func(ctx context.Context, deadline time.Time, cn *conn, arg A, start, k int, got *[]T) error) ([]T, error) {
	out := make([]T, 0, n)
	for len(out) < n {
		var got []T
		err := c.seqServers(ctx, func(ctx context.Context, deadline time.Time, cn *conn) error {
			k := min(n-len(out), cn.info.maxBatch)
			if most > 0 {
				k = min(k, most)
			}
			got = got[:0]
			if err := call(ctx, deadline, cn, arg, len(out), k, &got); err != nil {
				return err
			}
			if len(got) != k {
				return fmt.Errorf("%w: "+short, ErrProtocol, len(got), k)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// seqServers makes one call, fn, on a server: as Client.central does for
// IDs, up to 1+Retries different servers from the next one in turn,
// skipping those whose breaker is open. It fails with ErrUnavailable when
// no server answered, and returns the errors of a server that no other
// would answer differently (invalid_argument, not_found, internal) as they
// are.
func (c *Client) seqServers(ctx context.Context, fn seqCall) error {
	var last error
	start := int(c.next.Add(1) - 1)
	for i, tries := 0, 0; i < len(c.servers) && tries <= c.cfg.Retries; i++ {
		if err := c.live(ctx); err != nil {
			return err
		}
		s := c.servers[(start+i)%len(c.servers)]
		err := s.guarded(func() error { return c.seqAttempt(ctx, s, fn) })
		if err == nil {
			return nil
		}
		if rejected(err) {
			s.calls.add(resultRejected)
			if last == nil {
				last = fmt.Errorf("client: %s: %w", s.addr, err)
			}
			continue
		}
		tries++
		switch {
		case errors.Is(err, errCallerGone):
			return context.Cause(ctx)
		case errors.Is(err, ErrClosed):
			return ErrClosed
		case !retryable(err):
			return err
		}
		c.log.Debug("client: sequence attempt failed", "server", s.addr, "err", err)
		last = err
	}
	if err := c.live(ctx); err != nil {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, last)
}

// seqCall is one call of a sequence procedure on cn, due by deadline.
type seqCall func(ctx context.Context, deadline time.Time, cn *conn) error

// seqAttempt is one call on s within Timeout.
func (c *Client) seqAttempt(ctx context.Context, s *server, fn seqCall) error {
	deadline := time.Now().Add(c.cfg.Timeout)
	cn, err := s.conn(ctx, c.cfg.Timeout)
	if err == nil {
		err = fn(ctx, deadline, cn)
	}
	if err == nil {
		s.calls.ok.Add(1)
		return nil
	}
	result, err := c.classify(ctx, s, err)
	s.calls.add(result)
	return err
}

// seqKnown gives tag a buffer once a server issued numbers of it, and
// starts its first refill.
func (c *Client) seqKnown(tag string) {
	if c.cfg.SeqPrefetch == 0 {
		return
	}
	st := &c.seq
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.bufs == nil {
		st.bufs = make(map[string]*seqBuf)
	}
	if st.bufs[tag] != nil {
		return
	}
	if len(st.bufs) >= c.cfg.SeqMaxTags {
		var lru *seqBuf
		for _, b := range st.bufs {
			if lru == nil || b.used < lru.used {
				lru = b
			}
		}
		lru.dropped, lru.nums = true, pieces[int64]{}
		delete(st.bufs, lru.tag)
	}
	st.tick++
	b := &seqBuf{tag: tag, used: st.tick, round: make(chan struct{})}
	st.bufs[tag] = b
	c.askSeqLocked(b)
}

// askSeqLocked starts a refill of b unless one runs; c.seq.mu is held.
func (c *Client) askSeqLocked(b *seqBuf) {
	if b.filling || b.dropped {
		return
	}
	b.filling = c.spawn(func() { c.refillSeq(b) })
}

// refillSeq fills b up to Config.SeqPrefetch from the servers, keeping
// what came when a call failed.
func (c *Client) refillSeq(b *seqBuf) {
	st := &c.seq
	st.mu.Lock()
	want := c.cfg.SeqPrefetch - b.nums.n
	st.mu.Unlock()
	var got []int64
	var err error
	if want > 0 {
		got, err = c.fetchSeq(c.bg, b.tag, want)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	b.failed = err
	if !b.dropped && c.bg.Err() == nil {
		b.nums.push(got)
	}
	b.filling = false
	close(b.round)
	b.round = make(chan struct{})
}

// takeSeq returns a buffered number of tag. With the buffer empty it waits
// for one refill; if that brings nothing for this caller it reports
// ok=false, with the refill's error when that is final for the call (an
// invalid argument, or no server), and the caller asks a server itself.
func (c *Client) takeSeq(ctx context.Context, tag string) (v int64, ok bool, err error) {
	st := &c.seq
	for waited := false; ; waited = true {
		st.mu.Lock()
		b := st.bufs[tag]
		if b == nil {
			st.mu.Unlock()
			return 0, false, nil
		}
		st.tick++
		b.used = st.tick
		if b.nums.n > 0 {
			v = b.nums.take(1)[0]
			if b.nums.n < max(1, c.cfg.SeqPrefetch/2) {
				c.askSeqLocked(b)
			}
			st.mu.Unlock()
			return v, true, nil
		}
		if waited {
			err := b.failed
			st.mu.Unlock()
			if err != nil && (answered(err) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrClosed)) {
				return 0, false, err
			}
			return 0, false, nil
		}
		round := b.round
		c.askSeqLocked(b)
		st.mu.Unlock()
		select {
		case <-round:
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
	}
}

// takeSeqN returns n buffered numbers of tag if its buffer holds that
// many, else none.
func (c *Client) takeSeqN(tag string, n int) []int64 {
	if n > c.cfg.SeqPrefetch {
		return nil // no buffer holds that many
	}
	out := make([]int64, 0, n) // allocated outside the lock
	st := &c.seq
	st.mu.Lock()
	defer st.mu.Unlock()
	b := st.bufs[tag]
	if b == nil {
		return nil
	}
	st.tick++
	b.used = st.tick
	if b.nums.n < n {
		c.askSeqLocked(b)
		return nil
	}
	for len(out) < n {
		out = append(out, b.nums.take(n-len(out))...)
	}
	if b.nums.n < max(1, c.cfg.SeqPrefetch/2) {
		c.askSeqLocked(b)
	}
	return out
}
