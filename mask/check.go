package mask

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/vesta-go/vesta/core"
)

// Check is what Unmask holds a decoded ID to: the IDs this deployment
// can have issued. 65 bits of text carry 64 bits of ID and a slot, so the
// check is what refuses a random, mistyped or forged text, and a mask of
// another tenant or kind without a prefix, before any database lookup:
// its time must lie between NotBefore and the clock (plus MaxBorrow and
// Skew), its version and type bits be the deployment's, and its machine
// ID lie in the range of its publish method (the embedded range for
// method 0, the server range for 1 and 2; method 3 is never issued).
// Leaf IDs carry no method, type or version: their sign bit must be
// clear and their machine ID in either range. Rejection says how much of
// the 64-bit space it refuses.
//
// Checking costs an atomic load: the clock is read only for an ID newer
// than the newest seen so far.
type Check struct {
	// Off accepts every 64-bit value: Unmask then refuses only bad text
	// and retired slots. For masking values that are not this
	// deployment's IDs.
	Off bool
	// Codec is the IDs' layout and epoch; the zero Codec is the sorted
	// layout with its own epoch.
	Codec core.Codec
	// Type of the IDs; zero is core.MaxPeak. The leaf layout takes
	// core.MinGranularity only.
	Type core.Type
	// Version bit of the IDs, 0 or 1 (the leaf layout: 0).
	Version uint8
	// Embedded and Server are the machine IDs of the publish methods
	// (machine.embedded_range and machine.server_range); the zero range
	// is every machine ID.
	Embedded, Server core.MachineRange
	// MaxBorrow is how far issuers may run ahead of their clocks
	// (id.max_borrow); zero is none, as there.
	MaxBorrow time.Duration
	// Skew is how far another issuer's clock may be ahead of this one's;
	// zero is DefaultSkew, a negative value none.
	Skew time.Duration
	// NotBefore refuses IDs made before it (mask.not_before): the instant
	// a deployment began issuing, which narrows the times a random text
	// may decode to. The zero Time is the epoch.
	NotBefore time.Time
	// Now reads the clock; nil is time.Now.
	Now func() time.Time
}

// DefaultSkew is Check.Skew's default: clocks of a fleet kept by NTP are
// far closer, and a minute of 34 years changes nothing of what is refused.
const DefaultSkew = time.Minute

// maxAhead bounds MaxBorrow and Skew, as core bounds the borrow.
const maxAhead = 24 * time.Hour

// CheckOf is the check of the IDs generators of cfg issue (its layout,
// epoch, type, version, MaxBorrow and clock) from the machine ranges of
// the embedded and server publish methods; core's zero defaults hold
// (the zero Epoch is the layout's own). It fails as core.NewCodec does.
func CheckOf(cfg core.Config, embedded, server core.MachineRange) (Check, error) {
	codec, err := core.NewCodec(cfg.Layout, cfg.Epoch)
	if err != nil {
		return Check{}, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	c := Check{Codec: codec, Type: cfg.Type, Version: cfg.Version, Embedded: embedded, Server: server, MaxBorrow: cfg.MaxBorrow}
	if cfg.Clock != nil {
		c.Now = cfg.Clock.Now
	}
	return c, nil
}

// Validate reports the first field that cannot be used, by name.
func (c Check) Validate() error {
	_, err := c.compile()
	return err
}

// checker is a compiled Check: the bit positions of the layout's fields,
// learned from core's own Explain, and the bounds.
type checker struct {
	off                 bool
	codec               core.Codec
	typ                 core.Type
	fixedMask, fixed    uint64 // version and type bits (leaf: the sign bit), and their values
	timeShift           uint
	timeMask            uint64 // after the shift
	machineShift        uint
	methodShift         uint
	hasMethod           bool
	lo, hi              [4]uint16 // machine bounds per method (leaf: [0] and [1] are the two ranges); lo > hi is none
	minTime             uint64
	maxTime             atomic.Uint64 // the newest time field seen acceptable: never above clock+ahead
	ahead               time.Duration
	now                 func() time.Time
	timeBits, fixedBits int
}

func (c Check) compile() (*checker, error) {
	k := &checker{off: c.Off, codec: c.Codec, typ: c.Type, now: c.Now}
	if k.now == nil {
		k.now = time.Now
	}
	if c.Off {
		return k, nil
	}
	bad := func(field, format string, args ...any) (*checker, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrCheck, field, fmt.Sprintf(format, args...))
	}
	layout := c.Codec.Layout()
	if _, err := c.Codec.TransTime(c.Type, 0); err != nil {
		return bad("Type", "%v", err)
	}
	if c.Version > 1 || layout == core.Leaf && c.Version != 0 {
		return bad("Version", "%d; want 0 or 1 (the leaf layout: 0)", c.Version)
	}
	for _, r := range []struct {
		name string
		r    core.MachineRange
	}{{"Embedded", c.Embedded}, {"Server", c.Server}} {
		if r.r.Count > 0 && uint32(r.r.First)+uint32(r.r.Count) > uint32(core.MaxMachine)+1 {
			return bad(r.name, "%d machine IDs from %d pass %d", r.r.Count, r.r.First, core.MaxMachine)
		}
	}
	if c.MaxBorrow < 0 || c.MaxBorrow > maxAhead {
		return bad("MaxBorrow", "%s; want 0-%s", c.MaxBorrow, maxAhead)
	}
	if c.Skew > maxAhead {
		return bad("Skew", "%s; want at most %s", c.Skew, maxAhead)
	}
	skew := c.Skew
	switch {
	case skew == 0:
		skew = DefaultSkew
	case skew < 0:
		skew = 0
	}
	k.ahead = c.MaxBorrow + skew

	// Learn the layout from Explain: flip each bit of an ID of the type
	// and see which field changes.
	base, err := c.Codec.Make(core.Fields{Type: uint64(c.Type)})
	if err != nil {
		return bad("Type", "%v", err)
	}
	var timeLow, timeCount, machineLow, methodLow = -1, 0, -1, -1
	for b := range 64 {
		e := c.Codec.Explain(base ^ core.ID(1)<<b)
		switch {
		case e.Type != c.Type || e.Version != 0:
			k.fixedMask |= 1 << b
		case e.Time != 0:
			timeCount++
			if timeLow < 0 {
				timeLow = b
			}
		case e.Machine != 0 && machineLow < 0:
			machineLow = b
		case e.Method != 0 && e.Method != core.MethodUnknown && methodLow < 0:
			methodLow = b
		}
	}
	if timeLow < 0 || machineLow < 0 {
		return bad("Codec", "the layout %s has no time or machine field", layout) // a core change this package missed
	}
	k.timeShift, k.timeMask, k.timeBits = uint(timeLow), 1<<timeCount-1, timeCount
	k.machineShift = uint(machineLow)
	k.hasMethod = methodLow >= 0
	k.methodShift = uint(max(methodLow, 0))
	k.fixedBits = bits.OnesCount64(k.fixedMask)
	want, _ := c.Codec.Make(core.Fields{Type: uint64(c.Type), Version: uint64(c.Version)})
	k.fixed = uint64(want) & k.fixedMask

	span := func(r core.MachineRange) (uint16, uint16) {
		if r.Count == 0 {
			return 0, uint16(core.MaxMachine)
		}
		return uint16(r.First), uint16(r.First) + r.Count - 1
	}
	for m := range k.lo {
		k.lo[m], k.hi[m] = 1, 0 // none
	}
	if k.hasMethod {
		k.lo[core.Embedded], k.hi[core.Embedded] = span(c.Embedded)
		k.lo[core.Central], k.hi[core.Central] = span(c.Server)
		k.lo[core.REST], k.hi[core.REST] = span(c.Server)
	} else {
		k.lo[0], k.hi[0] = span(c.Embedded)
		k.lo[1], k.hi[1] = span(c.Server)
	}

	if !c.NotBefore.IsZero() && c.NotBefore.After(c.Codec.Epoch()) {
		u, err := c.Codec.Units(c.Type, c.NotBefore)
		if err != nil {
			return bad("NotBefore", "%v", err)
		}
		k.minTime = u
	}
	return k, nil
}

