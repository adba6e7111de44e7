package core

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test them with errors.Is; the messages of
// returned errors add the details (the field, the value, the gap).
var (
	// ErrOutOfRange: a field does not fit its bits. Returned as a *RangeError.
	ErrOutOfRange = errors.New("core: value out of range")

	// ErrMachineRange: a machine-ID range that cannot be used (text that
	// does not parse, first above last, past MaxMachine), or an ID outside
	// the range it must lie in (MachineRange.Check).
	ErrMachineRange = errors.New("core: bad machine-ID range")

	// ErrInvalidID: text that is not an unsigned 64-bit decimal.
	ErrInvalidID = errors.New("core: invalid id")

	// ErrUnknownName: a layout, type or method name that does not exist.
	ErrUnknownName = errors.New("core: unknown name")

	// ErrConfig: a Config field has a value the generator cannot use.
	ErrConfig = errors.New("core: invalid config")

	// ErrEndOfTime: the clock is past the last unit the layout can hold.
	ErrEndOfTime = errors.New("core: end of time: the time field is exhausted")

	// ErrBeforeEpoch: the clock reads earlier than the layout's epoch.
	ErrBeforeEpoch = errors.New("core: clock is before the epoch")

	// ErrClockBehind: at start, the clock is behind the time guard's mark by
	// more than the generator may borrow or wait; from Ready, a clock
	// stepped back leaves nothing to issue for more than a second.
	ErrClockBehind = errors.New("core: clock is behind the time guard's mark")

	// ErrGuard: the time guard's store failed, so issuing cannot go past the
	// last durable mark.
	ErrGuard = errors.New("core: time guard store failed")

	// ErrShape: the time guard's mark was written by a generator whose IDs
	// are laid out differently (another layout), or by an earlier epoch
	// that a start would have to wait out; the message names both.
	ErrShape = errors.New("core: the time guard's mark was written with another shape")

	// ErrFenced: issuing was stopped from outside (see Control.Fence),
	// for example because a machine-ID lease was lost.
	ErrFenced = errors.New("core: issuing is fenced")

	// ErrClosed: the generator was closed.
	ErrClosed = errors.New("core: generator closed")

	// ErrInvalidCount: a batch size below 1 or above MaxCount (or a
	// caller's own maximum).
	ErrInvalidCount = errors.New("core: invalid count")

	// ErrBusy: a Share already holds as many waiting calls, or owes as
	// many IDs, as it may; the call was refused at once. Retrying later,
	// or another server, may succeed.
	ErrBusy = errors.New("core: too many calls wait for the sequence")
)

// RangeError reports a field value that does not fit its bits.
type RangeError struct {
	Field string // "machine", "seq", "time", "method", "type", "version"
	Value uint64
	Max   uint64 // largest allowed value; the smallest is always 0
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("core: %s %d out of range 0-%d", e.Field, e.Value, e.Max)
}

// Unwrap makes errors.Is(err, ErrOutOfRange) true.
func (e *RangeError) Unwrap() error { return ErrOutOfRange }

func checkRange(field string, v, max uint64) error {
	if v > max {
		return &RangeError{Field: field, Value: v, Max: max}
	}
	return nil
}
