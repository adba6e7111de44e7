package capacity

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/coalesce"
)

// SequencesFunc reads the counters of the segment sequences' tags, as a
// *segment.Sequencer's buffers and stats hold them (cmd/vesta/assemble
// reads them so); it must not call the store.
type SequencesFunc func() []TagCounters

// TagCounters is what a Tracker reads of one tag.
type TagCounters struct {
	Tag string
	// MaxID is the store's max_id as the tag's buffers last fetched it:
	// one past the highest range's end; zero before the first fetch.
	MaxID int64
	// Step is the step of the last fetch; RangesFetched counts the
	// ranges taken from the store.
	Step, RangesFetched int64
}

// PoolsFunc reads the machine-ID pools: the provider, and for a lease each
// range's IDs held (from the store's member records) and total.
type PoolsFunc func(ctx context.Context) (Machine, error)

// Config is what a Tracker reads, and how often.
type Config struct {
	// Gen is the generator; required.
	Gen *core.Generator
	// Pools reads the machine-ID pools; nil reports none.
	Pools PoolsFunc
	// Sequences reads the segment sequences' counters; nil is off
	// (Report.Segments nil).
	Sequences SequencesFunc
	// Bound is the last number a tag can issue (segment.MaxNumber); zero
	// is math.MaxInt64.
	Bound int64
	// Interval is how often the sampler reads the counters; zero is 15s.
	Interval time.Duration
	// Window is what the sequence's share is reckoned over; zero is 5
	// minutes. Tags' rates take 12 windows (an hour at the default), as
	// a tag's ranges come minutes apart.
	Window time.Duration
	// Now reads the clock; nil is time.Now.
	Now func() time.Time
}

// poolsFresh is how long one read of the pools serves: the read lists the
// member records (1,024 keys on Redis), and a scrape every few seconds
// from several Prometheus servers must not become as many reads.
const poolsFresh = 10 * time.Second

// poolsTimeout bounds that read.
const poolsTimeout = 1500 * time.Millisecond

// Tracker samples a generator and its sequences and reports their
// capacity. Close stops its sampler.
type Tracker struct {
	cfg   Config
	pools coalesce.Cache[struct{}, Machine]

	mu      sync.Mutex
	samples []sample // oldest first, covering 12 windows

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// sample is one reading of the counters.
type sample struct {
	at        time.Time
	exhausted uint64
	tags      map[string]tagSample
}

type tagSample struct {
	maxID   int64
	fetched int64
}

// New starts a Tracker on cfg.
func New(cfg Config) *Tracker {
	cfg.Interval = cmp.Or(cfg.Interval, 15*time.Second)
	cfg.Window = cmp.Or(cfg.Window, 5*time.Minute)
	cfg.Bound = cmp.Or(cfg.Bound, math.MaxInt64)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	t := &Tracker{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	t.pools.Fresh, t.pools.Now = poolsFresh, cfg.Now
	t.Sample()
	go t.run()
	return t
}

func (t *Tracker) run() {
	defer close(t.done)
	tk := time.NewTicker(t.cfg.Interval)
	defer tk.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tk.C:
			t.Sample()
		}
	}
}

// Close stops the sampler and waits for it; it is idempotent.
func (t *Tracker) Close() {
	t.once.Do(func() { close(t.stop) })
	<-t.done
}

