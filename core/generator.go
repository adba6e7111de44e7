package core

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Generator. The zero Config is valid: sorted layout,
// max-peak, the layout's epoch, version 0, machine 0, never ahead of the
// clock, the system clock, no time guard. DefaultConfig gives the
// recommended values.
type Config struct {
	// Layout of the IDs; zero is Sorted.
	Layout Layout
	// Type of the IDs; zero is MaxPeak.
	Type Type
	// Epoch of the time field; the zero Time is the layout's own epoch.
	Epoch time.Time
	// Version bit, 0 or 1; zero is 0.
	Version uint8
	// Machine ID, 0-1023. Which range a publish mode may use is checked
	// by the caller (package machineid); zero is machine 0.
	Machine MachineID
	// MaxBorrow is how far issuing may run ahead of the clock when a
	// unit's sequence runs out, rounded down to whole units; past it,
	// callers sleep until the clock catches up. Zero never runs ahead
	// (Vesta's behaviour).
	MaxBorrow time.Duration
	// Clock; nil is a SystemClock anchored when New is called.
	Clock Clock
	// Guard stores the high-water mark; nil runs without a time guard, so
	// a restart with the clock set back may re-issue IDs.
	Guard GuardStore
	// GuardWindow is how far ahead of the clock each reservation of the
	// time guard reaches; zero is 3s.
	GuardWindow time.Duration
	// MaxStartupWait is how long New waits for the clock to pass the
	// guard's mark; zero fails at once with ErrClockBehind.
	MaxStartupWait time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns the recommended configuration: the zero Config
// with a 1s MaxBorrow, a 3s GuardWindow and a 10s MaxStartupWait.
func DefaultConfig() Config {
	return Config{MaxBorrow: time.Second, GuardWindow: 3 * time.Second, MaxStartupWait: 10 * time.Second}
}

// Validate reports the first field that cannot be used, by name.
func (c Config) Validate() error {
	if c.Layout != Sorted && c.Layout != Vesta {
		return fmt.Errorf("%w: Layout %d; want Sorted (0) or Vesta (1)", ErrInvalidConfig, c.Layout)
	}
	if c.Type != MaxPeak && c.Type != MinGranularity {
		return fmt.Errorf("%w: Type %d; want MaxPeak (0) or MinGranularity (1)", ErrInvalidConfig, c.Type)
	}
	if _, err := NewCodec(c.Layout, c.Epoch); err != nil {
		return fmt.Errorf("Epoch: %w", err)
	}
	if c.Version > 1 {
		return fmt.Errorf("%w: Version %d; want 0 or 1", ErrInvalidConfig, c.Version)
	}
	if c.Machine > MaxMachine {
		return fmt.Errorf("%w: Machine %d; want 0-%d", ErrInvalidConfig, c.Machine, MaxMachine)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"MaxBorrow", c.MaxBorrow}, {"GuardWindow", c.GuardWindow}, {"MaxStartupWait", c.MaxStartupWait}} {
		if d.v < 0 {
			return fmt.Errorf("%w: %s %s is negative", ErrInvalidConfig, d.name, d.v)
		}
	}
	if c.MaxBorrow > 24*time.Hour {
		return fmt.Errorf("%w: MaxBorrow %s; want at most 24h", ErrInvalidConfig, c.MaxBorrow)
	}
	if c.GuardWindow > 0 && c.GuardWindow < c.Type.Unit() {
		return fmt.Errorf("%w: GuardWindow %s is shorter than one time unit (%s)", ErrInvalidConfig, c.GuardWindow, c.Type.Unit())
	}
	return nil
}

// closedBit marks a run's state word once the run is closed: every CAS from
// an open state then fails, so nothing is issued after Close reads the end.
const closedBit = 1 << 63

// Generator issues IDs for one machine ID. It is safe for concurrent use;
// IDs it issues strictly increase in the order their reservations happen.
type Generator struct {
	cfg     Config
	codec   Codec
	clock   Clock
	sys     *SystemClock // fast path when the clock is a SystemClock
	log     *slog.Logger
	epochMs int64
	epochNs int64
	unitMs  int64
	sb      uint   // seq bits
	seqMask uint64 // low sb bits
	shifts  shifts
	randMax uint64 // exclusive bound of a unit's random first seq; 1 for Vesta
	borrow  uint64 // MaxBorrow in whole units
	window  uint64 // GuardWindow in whole units (at least 1)
	endPk   uint64 // first packed state past the last unit
	maxTime uint64

	// gate is the one word the hot path reads for Fence and FenceAt: 0 is
	// open, -1 fenced, >0 the deadline (Unix ns on the generator's clock)
	// from which calls fail. The causes are under gateMu.
	gate     atomic.Int64
	gateMu   sync.Mutex
	fenceErr error // non-nil: fenced with this
	deadline int64 // 0: none
	deadErr  error

	cur      atomic.Pointer[run]
	waits    atomic.Uint64 // sleeps because the sequence ran out past MaxBorrow
	rekeying atomic.Bool   // the current run is closed and its successor not yet started
	before   atomic.Uint64 // IDs issued by runs that were re-keyed away

	rekeyMu     sync.Mutex // one Rekey at a time
	mu          sync.Mutex // guards closed, closeErr, cancelRekey and run installation
	closed      bool
	closeErr    error
	cancelRekey context.CancelFunc // ends a Rekey waiting for the clock when Close comes
}

