package core

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Share deals a generator's IDs fairly between the callers of a server when
// they ask for more than the sequence can issue (its ceiling: 2^seq-bits
// per unit: about a million per second, about four million in the leaf
// layout; plus MaxBorrow of credit).
//
// Batches are paced: a call of more than one ID never takes IDs beyond
// the pace, the point the sequence would reach if it ran at its ceiling
// since MaxBorrow ahead of the clock, so it runs MaxBorrow ahead of the
// clock at most, and no further ahead within a unit than the clock is.
// What a greedy caller cannot take at once it waits for (Append) or is
// told to retry for (Take), and single IDs, which are not paced, always
// find the rest of the unit ahead of the pace: one greedy connection can
// slow others' batches to a fair share of the ceiling, but cannot make a
// single ID wait for the next unit.
//
// Waiting calls are queued per key (a connection, a client address) and
// served round-robin between keys, a quantum each, as the pace frees IDs;
// their results grow as IDs are issued. Their number and the IDs they are
// owed are bounded over the whole Share (ShareConfig): beyond, a call fails
// at once with ErrBusy. One goroutine, owned by the Share and running only
// while calls wait, serves them all.
type Share struct {
	g        *Generator
	cfg      ShareConfig
	perTick  uint64 // IDs the pace frees in shareTick
	nWaiting atomic.Int64
	keysN    atomic.Int64 // keys with waiting calls

	mu      sync.Mutex
	keys    map[uint64]*shareKey
	ring    []*shareKey // keys with waiting calls, in serving order
	next    int         // ring index served first in the next round
	ids     int         // IDs owed to waiting calls
	calls   int
	running bool
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup
}

// ShareConfig bounds what waits in a Share. The zero value takes the
// defaults.
type ShareConfig struct {
	// MaxWaitingIDs bounds the IDs owed to waiting calls, over all keys;
	// a call whose IDs would pass it fails at once with ErrBusy. Zero is
	// DefaultMaxWaitingIDs.
	MaxWaitingIDs int
	// MaxWaitingCalls bounds the calls that wait, over all keys; zero is
	// DefaultMaxWaitingCalls.
	MaxWaitingCalls int
}

// The defaults of ShareConfig: a second of a max-peak sequence (8 MiB of
// results at most), and calls enough for every connection of a busy
// server to have a few waiting.
const (
	DefaultMaxWaitingIDs   = 1 << 20
	DefaultMaxWaitingCalls = 4096
)

// Validate reports the first field that cannot be used, by name.
func (c ShareConfig) Validate() error {
	if c.MaxWaitingIDs < 0 {
		return fmt.Errorf("%w: MaxWaitingIDs %d is negative", ErrConfig, c.MaxWaitingIDs)
	}
	if c.MaxWaitingCalls < 0 {
		return fmt.Errorf("%w: MaxWaitingCalls %d is negative", ErrConfig, c.MaxWaitingCalls)
	}
	return nil
}

// shareTick is how often the serving goroutine deals what the pace freed
// while calls wait: a millisecond of the ceiling, some thousand IDs.
const shareTick = time.Millisecond

// minShareSleep keeps the serving goroutine from spinning on timers
// shorter than the system can keep.
const minShareSleep = 100 * time.Microsecond

type shareKey struct {
	key    uint64
	q      []*shareWaiter // FIFO
	inRing bool
}

type shareWaiter struct {
	key    *shareKey
	m      Method
	ids    []ID
	want   int // still owed
	done   func([]ID, error)
	stop   func() bool // stops the context's AfterFunc
	err    error
	queued bool
	from   *run // the run its IDs come from, once it has some
}