// Sample reads the counters now (the sampler does every Interval).
func (t *Tracker) Sample() {
	s := sample{at: t.cfg.Now(), exhausted: t.cfg.Gen.Stats().Exhausted}
	if sq := t.cfg.Sequences; sq != nil {
		s.tags = map[string]tagSample{}
		for _, c := range sq() {
			s.tags[c.Tag] = tagSample{maxID: c.MaxID, fetched: c.RangesFetched}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.samples = append(t.samples, s)
	keep := s.at.Add(-12 * t.cfg.Window)
	i := 0
	for i < len(t.samples)-1 && t.samples[i+1].at.Before(keep) {
		i++ // keep the last sample before the span, so that it is covered whole
	}
	t.samples = slices.Delete(t.samples, 0, i)
}

// since returns the oldest sample no older than d before now, and whether
// it is older than now at all.
func (t *Tracker) since(now time.Time, d time.Duration) (sample, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	from := now.Add(-d)
	for _, s := range t.samples {
		if !s.at.Before(from) {
			return s, now.Sub(s.at) > 0
		}
	}
	return sample{}, false
}

// Report is the capacity now. ctx bounds the read of the pools.
func (t *Tracker) Report(ctx context.Context) Report {
	now := t.cfg.Now()
	gen := t.cfg.Gen
	r := Report{At: now.UTC(), Time: timeField(gen.Codec(), gen.Type(), now)}
	r.Machine = t.machine(ctx)
	r.Sequence = t.sequence(now)
	if t.cfg.Sequences != nil {
		r.Segments = t.segments(now)
	}
	r.Status = worst(worst(r.Time.Status, r.Machine.Status), r.Sequence.Status)
	for _, tg := range r.Segments {
		r.Status = worst(r.Status, tg.Status)
	}
	return r
}

// machine reads the pools, coalesced.
func (t *Tracker) machine(ctx context.Context) Machine {
	if t.cfg.Pools == nil {
		return Machine{Pools: []Pool{}, Status: OK}
	}
	m, err := t.pools.Get(ctx, struct{}{}, poolsTimeout, t.cfg.Pools)
	m.Pools = slices.Clone(m.Pools)
	if m.Pools == nil {
		m.Pools = []Pool{}
	}
	if err != nil {
		m.Error = err.Error()
	}
	m.Status = OK
	for i := range m.Pools {
		m.Pools[i].Status = poolStatus(m.Pools[i])
		m.Status = worst(m.Status, m.Pools[i].Status)
	}
	return m
}

// sequence is the ceiling's share over Window and the borrowing in use.
func (t *Tracker) sequence(now time.Time) Sequence {
	gen := t.cfg.Gen
	st := gen.Stats()
	unit := gen.Type().Unit()
	sq := Sequence{Unit: unit.Seconds(), PerUnit: gen.Codec().PerUnit(gen.Type()), Exhausted: st.Exhausted, Share: -1,
		Ahead: st.Ahead.Seconds(), MaxBorrow: gen.Control().MaxBorrow().Seconds(), Waits: st.Waits, Status: OK}
	if s, ok := t.since(now, t.cfg.Window); ok {
		span := now.Sub(s.at)
		sq.Window = span.Seconds()
		sq.Share = min(finite(float64(st.Exhausted-s.exhausted)*unit.Seconds()/span.Seconds()), 1)
	}
	if sq.MaxBorrow > 0 {
		sq.BorrowShare = min(sq.Ahead/sq.MaxBorrow, 1)
	}
	if sq.Share >= 0.5 || sq.BorrowShare >= 0.8 {
		sq.Status = Warning
	}
	return sq
}

// segments is each tag's numbers left and its rates over 12 windows.
func (t *Tracker) segments(now time.Time) []Tag {
	old, ok := t.since(now, 12*t.cfg.Window)
	out := []Tag{}
	for _, c := range t.cfg.Sequences() {
		tg := Tag{Tag: c.Tag, MaxID: c.MaxID, Step: c.Step, Bound: t.cfg.Bound, PerDay: -1, Status: OK}
		tg.Left = max(tg.Bound-max(tg.MaxID, 1)+1, 0)
		if then, seen := old.tags[c.Tag]; ok && seen && then.maxID > 0 && tg.MaxID > 0 {
			span := now.Sub(old.at)
			tg.Window = span.Seconds()
			tg.PerDay = finite(float64(tg.MaxID-then.maxID) / span.Hours() * 24)
			tg.StepsPerMinute = finite(float64(c.RangesFetched-then.fetched) / span.Minutes())
			if tg.PerDay > 0 {
				d := float64(tg.Left) / tg.PerDay
				tg.DaysLeft = &d
			}
		}
		tg.Status = tagStatus(tg)
		out = append(out, tg)
	}
	return out
}

// tagStatus judges a tag: critical under 30 days at its rate or under 1%
// of its bound left, warning under 90 days.
func tagStatus(tg Tag) string {
	switch {
	case tg.Left < tg.Bound/100, tg.DaysLeft != nil && *tg.DaysLeft < 30:
		return Critical
	case tg.DaysLeft != nil && *tg.DaysLeft < 90:
		return Warning
	}
	return OK
}

// Static is gen's capacity at now without a Tracker: the time field and
// the sequence's counters, with no window to reckon a share over (-1), no
// pools and no segments.
func Static(gen *core.Generator, now time.Time) Report {
	t := &Tracker{cfg: Config{Gen: gen, Window: time.Minute, Now: func() time.Time { return now }}}
	return t.Report(context.Background())
}
