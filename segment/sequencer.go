package segment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// missRefresh bounds how often a request for a tag the issuer does not know
// re-reads the tag list, so unknown names cannot hammer the store.
const missRefresh = time.Second

// Sequencer hands out numbers per tag from ranges reserved in a Store, with
// Leaf's double buffer: while one range is issued, the next is fetched in
// the background once Threshold of the current one is used. Safe for
// concurrent use.
type Sequencer struct {
	store Store
	cfg   Config

	ctx    context.Context // cancelled by Close; parent of every store call
	cancel context.CancelFunc
	wg     sync.WaitGroup // fetches, retries and the refresh loop
	closed atomic.Bool
	// life orders goroutine starts before Close: a start holds it shared,
	// Close exclusively while it sets closed, so no wg.Add follows Close's
	// Wait.
	life sync.RWMutex

	tags atomic.Pointer[map[string]*buffer] // copy on write

	mu          sync.Mutex // guards the fields below and writes of tags
	lastMiss    time.Time  // last tag-list read on a miss
	refreshing  chan struct{}
	lastListErr error

	closeOnce sync.Once
}

// seg is one range being issued: next is the next number to hand out; the
// counter may run past last (callers then move to the next range).
type seg struct {
	next    atomic.Int64
	first   int64
	last    int64
	trigger int64 // once a number >= trigger is issued, fetch the next range
	// ord counts the tag's fetches before this range's (-1: the empty
	// range of a tag not yet fetched); Buffers places it in Leaf's slot
	// ord%2.
	ord int64
}

func newSeg(r Range, threshold float64) *seg {
	s := &seg{first: r.First, last: r.Last}
	s.next.Store(r.First)
	used := int64(math.Ceil(float64(r.Len()) * threshold))
	if used < 1 {
		used = 1
	}
	// Leaf starts the fetch when idle < 0.9*step, i.e. once more than 10%
	// is issued: the number at offset `used` is the first past it.
	s.trigger = r.First + used
	if s.trigger > r.Last {
		s.trigger = r.Last
	}
	return s
}

// remaining counts the numbers of s not yet handed out.
func (s *seg) remaining() int64 {
	n := s.next.Load()
	if n < s.first || n > s.last {
		return 0
	}
	return s.last - n + 1
}

// buffer is Leaf's SegmentBuffer: the current range and the next one of a
// tag, and the state of the dynamic step.
type buffer struct {
	tag    string
	cur    atomic.Pointer[seg]
	issued atomic.Int64
	// wantNext is true when no next range is held and no fetch runs: the
	// fast path then checks the threshold.
	wantNext atomic.Bool

	mu       sync.Mutex
	next     *seg
	fetching chan struct{} // non-nil while a fetch runs; closed at its end
	lastErr  error         // of the last fetch; nil if it succeeded
	retryAt  time.Time     // no new fetch before, after a failure
	retrying bool          // a retry goroutine waits
	high     int64         // the highest Last fetched (MinInt64: none); later ranges must be above
	// Leaf's dynamic step.
	fetches   int64
	step      int64
	minStep   int64
	lastFetch time.Time
	// Stats.
	storeErrors int64
	latency     time.Duration
	waits       int64
}

// Open makes an Sequencer on store, which stays owned by the caller (Close
// does not close it). It reads the tag list and fetches the first range of
// each Preload tag; a store that cannot be reached is logged and retried
// in the background (Ready tells), but a preloaded tag the store does not
// know fails Open.
func Open(ctx context.Context, store Store, cfg Config) (*Sequencer, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: store is nil", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	is := &Sequencer{store: store, cfg: cfg}
	is.ctx, is.cancel = context.WithCancel(context.Background())
	empty := map[string]*buffer{}
	is.tags.Store(&empty)

	if err := is.refresh(ctx); err != nil {
		cfg.Logger.Warn("segment: reading the tag list at open", "err", err)
	}
	for _, tag := range cfg.Preload {
		b, err := is.buffer(ctx, tag)
		if err == nil {
			_, err = b.wait(ctx, is, b.cur.Load())
		}
		if errors.Is(err, ErrUnknownTag) || errors.Is(err, ErrBadRange) {
			is.Close()
			return nil, fmt.Errorf("segment: Preload %q: %w", tag, err)
		}
		if err != nil {
			cfg.Logger.Warn("segment: preloading", "tag", tag, "err", err)
		}
	}
	if cfg.RefreshTags > 0 {
		is.spawn(is.refreshLoop)
	}
	return is, nil
}

