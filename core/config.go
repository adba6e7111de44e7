package core

import (
	"fmt"
	"log/slog"
	"time"
)

// Config configures a Generator. The zero Config is valid: sorted layout,
// max-peak, the layout's epoch, version 0, machine 0, never ahead of the
// clock, the system clock, no time guard. DefaultConfig gives the
// recommended values.
//
// Zero is each field's default, with two exceptions, where zero is a
// setting of its own and the safe one: MaxBorrow (zero never runs ahead of
// the clock; DefaultConfig's is 1s) and MaxStartupWait (zero never waits;
// DefaultConfig's is 10s). MaxBorrow is read as given by more than the
// generator: a Redis lease (package machineid) holds it, with the lease
// TTL and the clock skew, within the bound its takeover quarantine counts
// on, so a zero that meant 1s to the generator but 0 to the lease would
// let a successor issue inside its predecessor's borrowed time. A value that is only ever itself cannot be read two ways.
type Config struct {
	// Layout of the IDs; zero is Sorted.
	Layout Layout
	// Type of the IDs; zero is MaxPeak.
	Type Type
	// Epoch of the time field; the zero Time is the layout's own epoch.
	Epoch time.Time
	// Version bit, 0 or 1; zero is 0.
	Version uint8
	// Machine ID, 0-1023. Which range a publish method may use is checked
	// by the caller (package machineid); zero is machine 0.
	Machine MachineID
	// MaxBorrow is how far issuing may run ahead of the clock when a
	// unit's sequence runs out, rounded down to whole units; past it,
	// callers sleep until the clock catches up. Zero never runs ahead
	// (Vesta's behaviour): a setting, not the default (see Config); at
	// most 24h.
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
	// guard's mark; zero fails at once with ErrClockBehind (a setting, not
	// the default: see Config).
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
	if c.Layout > Leaf {
		return fmt.Errorf("%w: Layout %d; want Sorted (0), Vesta (1) or Leaf (2)", ErrConfig, c.Layout)
	}
	if c.Type != MaxPeak && c.Type != MinGranularity {
		return fmt.Errorf("%w: Type %d; want MaxPeak (0) or MinGranularity (1)", ErrConfig, c.Type)
	}
	// Leaf's IDs have no type or version bit: milliseconds, and the sign
	// bit clear, so that every Java long reads them as Leaf's do.
	if c.Layout == Leaf && c.Type != MinGranularity {
		return fmt.Errorf("%w: Type %s: the leaf layout counts milliseconds only; want MinGranularity", ErrConfig, c.Type)
	}
	if c.Layout == Leaf && c.Version != 0 {
		return fmt.Errorf("%w: Version %d: the leaf layout's top bit is the sign bit, always 0; want 0", ErrConfig, c.Version)
	}
	if _, err := NewCodec(c.Layout, c.Epoch); err != nil {
		return fmt.Errorf("Epoch: %w", err)
	}
	if c.Version > 1 {
		return fmt.Errorf("%w: Version %d; want 0 or 1", ErrConfig, c.Version)
	}
	if c.Machine > MaxMachine {
		return fmt.Errorf("%w: Machine %d; want 0-%d", ErrConfig, c.Machine, MaxMachine)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"MaxBorrow", c.MaxBorrow}, {"GuardWindow", c.GuardWindow}, {"MaxStartupWait", c.MaxStartupWait}} {
		if d.v < 0 {
			return fmt.Errorf("%w: %s %s is negative", ErrConfig, d.name, d.v)
		}
	}
	if c.MaxBorrow > 24*time.Hour {
		return fmt.Errorf("%w: MaxBorrow %s; want at most 24h", ErrConfig, c.MaxBorrow)
	}
	if c.GuardWindow > 0 && c.GuardWindow < c.Type.Unit() {
		return fmt.Errorf("%w: GuardWindow %s is shorter than one time unit (%s)", ErrConfig, c.GuardWindow, c.Type.Unit())
	}
	return nil
}

// Shape is the shape of the IDs a generator with this Config issues
// (Control.Shape, before the generator exists); an error when the layout
// or the epoch is invalid.
func (c Config) Shape() (Shape, error) {
	codec, err := NewCodec(c.Layout, c.Epoch)
	if err != nil {
		return Shape{}, fmt.Errorf("Epoch: %w", err)
	}
	return Shape{Layout: c.Layout, Type: c.Type, EpochMs: codec.epochMillis(), Version: c.Version}, nil
}

// ReadyAt is Control.ReadyAt for a generator with this Config, before it
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
