package core

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

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
	alarms  alarmClock   // ends NextID's clockless path at a unit's end; nil: every call reads the clock
	log     *slog.Logger
	epochMs int64
	epochNs int64
	unitMs  int64
	sb      uint   // seq bits
	seqMask uint64 // low sb bits
	shifts  shifts
	randMax uint64 // exclusive bound of a unit's random first seq; 1 for Vesta, 100 for Leaf
	borrow  uint64 // MaxBorrow in whole units
	window  uint64 // GuardWindow in whole units (at least 1)
	endPk   uint64 // first packed state past the last unit
	maxTime uint64

	// gate is the one word the hot path reads for Control.Fence and
	// FenceAfter: 0 is open, -1 fenced, >0 the deadline (Unix ns on the
	// generator's clock) from which calls fail. The causes are under
	// gateMu.
	gate     atomic.Int64
	gateMu   sync.Mutex
	fenceErr error // non-nil: fenced with this
	deadline int64 // 0: none
	deadErr  error

	ctl Control // the lease's handle, see Control

	cur      atomic.Pointer[run]
	waits    atomic.Uint64 // sleeps because the sequence ran out past MaxBorrow
	spent    atomic.Uint64 // units whose sequence ran out (countSpent)
	rekeying atomic.Bool   // the current run is closed and its successor not yet started
	before   atomic.Uint64 // IDs issued by runs that were re-keyed away

	rekeyMu     sync.Mutex // one Rekey at a time
	mu          sync.Mutex // guards closed, closeErr, cancelRekey and run installation
	closed      bool
	closeErr    error
	cancelRekey context.CancelFunc // ends a Rekey waiting for the clock when Close comes
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
	cfg.GuardWindow = cmp.Or(cfg.GuardWindow, 3*time.Second)
	g := &Generator{cfg: cfg, codec: codec, clock: cfg.Clock, log: cfg.Logger}
	g.ctl.g = g
	if g.clock == nil {
		g.sys = NewSystemClock()
		g.clock = g.sys
	} else if s, ok := g.clock.(*SystemClock); ok {
		g.sys = s
	}
	g.alarms, _ = g.clock.(alarmClock)
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	w := widthsOf(cfg.Layout, cfg.Type)
	g.epochMs = codec.epochMillis()
	g.epochNs = g.epochMs * 1e6
	g.unitMs = cfg.Type.Unit().Milliseconds()
	g.sb = w.seqBits
	g.seqMask = w.maxSeq()
	g.shifts = shiftsOf(cfg.Layout, cfg.Type)
	g.maxTime = w.maxTime()
	g.endPk = (g.maxTime + 1) << g.sb
	switch cfg.Layout {
	case Sorted:
		g.randMax = 1 << (w.seqBits / 2)
	case Leaf:
		g.randMax = 100 // Leaf's RANDOM.nextInt(100), so IDs spread over shards as Leaf's do
	default:
		g.randMax = 1
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
	now, err := g.nowUnit()
	if err != nil {
		return err
	}
	return g.behind(r, now)
}

// stalledAfter is how long issuing may have to wait for the clock and the
// generator still count as ready: at the ceiling the wait is under a unit
// (busy, not dead); a clock stepped back past MaxBorrow leaves nothing to
// issue until it catches up with the IDs already issued, which may take
// hours, and a balancer should send callers elsewhere meanwhile.
const stalledAfter = time.Second

// behind says why r cannot issue for longer than stalledAfter at unit now:
// its next ID lies past the unit it is in and further ahead of the clock
// than MaxBorrow lets it go (reserveAt's bound).
func (g *Generator) behind(r *run, now uint64) error {
	next := ((r.state.Load() &^ closedBit) + 1) >> g.sb
	if next <= now+g.borrow || next <= r.entered.Load() {
		return nil
	}
	resume := g.instantOf(next - g.borrow)
	if wait := resume.Sub(g.clock.Now()); wait > stalledAfter {
		return fmt.Errorf("%w: the next ID is due at %s, %v ahead of the clock (max_borrow %v): issuing resumes at %s",
			ErrClockBehind, FormatInstant(g.cfg.Type, g.instantOf(next)), g.instantOf(next).Sub(g.clock.Now()).Round(time.Millisecond),
			g.cfg.MaxBorrow, FormatInstant(g.cfg.Type, resume))
	}
	return nil
}

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