// NewShare returns a Share of g's IDs. It copies cfg.
func NewShare(g *Generator, cfg ShareConfig) (*Share, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.MaxWaitingIDs = cmp.Or(cfg.MaxWaitingIDs, DefaultMaxWaitingIDs)
	cfg.MaxWaitingCalls = cmp.Or(cfg.MaxWaitingCalls, DefaultMaxWaitingCalls)
	per := uint64(shareTick) << g.sb / uint64(g.unitMs*1e6)
	return &Share{g: g, cfg: cfg, perTick: max(per, 1), keys: map[uint64]*shareKey{}, closing: make(chan struct{})}, nil
}

// Waiting returns how many IDs waiting calls are owed and how many calls
// wait.
func (s *Share) Waiting() (ids, calls int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids, s.calls
}

// pace is the exclusive packed-state bound of batches at clock reading ns
// (never 0, which means no bound): MaxBorrow ahead of the clock and as far
// into that unit as the clock is into its own, but never below the end of
// the clock's unit, so that without borrowing batches are not paced at all.
func (g *Generator) pace(ns int64) uint64 {
	if ns < g.epochNs {
		return 1
	}
	unitNs := uint64(g.unitMs * 1e6)
	x := uint64(ns - g.epochNs)
	u := x / unitNs
	p := (u+g.borrow)<<g.sb + (x%unitNs)<<g.sb/unitNs
	return max(min(max(p, (u+1)<<g.sb), g.endPk), 1)
}

// paceTime is the Unix ns at which the pace passes state p, so that p can
// be issued.
func (g *Generator) paceTime(p uint64) int64 {
	unitNs := uint64(g.unitMs * 1e6)
	if g.borrow == 0 { // the pace is the end of the clock's unit
		return g.epochNs + int64((p>>g.sb)*unitNs)
	}
	b := g.borrow << g.sb
	if p < b {
		return g.epochNs
	}
	x := p - b + 1                                     // the pace must pass p
	frac := ((x&g.seqMask)*unitNs + g.seqMask) >> g.sb // rounded up
	return g.epochNs + int64((x>>g.sb)*unitNs+frac)
}

// quantum is what a key may take in one turn: the IDs the pace has freed
// (a tick's worth at least), split between keys.
func (s *Share) quantum(keys int) int {
	g := s.g
	free := s.perTick
	if p, st := g.pace(g.nowNanos()), g.cur.Load().state.Load(); p > st+1 && st&closedBit == 0 {
		free = max(free, p-st-1)
	}
	return int(max(free/uint64(max(keys, 1)), 1))
}

// Take issues up to n IDs with method m at once and never waits: a single
// ID whenever the sequence has one, more up to the pace, and while calls
// wait in the Share only a fair share beside them. When it gave fewer than
// n, retryAfter (above zero) says when asking again may give more.
func (s *Share) Take(m Method, dst []ID, n int) ([]ID, time.Duration, error) {
	if n == 1 {
		return s.g.tryAppend(m, dst, 1, 0, nil)
	}
	if err := checkCount(n); err != nil {
		return dst, 0, err
	}
	k := int(s.keysN.Load())
	ask := n
	if k > 0 {
		ask = min(n, s.quantum(k+1))
	}
	before := len(dst)
	dst, d, err := s.g.tryAppend(m, dst, ask, s.g.pace(s.g.nowNanos()), nil)
	if err == nil && len(dst)-before < n {
		d = max(d, shareTick)
	}
	return dst, d, err
}