// run is the issuing state of one machine ID.
type run struct {
	// state is the packed (unit<<sb | seq) of the last reserved ID, or
	// closedBit|last once closed. limit is the first packed state the time
	// guard has not made durable. state is written on every call, so it
	// has a cache line of its own (with limit, read beside it by take).
	state atomic.Uint64
	limit atomic.Uint64
	_     [48]byte

	// What NextID's fast path reads, on a line written once per unit.
	// entered is the last unit an ID was issued in, unitEnd where it ends
	// (Unix ns of the clock; 0 turns the fast path off until take issues
	// again). The state can be ahead of entered: the fast path reserves
	// with an atomic add and drops a state past the unit's end (counted
	// in wasted); bounds are reckoned from entered, so a dropped state
	// never opens a unit that issuing had not reached.
	entered atomic.Uint64
	unitEnd atomic.Int64
	base    [4]uint64 // version, type, method and machine bits per method
	_       [16]byte
	wasted  atomic.Uint64

	// Issued-ID accounting: IDs come in contiguous segments of packed
	// states, broken only when a new unit starts at a random seq. Jumps
	// to a new segment take jumpMu, so segStart always belongs to the
	// segment that state is in.
	jumpMu     sync.Mutex
	segStart   uint64
	issuedPrev uint64

	guard    GuardStore
	guardErr atomic.Pointer[error]         // last save failed with this error
	limitCh  atomic.Pointer[chan struct{}] // closed when limit or guardErr changes
	kick     chan struct{}                 // asks the reserver to extend now
	stop     chan struct{}
	done     chan struct{}
}