// refresh raises maxTime to the clock's time field plus ahead, and
// returns it.
func (k *checker) refresh() uint64 {
	u, err := k.codec.Units(k.typ, k.now().Add(k.ahead))
	switch {
	case errors.Is(err, core.ErrEndOfTime):
		u = k.timeMask
	case err != nil: // before the epoch: no ID yet
		return k.maxTime.Load()
	}
	for {
		old := k.maxTime.Load()
		if u <= old || k.maxTime.CompareAndSwap(old, u) {
			return max(u, old)
		}
	}
}

// check returns why id cannot be one of the deployment's, or "".
func (k *checker) check(id core.ID) string {
	if k.off {
		return ""
	}
	v := uint64(id)
	if v&k.fixedMask != k.fixed {
		if k.codec.Layout() == core.Leaf {
			return "its sign bit is set"
		}
		return "its version or type differs from this deployment's"
	}
	t := v >> k.timeShift & k.timeMask
	if t < k.minTime {
		return "it was made before mask.not_before"
	}
	if t > k.maxTime.Load() && t > k.refresh() {
		return "its time is ahead of the clock"
	}
	m := uint16(v >> k.machineShift & uint64(core.MaxMachine))
	if k.hasMethod {
		method := v >> k.methodShift & 3
		if m < k.lo[method] || m > k.hi[method] {
			if method == uint64(core.Reserved) {
				return "its publish method (3) is never issued"
			}
			return "its machine ID lies outside its publish method's range"
		}
		return ""
	}
	if (m < k.lo[0] || m > k.hi[0]) && (m < k.lo[1] || m > k.hi[1]) {
		return "its machine ID lies outside the embedded and server ranges"
	}
	return ""
}

// accepted is the share of the 64-bit values check accepts now.
func (k *checker) accepted() float64 {
	if k.off {
		return 1
	}
	maxT := k.refresh()
	var times float64
	if maxT >= k.minTime {
		times = float64(maxT-k.minTime+1) / math.Ldexp(1, k.timeBits)
	}
	size := func(m int) float64 {
		if k.lo[m] > k.hi[m] {
			return 0
		}
		return float64(k.hi[m] - k.lo[m] + 1)
	}
	var machines float64
	if k.hasMethod {
		machines = (size(0) + size(1) + size(2) + size(3)) / (4 * 1024)
	} else {
		union := size(0) + size(1)
		if k.lo[0] <= k.hi[1] && k.lo[1] <= k.hi[0] { // overlapping: count once
			union = float64(max(k.hi[0], k.hi[1])-min(k.lo[0], k.lo[1])) + 1
		}
		machines = union / 1024
	}
	return math.Ldexp(times*machines, -k.fixedBits)
}