// Append issues n IDs with method m for the caller key, appended to dst in
// increasing order. What the pace allows at once is issued on the caller's
// goroutine: when that is all of them (or the call fails at once), Append
// returns them with queued false and never calls done. Otherwise the call
// waits in the queue of key, served round-robin with other keys, and done
// is called once, from another goroutine, with dst and every ID, or with
// an error: ctx's when it ends, ErrClosed when the Share or the generator
// closes, or the generator's. A call that would pass the Share's bounds,
// or that must wait while done is nil, fails at once with ErrBusy. The IDs
// that come with an error are not to be used.
func (s *Share) Append(ctx context.Context, key uint64, m Method, dst []ID, n int, done func([]ID, error)) (ids []ID, queued bool, err error) {
	if err := validMethod(m); err != nil {
		return dst, false, err
	}
	if err := checkCount(n); err != nil {
		return dst, false, err
	}
	before := len(dst)
	var from *run // the run of the call's IDs
	if s.nWaiting.Load() == 0 || n == 1 {
		// Nobody waits (or a single ID, never paced): issue inline what
		// can be, and queue only the rest.
		pace := s.g.pace(s.g.nowNanos())
		if n == 1 {
			pace = 0
		}
		var err error
		dst, _, err = s.g.tryAppend(m, dst, n, pace, &from)
		if err != nil || len(dst)-before == n {
			return dst, false, err
		}
	}
	if done == nil {
		return dst, false, fmt.Errorf("%w: the call would wait", ErrBusy)
	}
	if err := ctx.Err(); err != nil {
		return dst, false, err
	}
	w := &shareWaiter{m: m, ids: dst, want: n - (len(dst) - before), done: done, from: from}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return dst, false, ErrClosed
	case s.calls >= s.cfg.MaxWaitingCalls:
		err := fmt.Errorf("%w: %d calls wait for the sequence already (max %d)", ErrBusy, s.calls, s.cfg.MaxWaitingCalls)
		s.mu.Unlock() // after reading s.calls: serve changes it
		return dst, false, err
	case s.ids+w.want > s.cfg.MaxWaitingIDs:
		err := fmt.Errorf("%w: %d IDs are owed to waiting calls already, %d more would pass the maximum %d",
			ErrBusy, s.ids, w.want, s.cfg.MaxWaitingIDs)
		s.mu.Unlock() // after reading s.ids: serve changes it
		return dst, false, err
	}
	k := s.keys[key]
	if k == nil {
		k = &shareKey{key: key}
		s.keys[key] = k
	}
	w.key = k
	w.queued = true
	k.q = append(k.q, w)
	if !k.inRing {
		k.inRing = true
		s.ring = append(s.ring, k)
		s.keysN.Store(int64(len(s.ring)))
	}
	s.ids += w.want
	s.calls++
	s.nWaiting.Store(int64(s.calls))
	if !s.running {
		s.running = true
		s.wg.Add(1)
		go s.serve()
	}
	if ctx.Done() != nil { // under mu: serve reads w.stop once w is done
		w.stop = context.AfterFunc(ctx, func() { s.cancel(w, ctx.Err()) })
	}
	s.mu.Unlock()
	return nil, true, nil
}

// AppendIDs is Append that blocks until done: it returns dst with the n
// IDs, or an error.
func (s *Share) AppendIDs(ctx context.Context, key uint64, m Method, dst []ID, n int) ([]ID, error) {
	type result struct {
		ids []ID
		err error
	}
	ch := make(chan result, 1)
	ids, queued, err := s.Append(ctx, key, m, dst, n, func(ids []ID, err error) { ch <- result{ids, err} })
	if !queued {
		return ids, err
	}
	r := <-ch
	return r.ids, r.err
}

// cancel ends w with err if it still waits.
func (s *Share) cancel(w *shareWaiter, err error) {
	s.mu.Lock()
	if !w.queued {
		s.mu.Unlock()
		return
	}
	s.remove(w)
	s.mu.Unlock()
	w.done(w.ids, err)
}

// remove takes w off its key's queue; the caller holds mu.
func (s *Share) remove(w *shareWaiter) {
	w.queued = false
	s.ids -= w.want
	s.calls--
	s.nWaiting.Store(int64(s.calls))
	k := w.key
	for i, x := range k.q {
		if x == w {
			k.q = append(k.q[:i], k.q[i+1:]...)
			break
		}
	}
	if len(k.q) == 0 {
		k.q = nil
		delete(s.keys, k.key)
		if k.inRing {
			k.inRing = false
			for i, x := range s.ring {
				if x == k {
					s.ring = append(s.ring[:i], s.ring[i+1:]...)
					if s.next > i {
						s.next--
					}
					break
				}
			}
			if s.next >= len(s.ring) {
				s.next = 0
			}
			s.keysN.Store(int64(len(s.ring)))
		}
	}
}