// Next returns the next number of tag. Numbers of one tag increase within
// one issuer; across issuers sharing a store they are unique, not ordered.
func (is *Sequencer) Next(ctx context.Context, tag string) (int64, error) {
	var one [1]int64
	out, err := is.take(ctx, tag, 1, one[:0])
	if err != nil {
		return 0, err
	}
	return out[0], nil
}

// NextN returns n numbers of tag, increasing; 1 <= n <= MaxCount. They may
// span ranges, so they need not be consecutive.
func (is *Sequencer) NextN(ctx context.Context, tag string, n int) ([]int64, error) {
	if n < 1 || n > MaxCount {
		return nil, fmt.Errorf("%w: %d out of range 1-%d", ErrInvalidCount, n, MaxCount)
	}
	return is.take(ctx, tag, int64(n), make([]int64, 0, n))
}

func (is *Sequencer) take(ctx context.Context, tag string, n int64, out []int64) ([]int64, error) {
	if is.closed.Load() {
		return nil, ErrClosed
	}
	b, err := is.lookup(ctx, tag)
	if err != nil {
		return nil, err
	}
	for {
		s := b.cur.Load()
		// A used-up range is not counted further, so that callers failing
		// through a long outage cannot run its counter towards a wrap.
		if s.next.Load() > s.last {
			if _, err := b.wait(ctx, is, s); err != nil {
				return nil, err
			}
			continue
		}
		v := s.next.Add(n) - n
		if v >= s.first && v <= s.last {
			end := s.last
			if v+n-1 < end {
				end = v + n - 1
			}
			for x := v; x <= end; x++ {
				out = append(out, x)
			}
			got := end - v + 1
			n -= got
			b.issued.Add(got)
			if end >= s.trigger && b.wantNext.Load() {
				is.prefetch(b, s)
			}
			if n == 0 {
				return out, nil
			}
		}
		// s is used up: switch to the next range, or wait for it.
		if _, err := b.wait(ctx, is, s); err != nil {
			return nil, err
		}
	}
}

// prefetch starts the background fetch of the next range of b, if still
// wanted and not in backoff.
func (is *Sequencer) prefetch(b *buffer, s *seg) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur.Load() != s || b.next != nil || b.fetching != nil {
		return
	}
	if b.lastErr != nil && is.cfg.Clock.Now().Before(b.retryAt) {
		return
	}
	is.startFetch(b)
}

// wait moves b past the used-up range s: to the next range if held, else
// by waiting for a fetch (starting one if none runs). It fails fast with
// ErrUnavailable while the store is failing.
func (b *buffer) wait(ctx context.Context, is *Sequencer, s *seg) (bool, error) {
	for {
		b.mu.Lock()
		if b.cur.Load() != s {
			b.mu.Unlock()
			return true, nil
		}
		if b.next != nil {
			b.cur.Store(b.next)
			b.next = nil
			b.wantNext.Store(b.fetching == nil)
			b.mu.Unlock()
			return true, nil
		}
		if is.closed.Load() {
			b.mu.Unlock()
			return false, ErrClosed
		}
		if b.lastErr != nil && (b.fetching != nil || is.cfg.Clock.Now().Before(b.retryAt)) {
			err := b.lastErr
			b.mu.Unlock()
			return false, unavailable(b.tag, err)
		}
		if b.fetching == nil {
			is.startFetch(b)
		}
		ch := b.fetching
		if ch == nil { // closed meanwhile
			b.mu.Unlock()
			return false, ErrClosed
		}
		b.waits++
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false, fmt.Errorf("segment: waiting for a range of %q: %w", b.tag, ctx.Err())
		case <-is.ctx.Done():
			return false, ErrClosed
		}
		b.mu.Lock()
		err := b.lastErr
		moved := b.next != nil || b.cur.Load() != s
		b.mu.Unlock()
		if err != nil && !moved {
			return false, unavailable(b.tag, err)
		}
	}
}