// New starts a generator. With a time guard it loads the mark; if the clock
// is behind it by more than MaxBorrow it waits up to MaxStartupWait (or
// until ctx ends) or fails with ErrClockBehind, naming the gap. It then makes
// a first reservation durable before returning.
func New(ctx context.Context, cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	codec, _ := NewCodec(cfg.Layout, cfg.Epoch)
	if cfg.GuardWindow == 0 {
		cfg.GuardWindow = 3 * time.Second
	}
	g := &Generator{cfg: cfg, codec: codec, clock: cfg.Clock, log: cfg.Logger}
	if g.clock == nil {
		g.sys = NewSystemClock()
		g.clock = g.sys
	} else if s, ok := g.clock.(*SystemClock); ok {
		g.sys = s
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	w := widthsOf(cfg.Type)
	g.epochMs = codec.epochMillis()
	g.epochNs = g.epochMs * 1e6
	g.unitMs = cfg.Type.Unit().Milliseconds()
	g.sb = w.seqBits
	g.seqMask = w.maxSeq()
	g.shifts = shiftsOf(cfg.Layout, cfg.Type)
	g.maxTime = w.maxTime()
	g.endPk = (g.maxTime + 1) << g.sb
	g.randMax = 1
	if cfg.Layout == Sorted {
		g.randMax = 1 << (w.seqBits / 2)
	}
	g.borrow = uint64(cfg.MaxBorrow / cfg.Type.Unit())
	g.window = max(1, uint64(cfg.GuardWindow/cfg.Type.Unit()))

	r, err := g.startRun(ctx, cfg.Machine, cfg.Guard, 0)
	if err != nil {
		return nil, err
	}
	g.cur.Store(r)
	return g, nil
}

// nowNanos reads the clock in Unix nanoseconds.
func (g *Generator) nowNanos() int64 {
	if g.sys != nil {
		return g.sys.baseNs + int64(time.Since(g.sys.base))
	}
	return g.clock.Now().UnixNano()
}

// nowUnit reads the clock as whole units since the epoch.
func (g *Generator) nowUnit() (uint64, error) { return g.unitOf(g.nowNanos()) }

// unitOf converts Unix nanoseconds to whole units since the epoch. A clock
// past the last unit reads as maxTime+1, so that issuing fails with
// ErrEndOfTime.
func (g *Generator) unitOf(ns int64) (uint64, error) {
	if ns < g.epochNs {
		return 0, g.beforeEpoch(ns)
	}
	if g.unitMs == 1 { // constant divisors: multiplications, not divisions
		return min(uint64(ns-g.epochNs)/1e6, g.maxTime+1), nil
	}
	return min(uint64(ns-g.epochNs)/1e9, g.maxTime+1), nil
}

func (g *Generator) beforeEpoch(ns int64) error {
	return fmt.Errorf("%w: clock reads %s, epoch is %s", ErrBeforeEpoch,
		time.Unix(0, ns).UTC().Format(time.RFC3339Nano), g.codec.Epoch().Format(time.RFC3339))
}

// instantOf is the start of unit u.
func (g *Generator) instantOf(u uint64) time.Time {
	return time.UnixMilli(g.epochMs + int64(u)*g.unitMs).UTC()
}

// unitCeil is the first unit starting at or after t (0 before the epoch).
func (g *Generator) unitCeil(t time.Time) uint64 {
	ms := t.UnixMilli() - g.epochMs
	if t.Sub(time.UnixMilli(t.UnixMilli())) > 0 {
		ms++
	}
	if ms <= 0 {
		return 0
	}
	return (uint64(ms) + uint64(g.unitMs) - 1) / uint64(g.unitMs)
}

// startRun prepares issuing for machine. No ID below unit minFloor is issued
// (Rekey onto the same machine ID passes the old run's end).
func (g *Generator) startRun(ctx context.Context, machine MachineID, guard GuardStore, minFloor uint64) (*run, error) {
	r := &run{guard: guard}
	for m := range r.base {
		r.base[m] = uint64(g.cfg.Version)<<versionShift | uint64(g.cfg.Type)<<typeShift |
			uint64(m)<<g.shifts.method | uint64(machine)<<g.shifts.machine
	}
	ch := make(chan struct{})
	r.limitCh.Store(&ch)
	if guard == nil {
		if minFloor > 0 {
			r.state.Store(minFloor<<g.sb - 1)
		}
		r.limit.Store(g.endPk)
		r.segStart = r.state.Load() + 1
		r.entered.Store(r.state.Load() >> g.sb)
		return r, nil
	}
	mk, err := loadMark(ctx, guard, GuardUse{Machine: machine, Shape: g.Shape(), MaxBorrow: g.cfg.MaxBorrow})
	if err != nil {
		return nil, fmt.Errorf("%w: loading the mark of machine %d: %w", ErrGuard, machine, err)
	}
	mark, moved, err := g.shapeFloor(machine, mk)
	if err != nil {
		return nil, err
	}
	floor := max(g.unitCeil(mark), minFloor)
	if floor > g.maxTime {
		return nil, fmt.Errorf("%w: the time guard's mark %s is past the last unit", ErrEndOfTime, mark.UTC().Format(time.RFC3339Nano))
	}
	now, err := g.nowUnit()
	if err != nil {
		return nil, err
	}
	if floor > now+g.borrow {
		// The clock is behind what was already issued by more than we
		// may borrow: wait for it, or refuse.
		ready := g.instantOf(floor - g.borrow)
		gap := ready.Sub(g.clock.Now())
		if gap > g.cfg.MaxStartupWait {
			if moved != "" {
				return nil, fmt.Errorf("%w: %w: machine %d: %s; the clock reads %s, %s before that (max_borrow %s, max_startup_wait %s); keep the old epoch, use another machine ID, or wait",
					ErrClockBehind, ErrShape, machine, moved, g.clock.Now().UTC().Format(time.RFC3339Nano),
					g.instantOf(floor).Sub(g.clock.Now()).Round(time.Millisecond), g.cfg.MaxBorrow, g.cfg.MaxStartupWait)
			}
			return nil, fmt.Errorf("%w: the clock reads %s, %s behind the mark %s of machine %d (max_borrow %s, max_startup_wait %s); fix the clock or wait",
				ErrClockBehind, g.clock.Now().UTC().Format(time.RFC3339Nano), g.instantOf(floor).Sub(g.clock.Now()).Round(time.Millisecond),
				mark.UTC().Format(time.RFC3339Nano), machine, g.cfg.MaxBorrow, g.cfg.MaxStartupWait)
		}
		g.log.Warn("clock is behind the time guard's mark; waiting", "machine", machine,
			"mark", mark.UTC().Format(time.RFC3339Nano), "wait", gap.Round(time.Millisecond))
		for {
			if now, err = g.nowUnit(); err != nil {
				return nil, err
			}
			if floor <= now+g.borrow {
				break
			}
			if err := sleep(ctx, g.clock, g.instantOf(floor-g.borrow).Sub(g.clock.Now())); err != nil {
				return nil, fmt.Errorf("%w: waiting for the clock to reach the mark %s: %w", ErrClockBehind, mark.UTC().Format(time.RFC3339Nano), err)
			}
		}
	}
	if floor > 0 {
		r.state.Store(floor<<g.sb - 1)
	}
	r.segStart = r.state.Load() + 1
	r.entered.Store(r.state.Load() >> g.sb)
	// The first reservation is durable before any ID is issued.
	target := min(max(now, floor)+g.window, g.maxTime+1)
	if err := guard.Save(ctx, g.instantOf(target)); err != nil {
		return nil, fmt.Errorf("%w: saving the first reservation of machine %d: %w", ErrGuard, machine, err)
	}
	r.limit.Store(target << g.sb)
	r.kick = make(chan struct{}, 1)
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	go g.reserve(r)
	return r, nil
}

// loadMark loads the mark, with its shape when the store records one.
func loadMark(ctx context.Context, guard GuardStore, use GuardUse) (Mark, error) {
	if sg, ok := guard.(ShapedGuard); ok {
		return sg.LoadFor(ctx, use)
	}
	at, err := guard.Load(ctx)
	return Mark{At: at}, err
}

// shapeFloor applies the rules of a mark written with another shape and
// returns the instant the new time fields must start at (or above). When
// that instant lies later than the mark because the epoch moved later, it
// also says so, naming both epochs, for the error if the wait is too long.
//
//   - Another layout: refused. The fields sit elsewhere, so an ID of one
//     layout can equal an ID of the other whatever the instants.
//   - A later epoch: the same instant gives smaller time fields, so the new
//     fields start above every old one at mark + (new epoch - old epoch).
//   - An earlier epoch: the mark itself suffices (larger fields).
//   - Another type or version: the IDs differ in bit 62 or 63 and cannot
//     meet; the epoch rule above still applies, because the mark is the
//     only record of every earlier shape of this machine ID (a later
//     return to the old type must still start above its IDs).
func (g *Generator) shapeFloor(machine MachineID, mk Mark) (time.Time, string, error) {
	own := g.Shape()
	if !mk.HasShape || mk.At.IsZero() || mk.Shape == own {
		return mk.At, "", nil
	}
	old := mk.Shape
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	if old.Layout != own.Layout {
		return time.Time{}, "", fmt.Errorf("%w: machine %d: the time guard's mark %s was written by a generator issuing layout %s (%s); this one issues layout %s (%s): IDs of one layout can equal IDs of the other; keep layout %s for machine %d or use another machine ID",
			ErrShape, machine, at(mk.At), old.Layout, old, own.Layout, own, old.Layout, machine)
	}
	from := mk.At
	var moved string
	oldEpoch, newEpoch := time.UnixMilli(old.EpochMs), time.UnixMilli(own.EpochMs)
	switch {
	case own.EpochMs > old.EpochMs:
		from = mk.At.Add(newEpoch.Sub(oldEpoch))
		moved = fmt.Sprintf("the epoch moved later, from %s to %s, so IDs may start only at %s (the mark %s plus the %s the epoch moved), above every time field issued under the old epoch",
			at(oldEpoch), at(newEpoch), at(from), at(mk.At), newEpoch.Sub(oldEpoch))
		g.log.Warn("time guard: "+moved, "machine", machine)
	case own.EpochMs < old.EpochMs:
		g.log.Info("time guard: the epoch moved earlier; starting at the mark, whose time fields are larger than every old one",
			"machine", machine, "old_epoch", at(oldEpoch), "new_epoch", at(newEpoch), "mark", at(mk.At))
	}
	if old.Type != own.Type || old.Version != own.Version {
		g.log.Info("time guard: the mark was written with another type or version; those IDs differ in bit 62 or 63 and cannot equal the new ones",
			"machine", machine, "old", old.String(), "new", own.String(), "start", at(from))
	}
	return from, moved, nil
}

// reserve keeps the durable mark ahead of issuing: every third of the window
// (or when a caller reaches the limit) it saves now+window and then raises
// the limit. While saves fail, issuing continues up to the last durable
// limit, and then callers get ErrGuard.
func (g *Generator) reserve(r *run) {
	defer close(r.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	period := time.Duration(g.window) * g.cfg.Type.Unit() / 3
	for {
		kick := r.kick
		if r.guardErr.Load() != nil {
			kick = nil // failing: retry once a period, however many callers ask
		}
		select {
		case <-r.stop:
			return
		case <-kick:
		case <-g.clock.After(period):
		}
		now, err := g.nowUnit()
		if err != nil {
			continue
		}
		last := (r.state.Load() &^ closedBit) >> g.sb
		target := min(max(now, last+1)+g.window, g.maxTime+1)
		if target<<g.sb <= r.limit.Load() {
			continue
		}
		err = r.guard.Save(ctx, g.instantOf(target))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if r.guardErr.Load() == nil {
				g.log.Error("time guard: saving the reservation failed; issuing stops at the last durable mark",
					"mark", g.instantOf(r.limit.Load()>>g.sb), "err", err)
			}
			e := fmt.Errorf("%w: %w", ErrGuard, err)
			r.guardErr.Store(&e)
		} else {
			if r.guardErr.Swap(nil) != nil {
				g.log.Info("time guard: saving works again")
			}
			r.limit.Store(target << g.sb)
		}
		next := make(chan struct{})
		close(*r.limitCh.Swap(&next))
	}
}

// validMethod refuses methods a generator never issues.
func validMethod(m Method) error {
	if m > REST {
		return &RangeError{Field: "method", Value: uint64(m), Max: uint64(REST)}
	}
	return nil
}

// NextID issues one ID with method m. It blocks only when the sequence ran
// out beyond MaxBorrow or the time guard lags; ctx bounds that wait. With a
// ctx that is already done, it issues only what needs no wait: otherwise it
// returns at once with an error wrapping ctx.Err().
func (g *Generator) NextID(ctx context.Context, m Method) (ID, error) {
	if err := validMethod(m); err != nil {
		return 0, err
	}
	// The common case inline (the compiler would not inline the clock
	// read): the clock has not left the unit last issued in, and its
	// sequence has room. Such an ID needs no bound checks: they held when
	// that unit was entered. The state is reserved with an atomic add,
	// which unlike a compare-and-swap never fails under contention. An add
	// past the unit's end is dropped unissued and turns the fast path off
	// until take has entered the next unit, so at most the cores racing at
	// that moment waste a state each. Anything else (a new unit, a unit's
	// end, a fence) goes through take, with this clock reading.
	var ns int64
	if s := g.sys; s != nil {
		ns = s.baseNs + int64(time.Since(s.base))
	} else {
		ns = g.clock.Now().UnixNano()
	}
	sb := g.sb & 63 // masked shifts compile to single instructions
	if gt := g.gate.Load(); gt == 0 || (gt > 0 && ns < gt) {
		r := g.cur.Load()
		if e, end := r.entered.Load(), r.unitEnd.Load(); ns < end {
			if p := r.state.Add(1); p>>sb == e {
				return ID(r.base[m&3] | e<<(g.shifts.time&63) | (p&g.seqMask)<<(g.shifts.seq&63)), nil
			}
			r.unitEnd.CompareAndSwap(end, 0)
			r.wasted.Add(1)
		}
	}
	r, p, _, err := g.takeAt(ctx, 1, ns)
	if err != nil {
		return 0, err
	}
	return ID(r.base[m&3] | (p>>sb)<<(g.shifts.time&63) | (p&g.seqMask)<<(g.shifts.seq&63)), nil
}

// NextIDs issues n IDs with method m, in increasing order.
func (g *Generator) NextIDs(ctx context.Context, m Method, n int) ([]ID, error) {
	return g.AppendIDs(ctx, m, nil, n)
}

// MaxCount is the largest count NextIDs, AppendIDs and TryAppendIDs take
// in one call (16,777,216: 128 MiB of IDs, 16 s of a max-peak sequence).
// Larger counts fail with ErrInvalidCount instead of trying to allocate.
const MaxCount = 1 << 24

// checkCount refuses counts that can never be issued in one call.
func checkCount(n int) error {
	if n < 1 || n > MaxCount {
		return fmt.Errorf("%w: count %d; want 1-%d", ErrInvalidCount, n, MaxCount)
	}
	return nil
}

// AppendIDs appends n new IDs with method m to dst. Runs of sequence numbers
// are reserved with one compare-and-swap each, spanning units as needed. On
// error, dst holds the IDs issued before it. n must be 1-MaxCount.
func (g *Generator) AppendIDs(ctx context.Context, m Method, dst []ID, n int) ([]ID, error) {
	if err := validMethod(m); err != nil {
		return dst, err
	}
	if err := checkCount(n); err != nil {
		return dst, err
	}
	if cap(dst)-len(dst) < n {
		grown := make([]ID, len(dst), len(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	for left := uint64(n); left > 0; {
		r, p, cnt, err := g.take(ctx, left)
		if err != nil {
			return dst, err
		}
		left -= cnt
		dst = g.appendStates(dst, r, p, cnt, m)
	}
	return dst, nil
}

// appendStates appends the IDs of the cnt packed states from p of run r.
func (g *Generator) appendStates(dst []ID, r *run, p, cnt uint64, m Method) []ID {
	dst = slices.Grow(dst, int(cnt))
	for cnt > 0 {
		seq := p & g.seqMask
		k := min(cnt, g.seqMask-seq+1) // the rest of this unit
		id := r.base[m] | (p>>g.sb)<<g.shifts.time | seq<<g.shifts.seq
		step := uint64(1) << g.shifts.seq
		out := dst[len(dst) : len(dst)+int(k)]
		for i := range out {
			out[i] = ID(id)
			id += step
		}
		dst = dst[:len(dst)+int(k)]
		p += k
		cnt -= k
	}
	return dst
}

// guardRetry is the retry hint of TryAppendIDs while the time guard's
// reservation lags behind issuing (a save in flight): it is usually a
// store's round trip away, and says nothing about the sequence.
const guardRetry = 10 * time.Millisecond

// TryAppendIDs appends to dst up to n new IDs with method m that can be
// issued now, in increasing order, and never waits. When it appended fewer
// than n, retryAfter (above zero) says when issuing may continue: the start
// of the next unit that MaxBorrow lets it reach, or guardRetry while the
// time guard's reservation lags. An error (fenced, closed, clock, a failed
// time guard) comes with the IDs issued before it. n must be 1-MaxCount.
// Results grow as IDs are issued: nothing is allocated for IDs not issued.
func (g *Generator) TryAppendIDs(m Method, dst []ID, n int) ([]ID, time.Duration, error) {
	return g.tryAppend(m, dst, n, 0, nil)
}

// tryAppend is TryAppendIDs that also stays below pace (a packed state; 0
// is no such bound), the bound of Share. One call's IDs come from one run:
// when *from is set and the generator was re-keyed since, it fails with
// ErrFenced (the IDs of two machine IDs need not increase); from nil is
// one call.
func (g *Generator) tryAppend(m Method, dst []ID, n int, pace uint64, from **run) ([]ID, time.Duration, error) {
	if err := validMethod(m); err != nil {
		return dst, 0, err
	}
	if err := checkCount(n); err != nil {
		return dst, 0, err
	}
	var own *run
	if from == nil {
		from = &own
	}
	ns := g.nowNanos()
	for left := uint64(n); left > 0; {
		r, p, cnt, blocked, err := g.reserveAt(left, ns, pace)
		if err != nil {
			return dst, 0, err
		}
		if *from == nil {
			*from = r
		} else if r != *from {
			return dst, 0, fmt.Errorf("%w: the machine ID changed during the call", ErrFenced)
		}
		if cnt == 0 {
			d, err := g.retryAfter(r, blocked, ns, pace)
			return dst, d, err
		}
		left -= cnt
		dst = g.appendStates(dst, r, p, cnt, m)
	}
	return dst, 0, nil
}

// retryAfter says how long from ns until start may be issued, or why it
// never can; it asks the reserver to extend when the guard is the bound.
func (g *Generator) retryAfter(r *run, start uint64, ns int64, pace uint64) (time.Duration, error) {
	if start >= g.endPk {
		return 0, fmt.Errorf("%w: unit %d is past the last unit %d (%s)", ErrEndOfTime, start>>g.sb, g.maxTime,
			FormatInstant(g.cfg.Type, g.instantOf(g.maxTime)))
	}
	if start >= r.limit.Load() {
		if e := r.guardErr.Load(); e != nil {
			return 0, *e
		}
		select {
		case r.kick <- struct{}{}:
		default:
		}
		return guardRetry, nil
	}
	var at int64 // Unix ns at which start may be issued
	if pace != 0 && start >= pace {
		at = g.paceTime(start)
	} else {
		at = g.epochNs + int64(start>>g.sb-g.borrow)*g.unitMs*1e6
	}
	return time.Duration(max(at-ns, 1)), nil
}

// take reserves up to n consecutive packed states and returns the first and
// how many, checking every bound. With NextID's fast path it is the whole
// concurrency story: both only ever raise the state (by compare-and-swap
// here, by atomic add there), so no packed state, hence no ID, is handed
// out twice.
func (g *Generator) take(ctx context.Context, n uint64) (*run, uint64, uint64, error) {
	return g.takeAt(ctx, n, g.nowNanos())
}

// takeAt is take with the clock already read at ns, waiting as needed.
func (g *Generator) takeAt(ctx context.Context, n uint64, ns int64) (*run, uint64, uint64, error) {
	for {
		r, p, cnt, blocked, err := g.reserveAt(n, ns, 0)
		if err != nil || cnt > 0 {
			return r, p, cnt, err
		}
		if err := g.wait(ctx, r, blocked); err != nil {
			return nil, 0, 0, err
		}
		ns = g.nowNanos()
	}
}

// reserveAt reserves up to n consecutive packed states at clock reading ns
// without waiting, also below pace unless it is 0. With nothing issuable
// now it returns cnt 0, the run and the first state it could not issue.
// The clock is read once, before the state: the window between loading the
// state and swapping it stays a few instructions wide, and a lost race
// retries without another clock read. A reading a little stale is
// harmless: it can only delay a new unit or tighten the bound.
func (g *Generator) reserveAt(n uint64, ns int64, pace uint64) (r *run, p, cnt, blocked uint64, err error) {
	for {
		if gt := g.gate.Load(); gt != 0 && (gt < 0 || ns >= gt) {
			if err := g.gateErr(ns); err != nil {
				return nil, 0, 0, 0, err
			}
		}
		now, err := g.unitOf(ns)
		if err != nil {
			return nil, 0, 0, 0, err
		}
		r := g.cur.Load()
		old := r.state.Load()
		next := old + 1 // carries into the next unit when the sequence runs out
		start, jump := next, false
		if now > next>>g.sb {
			// The clock has moved past: start the new unit at a random seq.
			start, jump = now<<g.sb|g.randSeq(), true
		}
		// Issue within the current unit, and up to MaxBorrow ahead of the
		// clock; never at or past the durable mark or the end of time.
		bound := max(now+g.borrow+1, r.entered.Load()+1) << g.sb
		bound = min(bound, g.endPk, r.limit.Load())
		if pace != 0 {
			bound = min(bound, pace)
		}
		if start >= bound { // also when the run is closed: its state is above any bound
			if old&closedBit != 0 {
				if g.cur.Load() != r {
					continue // re-keyed under us
				}
				if g.rekeying.Load() {
					return nil, 0, 0, 0, errRekeying
				}
				return nil, 0, 0, 0, ErrClosed
			}
			return r, 0, 0, start, nil
		}
		end := min(start+n, bound)
		if !jump {
			if r.state.CompareAndSwap(old, end-1) {
				g.enter(r, (end-1)>>g.sb)
				return r, start, end - start, 0, nil
			}
			continue
		}
		r.jumpMu.Lock()
		ok := r.state.CompareAndSwap(old, end-1)
		if ok {
			r.issuedPrev += old - r.segStart + 1
			r.segStart = start
		}
		r.jumpMu.Unlock()
		if ok {
			g.enter(r, (end-1)>>g.sb)
			return r, start, end - start, 0, nil
		}
	}
}

func (g *Generator) randSeq() uint64 {
	if g.randMax == 1 {
		return 0
	}
	return rand.Uint64N(g.randMax)
}

// wait blocks until start may be issued, or says why it never can. The
// run's limit channel wakes it too: it is closed when the limit moves and
// when the run is closed (Close, Rekey), so no caller stays parked on a run
// that will never issue again; its retry then finds ErrClosed, ErrFenced
// while re-keying, or the new run.
func (g *Generator) wait(ctx context.Context, r *run, start uint64) error {
	unit := start >> g.sb
	if start >= g.endPk {
		return fmt.Errorf("%w: unit %d is past the last unit %d (%s)", ErrEndOfTime, unit, g.maxTime,
			FormatInstant(g.cfg.Type, g.instantOf(g.maxTime)))
	}
	ch := *r.limitCh.Load()
	if r.state.Load()&closedBit != 0 {
		return nil // closed since reserveAt looked: it says so on the retry
	}
	if start >= r.limit.Load() {
		if e := r.guardErr.Load(); e != nil {
			return *e
		}
		if start < r.limit.Load() {
			return nil
		}
		select {
		case r.kick <- struct{}{}:
		default:
		}
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for the time guard: %w", ErrGuard, ctx.Err())
		}
	}
	// Out of sequence beyond MaxBorrow: sleep until the clock reaches the
	// unit that makes start issuable. A context already done means "only
	// what needs no wait" (the servers use it to keep waits off their
	// read loops), so it is not counted as a wait.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sequence exhausted, waiting for the clock: %w", err)
	}
	g.waits.Add(1)
	d := g.instantOf(unit - g.borrow).Sub(g.clock.Now())
	if d <= 0 {
		return nil
	}
	select {
	case <-g.clock.After(d):
		return nil
	case <-ch: // the limit moved or the run closed: look again
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sequence exhausted, waiting for the clock: %w", ctx.Err())
	}
}

// Fence stops issuing: every call fails with an error wrapping ErrFenced and
// cause, until Unfence. The lease holder (package machineid) fences when it
// can no longer prove it holds the machine ID.
func (g *Generator) Fence(cause error) {
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	g.fenceErr = fmt.Errorf("%w: %w", ErrFenced, cause)
	g.gate.Store(-1)
}

// gateErr is why a call at ns may not issue, or nil.
func (g *Generator) gateErr(ns int64) error {
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	if g.fenceErr != nil {
		return g.fenceErr
	}
	if g.deadline != 0 && ns >= g.deadline {
		return g.deadErr
	}
	return nil
}

// errRekeying is returned while Rekey has closed the old machine ID and not
// yet started the new one (or failed to).
var errRekeying = fmt.Errorf("%w: the machine ID is changing", ErrFenced)

// Rekey moves the generator to another machine ID and time guard, as when a
// lost lease is replaced by a lease on a different ID. The old run is closed
// first (its exact mark saved to its guard), then the new one starts like New
// does: it loads the new guard's mark and waits for the clock or fails with
// ErrClockBehind. IDs issued after Rekey carry the new machine ID and none
// of them was ever issued under it. While Rekey runs, and after it fails,
// calls fail with ErrFenced until a Rekey succeeds.
func (g *Generator) Rekey(ctx context.Context, machine MachineID, guard GuardStore) error {
	if machine > MaxMachine {
		return &RangeError{Field: "machine", Value: uint64(machine), Max: uint64(MaxMachine)}
	}
	g.rekeyMu.Lock()
	defer g.rekeyMu.Unlock()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g.cancelRekey = cancel
	old := g.cur.Load()
	last := old.state.Load() &^ closedBit
	if old.state.Load()&closedBit == 0 {
		g.rekeying.Store(true)
		g.before.Add(old.issued())
		var err error
		if last, err = g.closeRun(old); err != nil {
			g.log.Warn("rekey: saving the old machine ID's final mark failed; its last reservation stands", "err", err)
		}
	}
	g.mu.Unlock()

	var minFloor uint64
	if machine == g.machineOf(old) {
		minFloor = last>>g.sb + 1 // never below what this generator issued
	}
	r, err := g.startRun(ctx, machine, guard, minFloor)

	g.mu.Lock()
	defer g.mu.Unlock()
	g.cancelRekey = nil
	if g.closed {
		if err == nil {
			g.closeRun(r)
		}
		return ErrClosed
	}
	if err != nil {
		return err
	}
	g.cur.Store(r)
	g.rekeying.Store(false)
	return nil
}

// FenceAfter makes every call from d from now on (by the generator's
// clock) fail with an error wrapping ErrFenced and cause, checked on every
// call: a lease holder sets it to the time its lease has left, so issuing
// stops in time even if the holder's own timer runs late. Being relative,
// it holds whatever clock each side reads. A later call replaces the
// deadline; NoDeadline removes it.
func (g *Generator) FenceAfter(d time.Duration, cause error) {
	g.setDeadline(max(g.nowNanos()+int64(d), 1), fmt.Errorf("%w: %w", ErrFenced, cause))
}

// NoDeadline removes the deadline of FenceAfter.
func (g *Generator) NoDeadline() { g.setDeadline(0, nil) }

func (g *Generator) setDeadline(ns int64, cause error) {
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	g.deadline, g.deadErr = ns, cause
	if g.fenceErr == nil {
		g.gate.Store(g.deadline)
	}
}

// Unfence lets issuing resume.
func (g *Generator) Unfence() {
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	g.fenceErr = nil
	g.gate.Store(g.deadline)
}

// Ready returns nil when the generator can issue, or why it cannot.
func (g *Generator) Ready() error {
	if err := g.gateErr(g.nowNanos()); err != nil {
		return err
	}
	r := g.cur.Load()
	if r.state.Load()&closedBit != 0 {
		if g.rekeying.Load() {
			return errRekeying
		}
		return ErrClosed
	}
	if e := r.guardErr.Load(); e != nil {
		return *e
	}
	_, err := g.nowUnit()
	return err
}

// Shape returns what the generator's time fields mean: layout, type,
// epoch and version.
func (g *Generator) Shape() Shape {
	return Shape{Layout: g.cfg.Layout, Type: g.cfg.Type, EpochMs: g.epochMs, Version: g.cfg.Version}
}

// ReadyAt is the first clock reading at which a run starting on a guard
// whose mark is mark needs no wait: the unit at or after mark, less the
// whole units of MaxBorrow. A lease that must hold a new holder off until
// mark waits until then, however long, before New or Rekey (which wait
// only MaxStartupWait).
func (g *Generator) ReadyAt(mark time.Time) time.Time { return g.cfg.ReadyAt(mark) }

// ReadyAt is Generator.ReadyAt for a generator with this Config, before it
// exists. The Config must be valid.
func (c Config) ReadyAt(mark time.Time) time.Time {
	codec, _ := NewCodec(c.Layout, c.Epoch)
	unit := c.Type.Unit()
	epoch := codec.Epoch()
	if !mark.After(epoch) {
		return epoch
	}
	units := (mark.Sub(epoch) + unit - 1) / unit // ceil
	return epoch.Add((units - c.MaxBorrow/unit) * unit)
}

// MaxBorrow returns how far the generator may issue ahead of its clock.
func (g *Generator) MaxBorrow() time.Duration { return g.cfg.MaxBorrow }

// Codec returns the generator's codec (layout and epoch).
func (g *Generator) Codec() Codec { return g.codec }

// Layout, Type, Version and Machine describe what the generator issues.
func (g *Generator) Layout() Layout { return g.cfg.Layout }

// Type returns the ID type issued.
func (g *Generator) Type() Type { return g.cfg.Type }

// Version returns the version bit issued.
func (g *Generator) Version() uint8 { return g.cfg.Version }

// Machine returns the machine ID issued.
func (g *Generator) Machine() MachineID { return g.machineOf(g.cur.Load()) }

func (g *Generator) machineOf(r *run) MachineID {
	return MachineID(r.base[0] >> g.shifts.machine & uint64(MaxMachine))
}

// Own returns the fields Make fills in when a request leaves them out: the
// generator's version, type and machine, and method m.
func (g *Generator) Own(m Method) Fields {
	return Fields{Version: uint64(g.cfg.Version), Type: uint64(g.cfg.Type), Method: uint64(m), Machine: uint64(g.Machine())}
}

// Stats are a generator's counters and gauges.
type Stats struct {
	Issued      uint64        // IDs issued since New
	Waits       uint64        // sleeps because the sequence ran out beyond MaxBorrow
	Ahead       time.Duration // how far the last issued unit is ahead of the clock
	ClockOffset time.Duration // wall clock minus the issuing clock (SystemClock only)
	Mark        time.Time     // the durable reservation (zero without a guard)
	MarkAhead   time.Duration // Mark minus the issuing clock's now (zero without a guard)
	GuardFailed bool          // the last save of the mark failed
	Fenced      bool
}

// Stats returns the current counters.
func (g *Generator) Stats() Stats {
	r := g.cur.Load()
	s := Stats{Issued: g.before.Load() + r.issued(), Waits: g.waits.Load(), Fenced: g.gateErr(g.nowNanos()) != nil}
	if now, err := g.nowUnit(); err == nil && r.entered.Load() > now {
		s.Ahead = time.Duration(r.entered.Load()-now) * g.cfg.Type.Unit()
	}
	if g.sys != nil {
		s.ClockOffset = g.sys.Offset()
	}
	if r.guard != nil {
		s.Mark = g.instantOf(r.limit.Load() >> g.sb)
		s.MarkAhead = s.Mark.Sub(time.Unix(0, g.nowNanos()))
		s.GuardFailed = r.guardErr.Load() != nil
	}
	return s
}

// enter records that an ID of unit u was issued. entered and unitEnd may
// be seen out of step: NextID's fast path then finds the state outside
// entered, or the clock past unitEnd, and takes the checked path.
func (g *Generator) enter(r *run, u uint64) {
	for {
		e := r.entered.Load()
		if u < e || (u == e && r.unitEnd.Load() != 0) {
			return
		}
		if r.entered.CompareAndSwap(e, u) {
			r.unitEnd.Store(g.epochNs + int64(u+1)*g.unitMs*1e6)
			return
		}
	}
}

// issued counts the IDs the run has issued.
func (r *run) issued() uint64 {
	r.jumpMu.Lock()
	defer r.jumpMu.Unlock()
	return r.issuedPrev + (r.state.Load() &^ closedBit) + 1 - r.segStart - r.wasted.Load()
}

// Close stops issuing, stops the reserver and saves the exact end of what
// was issued as the guard's mark, so a restart need not wait out the whole
// window. It is idempotent; later calls return the first result.
func (g *Generator) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		g.rekeying.Store(false)
		if g.cancelRekey != nil {
			g.cancelRekey()
		}
		if r := g.cur.Load(); r.state.Load()&closedBit == 0 {
			_, g.closeErr = g.closeRun(r)
		}
	}
	return g.closeErr
}

// closeRun closes r and returns the last packed state it issued.
func (g *Generator) closeRun(r *run) (uint64, error) {
	last := r.state.Or(closedBit) &^ closedBit // one atomic step, however busy
	if r.guard == nil {
		close(*r.limitCh.Load()) // wake the callers waiting for the clock
		return last, nil
	}
	close(r.stop)
	<-r.done
	// The reserver has stopped, so nothing else closes the limit channel:
	// close it to wake every caller waiting on this run for the guard or
	// the clock.
	close(*r.limitCh.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	end := min(last>>g.sb+1, g.maxTime+1)
	if err := r.guard.Save(ctx, g.instantOf(end)); err != nil {
		// The last reservation stays: safe, only a longer wait at restart.
		return last, fmt.Errorf("%w: saving the final mark: %w", ErrGuard, err)
	}
	return last, nil
}