// serve deals IDs to waiting calls until none waits or the Share closes.
func (s *Share) serve() {
	defer s.wg.Done()
	var finished []*shareWaiter
	for {
		s.mu.Lock()
		if s.calls == 0 || s.closed {
			s.running = false
			s.mu.Unlock()
			return
		}
		d := s.round(&finished)
		// Closing the generator closes its run's limit channel: wake on
		// it, so waiting calls learn at once.
		wake := *s.g.cur.Load().limitCh.Load()
		s.mu.Unlock()
		for i, w := range finished {
			if w.stop != nil {
				w.stop()
			}
			w.done(w.ids, w.err)
			finished[i] = nil
		}
		finished = finished[:0]
		if d <= 0 {
			continue
		}
		select {
		case <-s.g.clock.After(max(d, minShareSleep)):
		case <-wake:
		case <-s.closing:
		}
	}
}

// round gives every key in the ring one turn, a quantum to the call at the
// head of its queue, starting where the last round stopped. It returns how
// long to sleep before the next round (0: go on at once). The caller holds
// mu; the finished calls are appended to fin.
func (s *Share) round(fin *[]*shareWaiter) time.Duration {
	g := s.g
	q := s.quantum(len(s.ring))
	for turns := len(s.ring); turns > 0 && len(s.ring) > 0; turns-- {
		if s.next >= len(s.ring) {
			s.next = 0
		}
		k := s.ring[s.next]
		w := k.q[0]
		ask := min(w.want, q)
		before := len(w.ids)
		ns := g.nowNanos()
		var d time.Duration
		var err error
		w.ids, d, err = g.tryAppend(w.m, w.ids, ask, g.pace(ns), &w.from)
		got := len(w.ids) - before
		w.want -= got
		s.ids -= got
		if err != nil {
			// The generator cannot issue (closed, fenced, clock, guard):
			// no waiting call can be served.
			for len(s.ring) > 0 {
				x := s.ring[0].q[0]
				x.err = err
				s.remove(x)
				*fin = append(*fin, x)
			}
			return 0
		}
		if w.want == 0 {
			s.remove(w) // moves the ring: the next key is now at s.next
			*fin = append(*fin, w)
		} else {
			s.next++
		}
		if got < ask {
			if d <= 0 { // the pace, not the sequence: wait for a tick's worth
				d = time.Duration(g.paceTime(g.cur.Load().state.Load()&^closedBit+min(uint64(w.want), s.perTick)) - ns)
			}
			if got == 0 {
				s.next-- // its turn is not used: it goes first next time
				if s.next < 0 {
					s.next = len(s.ring) - 1
				}
			}
			return max(d, minShareSleep)
		}
	}
	return 0
}

// Close fails every waiting call with ErrClosed, and later calls that
// would wait, and waits for the serving goroutine. It is idempotent.
func (s *Share) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	close(s.closing)
	var all []*shareWaiter
	for len(s.ring) > 0 {
		w := s.ring[0].q[0]
		s.remove(w)
		all = append(all, w)
	}
	s.mu.Unlock()
	for _, w := range all {
		if w.stop != nil {
			w.stop()
		}
		w.done(w.ids, ErrClosed)
	}
	s.wg.Wait()
	return nil
}

// Backlog estimates how long a call of n IDs would wait: until the pace
// has freed n IDs beyond those owed to the calls waiting already. It is 0
// when the pace has room now.
func (s *Share) Backlog(n int) time.Duration {
	owed, _ := s.Waiting()
	g := s.g
	ns := g.nowNanos()
	st := g.cur.Load().state.Load() &^ closedBit
	need := st + uint64(owed) + uint64(max(n, 0))
	if need < g.pace(ns) {
		return 0
	}
	return time.Duration(max(g.paceTime(need)-ns, 0))
}