// unavailable wraps a fetch error for callers: an unknown tag stays
// ErrUnknownTag, everything else is ErrUnavailable.
func unavailable(tag string, err error) error {
	if errors.Is(err, ErrUnknownTag) {
		return fmt.Errorf("segment: tag %q: %w", tag, err)
	}
	return fmt.Errorf("%w: tag %q: buffers empty and the store failed: %w", ErrUnavailable, tag, err)
}

// spawn runs f in a goroutine the issuer owns (Close waits for it), unless
// the issuer is closed.
func (is *Sequencer) spawn(f func()) bool {
	is.life.RLock()
	defer is.life.RUnlock()
	if is.closed.Load() {
		return false
	}
	is.wg.Add(1)
	go func() {
		defer is.wg.Done()
		f()
	}()
	return true
}

// startFetch runs one fetch of b's next range in the background (not once
// the issuer is closed: b.fetching stays nil); b.mu is held.
func (is *Sequencer) startFetch(b *buffer) {
	step := b.nextStep(is.cfg, is.cfg.Clock.Now())
	ch := make(chan struct{})
	if !is.spawn(func() { is.fetch(b, step, ch) }) {
		return
	}
	b.fetching = ch
	b.wantNext.Store(false)
}

// fetch is the goroutine of startFetch: one store call, its result queued
// as b's next range or recorded as b's error; ch closes at the end.
func (is *Sequencer) fetch(b *buffer, step int64, ch chan struct{}) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(is.ctx, is.cfg.StoreTimeout)
	r, err := is.store.Next(ctx, b.tag, step)
	cancel()
	d := time.Since(start)
	if is.cfg.OnStore != nil {
		is.cfg.OnStore("next", b.tag, d, err)
	}
	now := is.cfg.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.latency = d
	if err == nil {
		err = b.accept(r, step, is.cfg.Threshold, now)
	}
	if err != nil {
		b.lastErr = err
		b.storeErrors++
		b.retryAt = now.Add(is.cfg.RetryBackoff)
		b.wantNext.Store(true)
		is.cfg.Logger.Warn("segment: fetching a range", "tag", b.tag, "step", step, "err", err)
		if !errors.Is(err, ErrUnknownTag) && !b.retrying {
			// Retry without waiting for callers: a server taken out of
			// its load balancer by Ready would otherwise never recover.
			b.retrying = is.spawn(func() { is.retry(b) })
		}
	} else {
		b.lastErr = nil
	}
	close(ch)
	b.fetching = nil
}

// retry starts a fetch of b's next range after RetryBackoff, unless one
// runs or the range came meanwhile.
func (is *Sequencer) retry(b *buffer) {
	select {
	case <-is.cfg.Clock.After(is.cfg.RetryBackoff):
	case <-is.ctx.Done():
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.retrying = false
	if b.next == nil && b.fetching == nil && !is.closed.Load() {
		is.startFetch(b)
	}
}

// nextStep is Leaf's dynamic step for the fetch about to start (0: the
// stored step); b.mu is held.
func (b *buffer) nextStep(cfg Config, now time.Time) int64 {
	// Leaf's first two fetches take the stored step; the second starts the
	// timing, as the first happens on first use, not at a threshold.
	if b.fetches < 2 || b.lastFetch.IsZero() {
		return 0
	}
	d := now.Sub(b.lastFetch)
	step := b.step
	switch {
	case d < cfg.TargetDuration:
		if step*2 <= cfg.MaxStep {
			step *= 2
		}
	case d < 2*cfg.TargetDuration:
	default:
		if step/2 >= b.minStep {
			step /= 2
		}
	}
	return step
}

// accept checks a fetched range and queues it as b's next; b.mu is held.
func (b *buffer) accept(r Range, step int64, threshold float64, now time.Time) error {
	want := step
	if want == 0 {
		want = r.Step
	}
	switch {
	case r.Last < r.First || r.Step < 1 || r.Len() != want:
		return fmt.Errorf("%w: %q: [%d, %d] with stored step %d for step %d", ErrBadRange, b.tag, r.First, r.Last, r.Step, step)
	case r.Last > MaxNumber:
		return fmt.Errorf("%w: %q: [%d, %d] reaches the top of int64", ErrBadRange, b.tag, r.First, r.Last)
	case r.First <= b.high:
		return fmt.Errorf("%w: %q: [%d, %d] is not above %d, answered before: the store lost writes", ErrBadRange, b.tag, r.First, r.Last, b.high)
	}
	b.high = r.Last
	b.fetches++
	if step == 0 {
		b.step = r.Len()
		if b.fetches == 2 {
			b.lastFetch = now
		}
	} else {
		b.step = step
		b.lastFetch = now
	}
	b.minStep = r.Step
	// Leaf issues from 0 up when a table holds such rows; vesta's numbers
	// start at 1, so a range reaching below is cut.
	if r.First < 1 {
		r.First = 1
		if r.Last < 1 {
			b.wantNext.Store(true)
			return nil
		}
	}
	b.next = newSeg(r, threshold)
	b.next.ord = b.fetches - 1
	return nil
}

// lookup finds tag's buffer, re-reading the tag list (at most once per
// second) for a tag not yet known.
func (is *Sequencer) lookup(ctx context.Context, tag string) (*buffer, error) {
	if b := (*is.tags.Load())[tag]; b != nil {
		return b, nil
	}
	if err := ValidTag(tag); err != nil {
		return nil, err
	}
	return is.buffer(ctx, tag)
}

// buffer is lookup's slow path, also used by Preload.
func (is *Sequencer) buffer(ctx context.Context, tag string) (*buffer, error) {
	if err := ValidTag(tag); err != nil {
		return nil, err
	}
	if b := (*is.tags.Load())[tag]; b != nil {
		return b, nil
	}
	is.mu.Lock()
	now := is.cfg.Clock.Now()
	ch := is.refreshing
	if ch == nil && (is.lastMiss.IsZero() || now.Sub(is.lastMiss) >= missRefresh) {
		is.lastMiss = now
		is.mu.Unlock()
		err := is.refresh(ctx)
		if b := (*is.tags.Load())[tag]; b != nil {
			return b, nil
		}
		if err != nil {
			return nil, unavailable(tag, err)
		}
		return nil, unknownTag(tag)
	}
	is.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if b := (*is.tags.Load())[tag]; b != nil {
			return b, nil
		}
	}
	return nil, unknownTag(tag)
}

// unknownTag is the error of a tag the store does not hold, with what to
// do about it.
func unknownTag(tag string) error {
	return fmt.Errorf("%w %q (create it with: vesta seq create)", ErrUnknownTag, tag)
}

// refresh re-reads the tag list and adds new tags. Tags gone from the store
// are kept: their buffers still hold reserved numbers, and their next fetch
// answers ErrUnknownTag.
func (is *Sequencer) refresh(ctx context.Context) error {
	is.mu.Lock()
	if ch := is.refreshing; ch != nil {
		is.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		is.mu.Lock()
		err := is.lastListErr
		is.mu.Unlock()
		return err
	}
	ch := make(chan struct{})
	is.refreshing = ch
	is.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, is.cfg.StoreTimeout)
	start := time.Now()
	list, err := is.store.Tags(ctx)
	cancel()
	if is.cfg.OnStore != nil {
		is.cfg.OnStore("tags", "", time.Since(start), err)
	}

	is.mu.Lock()
	defer is.mu.Unlock()
	defer close(ch)
	is.refreshing = nil
	is.lastListErr = err
	if err != nil {
		return err
	}
	old := *is.tags.Load()
	var added []string
	for _, t := range list {
		if _, ok := old[t.Tag]; ok {
			continue
		}
		if err := ValidTag(t.Tag); err != nil {
			is.cfg.Logger.Warn("segment: skipping a tag of the store", "err", err)
			continue
		}
		added = append(added, t.Tag)
	}
	if len(added) == 0 {
		return nil
	}
	m := make(map[string]*buffer, len(old)+len(added))
	for k, v := range old {
		m[k] = v
	}
	for _, tag := range added {
		b := &buffer{tag: tag, high: math.MinInt64}
		b.cur.Store(&seg{first: 1, last: 0, ord: -1}) // empty: the first call fetches
		m[tag] = b
	}
	is.tags.Store(&m)
	is.cfg.Logger.Info("segment: tags added", "tags", added)
	return nil
}

func (is *Sequencer) refreshLoop() {
	for {
		select {
		case <-is.cfg.Clock.After(is.cfg.RefreshTags):
		case <-is.ctx.Done():
			return
		}
		if err := is.refresh(is.ctx); err != nil && is.ctx.Err() == nil {
			is.cfg.Logger.Warn("segment: re-reading the tag list", "err", err)
		}
	}
}

// Tags lists the tags the issuer knows, sorted.
func (is *Sequencer) Tags() []string {
	m := *is.tags.Load()
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Stats reports one tag; false for a tag the issuer does not know.
func (is *Sequencer) Stats(tag string) (Stats, bool) {
	b := (*is.tags.Load())[tag]
	if b == nil {
		return Stats{}, false
	}
	st := Stats{Issued: b.issued.Load(), Remaining: b.cur.Load().remaining()}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next != nil {
		st.Remaining += b.next.remaining()
	}
	st.RangesFetched = b.fetches
	st.Step = b.step
	st.StoreErrors = b.storeErrors
	st.StoreLatency = b.latency
	st.Waits = b.waits
	st.LastError = b.lastErr
	return st, true
}

// Ready is nil while the issuer can issue every tag it serves. It wraps
// ErrUnavailable with the store's error when a tag's fetch failed and its
// buffers are empty, or when no tag list could be read yet; ErrClosed
// after Close. A tag the store no longer holds does not count.
func (is *Sequencer) Ready() error {
	if is.closed.Load() {
		return ErrClosed
	}
	m := *is.tags.Load()
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names) // the same tag named on every call
	for _, tag := range names {
		b := m[tag]
		b.mu.Lock()
		err := b.lastErr
		left := b.cur.Load().remaining()
		if b.next != nil {
			left += b.next.remaining()
		}
		b.mu.Unlock()
		if err != nil && left == 0 && !errors.Is(err, ErrUnknownTag) {
			return fmt.Errorf("%w: tag %q: %w", ErrUnavailable, tag, err)
		}
	}
	is.mu.Lock()
	err := is.lastListErr
	is.mu.Unlock()
	if err != nil && len(m) == 0 {
		return fmt.Errorf("%w: reading the tag list: %w", ErrUnavailable, err)
	}
	return nil
}

// Close stops the background work and waits for it; later calls fail with
// ErrClosed. It does not close the store. Idempotent.
func (is *Sequencer) Close() error {
	is.closeOnce.Do(func() {
		is.life.Lock()
		is.closed.Store(true)
		is.life.Unlock()
		is.cancel()
		is.wg.Wait()
	})
	return nil
}
