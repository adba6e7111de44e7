package segment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/vesta-go/vesta/core"
)

// Errors of the package, tested with errors.Is. Store implementations wrap
// them too (a tag missing from the store is ErrUnknownTag whatever the store).
var (
	// ErrUnknownTag: the tag is not in the store (create it first).
	ErrUnknownTag = errors.New("segment: unknown tag")
	// ErrInvalidTag: a tag name that is not 1-128 characters of [A-Za-z0-9_.:-].
	ErrInvalidTag = errors.New("segment: invalid tag")
	// ErrUnavailable: the store failed and the tag's buffers ran out; the
	// store's own error is wrapped too. Issuing resumes by itself once the
	// store answers again.
	ErrUnavailable = errors.New("segment: unavailable")
	// ErrClosed: the issuer (or store) was closed.
	ErrClosed = errors.New("segment: closed")
	// ErrInvalidCount: a count below 1 or above MaxCount.
	ErrInvalidCount = errors.New("segment: invalid count")
	// ErrConfig: a Config or TagInfo field that cannot be used; the message
	// names it.
	ErrConfig = errors.New("segment: invalid config")
	// ErrTagExists: Create of a tag the store already holds.
	ErrTagExists = errors.New("segment: tag exists")
	// ErrBadRange: the store answered a range the issuer must not issue from:
	// empty, reaching the top of int64, or not above a range it answered
	// before (the store lost writes). Issuing from it could repeat numbers.
	ErrBadRange = errors.New("segment: store answered a bad range")
)

// Leaf's constants, the defaults of Config.
const (
	// DefaultThreshold: Leaf fetches the next range once 10% of the current
	// one is issued (its test is idle < 0.9*step).
	DefaultThreshold = 0.1
	// DefaultTargetDuration is Leaf's SEGMENT_DURATION: a range meant to last
	// 15 minutes.
	DefaultTargetDuration = 15 * time.Minute
	// DefaultMaxStep is Leaf's MAX_STEP: dynamic steps double up to 1,000,000.
	DefaultMaxStep = 1_000_000
	// DefaultRefreshTags is Leaf's period for re-reading the tag list.
	DefaultRefreshTags = time.Minute
	// DefaultStoreTimeout bounds one store call.
	DefaultStoreTimeout = 5 * time.Second
	// DefaultRetryBackoff: after a failed fetch, callers with empty buffers
	// fail fast for this long before the next attempt, so a dead store is
	// not hammered by every caller.
	DefaultRetryBackoff = time.Second
)

// MaxCount is the most numbers one NextN call returns; servers narrow it.
const MaxCount = 1 << 20

// MaxTagLen is the longest tag name: Leaf's biz_tag is varchar(128).
const MaxTagLen = 128

// topHeadroom: ranges must end this far below math.MaxInt64, so that
// counters running past a range's end never wrap.
const topHeadroom = 1 << 32

// MaxNumber is the last number a tag can issue: max_id is a signed 64-bit
// integer (Leaf's bigint), less the headroom that keeps counters running
// past a range's end from wrapping. A range ending above it is refused
// (ErrBadRange).
const MaxNumber = math.MaxInt64 - topHeadroom

// Store is where ranges are reserved, shared by every issuer of a tag. An
// implementation must make Next atomic: two calls, from any processes,
// never answer overlapping ranges, and a range once answered is never
// answered again, even after a crash of the store (see each store's
// durability notes).
type Store interface {
	// Next atomically advances tag's max_id by step (0 = the tag's stored
	// step) and returns the new range. As Leaf, a range is
	// [max_id-step, max_id-1] with max_id read after the advance, so a tag
	// created with max_id N issues N first. ErrUnknownTag for a tag not in
	// the store.
	Next(ctx context.Context, tag string, step int64) (Range, error)
	// Tags lists the tags in the store with their stored max_id and step.
	Tags(ctx context.Context) ([]TagInfo, error)
	// Create adds a tag (Leaf: INSERT INTO leaf_alloc(biz_tag, max_id,
	// step, description)); ErrTagExists if it is there already.
	Create(ctx context.Context, t TagInfo) error
	// Close releases the store's connections.
	Close() error
}

// Range is a block of numbers reserved in the store: First to Last,
// inclusive.
type Range struct {
	First, Last int64
	// Step is the tag's stored step, read in the same atomic step as the
	// advance: the dynamic step never goes below it (as Leaf's minStep).
	Step int64
}

// Len is the count of numbers in r.
func (r Range) Len() int64 { return r.Last - r.First + 1 }

// RangeAt is the range a store answers after advancing max_id by step to
// maxID, Leaf's [max_id-step, max_id-1].
func RangeAt(maxID, step, stored int64) Range {
	return Range{First: maxID - step, Last: maxID - 1, Step: stored}
}

// TagInfo is one row of the store (Leaf's leaf_alloc).
type TagInfo struct {
	// Tag is the name (Leaf's biz_tag).
	Tag string
	// MaxID is the stored max_id: the first number the next range holds.
	// In Create, the first number the tag issues; it must be at least 1.
	MaxID int64
	// Step is the stored step, the size of a range before dynamic steps;
	// at least 1.
	Step int64
	// Description is free text (Leaf's description); at most 256 bytes.
	Description string
	// Updated is when the row last changed (Leaf's update_time); ignored by
	// Create.
	Updated time.Time
}

// MaxDescriptionLen is Leaf's description varchar(256).
const MaxDescriptionLen = 256

// Validate checks a TagInfo for Create, naming the bad field.
func (t TagInfo) Validate() error {
	if err := ValidTag(t.Tag); err != nil {
		return err
	}
	if t.MaxID < 1 || t.MaxID > MaxNumber {
		return fmt.Errorf("%w: MaxID (start) %d out of range 1-%d", ErrConfig, t.MaxID, int64(MaxNumber))
	}
	if t.Step < 1 || t.Step > math.MaxInt32 {
		// Leaf's step column is int(11).
		return fmt.Errorf("%w: Step %d out of range 1-%d", ErrConfig, t.Step, math.MaxInt32)
	}
	if len(t.Description) > MaxDescriptionLen {
		return fmt.Errorf("%w: Description is %d bytes, more than %d", ErrConfig, len(t.Description), MaxDescriptionLen)
	}
	return nil
}

// ValidTag reports whether tag is a usable name: 1-128 characters of
// [A-Za-z0-9_.:-]. The error wraps ErrInvalidTag and quotes the name, cut
// to MaxTagLen bytes: a caller may send kilobytes, which no message
// repeats.
func ValidTag(tag string) error {
	if len(tag) == 0 || len(tag) > MaxTagLen {
		return fmt.Errorf("%w: %q: length %d, not 1-%d", ErrInvalidTag, clipTag(tag), len(tag), MaxTagLen)
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_', c == '.', c == ':', c == '-':
		default:
			return fmt.Errorf("%w: %q: character %q at %d (allowed: A-Z a-z 0-9 _ . : -)", ErrInvalidTag, tag, c, i)
		}
	}
	return nil
}

func clipTag(tag string) string {
	if len(tag) > MaxTagLen {
		return tag[:MaxTagLen] + "..."
	}
	return tag
}

// Config is the issuer's configuration. One rule for every field: zero
// is the default its comment names (Leaf's value), which DefaultConfig
// spells out; where a field can be turned off, a negative value turns it
// off. conf's segment.* keys read these fields and mean the same.
type Config struct {
	// Threshold is the share of a range issued after which the next range
	// is fetched in the background, in (0, 1]; zero is Leaf's 0.1.
	Threshold float64
	// TargetDuration drives the dynamic step as in Leaf: when the time
	// between two fetches is under it, the step doubles (up to MaxStep);
	// over twice it, the step halves (never below the tag's stored step).
	// 1s to 24h; zero is Leaf's 15 minutes.
	TargetDuration time.Duration
	// MaxStep caps the dynamic step, 1 to 2^31-1; zero is Leaf's
	// 1,000,000. A stored step above it is used as is, never grown.
	MaxStep int64
	// Preload lists tags whose first range Open fetches, so the first
	// calls do not wait on the store. Empty preloads none; a preloaded tag
	// that is invalid or not in the store fails Open.
	Preload []string
	// RefreshTags is how often the tag list is re-read from the store, so
	// tags created while running are served, 1s to 24h; zero is Leaf's 1
	// minute, negative never (tags are then still looked up on a miss).
	RefreshTags time.Duration
	// StoreTimeout bounds one store call; zero is 5 seconds.
	StoreTimeout time.Duration
	// RetryBackoff is how long callers with empty buffers fail fast with
	// ErrUnavailable after a failed fetch before one tries again; zero is
	// 1 second.
	RetryBackoff time.Duration
	// Clock times the dynamic step, the backoff and the refresh loop; nil
	// is core.NewSystemClock().
	Clock core.Clock
	// Logger receives fetch failures and tag changes; nil discards.
	Logger *slog.Logger
	// OnStore, if set, is called after every store call (op "next" or
	// "tags"; tag empty for "tags") with its duration and error, from the
	// goroutine that made the call: a hook for latency histograms.
	OnStore func(op, tag string, d time.Duration, err error)
}

// DefaultConfig is Leaf's configuration.
func DefaultConfig() Config {
	return Config{
		Threshold:      DefaultThreshold,
		TargetDuration: DefaultTargetDuration,
		MaxStep:        DefaultMaxStep,
		RefreshTags:    DefaultRefreshTags,
		StoreTimeout:   DefaultStoreTimeout,
		RetryBackoff:   DefaultRetryBackoff,
	}
}

// Bounds of TargetDuration and of a RefreshTags that is on; periods is
// them in a message.
const (
	minPeriod = time.Second
	maxPeriod = 24 * time.Hour
	periods   = "1s to 24h"
)

// Validate checks cfg, naming the first bad field. Zero values are valid
// (they mean the defaults).
func (cfg Config) Validate() error {
	period := func(d time.Duration) bool { return d == 0 || (d >= minPeriod && d <= maxPeriod) }
	switch {
	case math.IsNaN(cfg.Threshold) || cfg.Threshold < 0 || cfg.Threshold > 1:
		return fmt.Errorf("%w: Threshold: %v; want 0 (meaning %v) to 1", ErrConfig, cfg.Threshold, DefaultThreshold)
	case !period(cfg.TargetDuration):
		return fmt.Errorf("%w: TargetDuration: %v; want 0 (meaning 15m) or %s", ErrConfig, cfg.TargetDuration, periods)
	case cfg.MaxStep < 0 || cfg.MaxStep > math.MaxInt32:
		return fmt.Errorf("%w: MaxStep: %d; want 0 (meaning %d) to %d", ErrConfig, cfg.MaxStep, DefaultMaxStep, math.MaxInt32)
	case cfg.RefreshTags > 0 && !period(cfg.RefreshTags):
		return fmt.Errorf("%w: RefreshTags: %v; want 0 (meaning 1m), negative (never) or %s", ErrConfig, cfg.RefreshTags, periods)
	case cfg.StoreTimeout < 0:
		return fmt.Errorf("%w: StoreTimeout: %v; want 0 (meaning 5s) or above", ErrConfig, cfg.StoreTimeout)
	case cfg.RetryBackoff < 0:
		return fmt.Errorf("%w: RetryBackoff: %v; want 0 (meaning 1s) or above", ErrConfig, cfg.RetryBackoff)
	}
	for i, tag := range cfg.Preload {
		if err := ValidTag(tag); err != nil {
			return fmt.Errorf("%w: Preload[%d]: %w", ErrConfig, i, err)
		}
	}
	return nil
}

// withDefaults fills zero fields and copies slices.
func (cfg Config) withDefaults() Config {
	d := DefaultConfig()
	cfg.Threshold = cmp.Or(cfg.Threshold, d.Threshold)
	cfg.TargetDuration = cmp.Or(cfg.TargetDuration, d.TargetDuration)
	cfg.MaxStep = cmp.Or(cfg.MaxStep, d.MaxStep)
	cfg.RefreshTags = cmp.Or(cfg.RefreshTags, d.RefreshTags)
	cfg.StoreTimeout = cmp.Or(cfg.StoreTimeout, d.StoreTimeout)
	cfg.RetryBackoff = cmp.Or(cfg.RetryBackoff, d.RetryBackoff)
	if cfg.Clock == nil {
		cfg.Clock = core.NewSystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Preload = append([]string(nil), cfg.Preload...)
	return cfg
}

// Stats is a snapshot of one tag in an issuer, for metrics.
type Stats struct {
	// Issued counts numbers handed out by this issuer.
	Issued int64
	// RangesFetched counts ranges taken from the store.
	RangesFetched int64
	// Step is the step of the last fetch (dynamic), 0 before the first.
	Step int64
	// Remaining is how many numbers the buffers hold (current + next).
	Remaining int64
	// StoreErrors counts failed fetches.
	StoreErrors int64
	// StoreLatency is the duration of the last fetch.
	StoreLatency time.Duration
	// LastError is the error of the last fetch, nil if it succeeded.
	LastError error
	// Waits counts calls that found both buffers empty and waited for the
	// store (the first fetch of a tag included): in the steady state it
	// stays still; if it grows, ranges are used up faster than the store answers
	// (raise the stored step or MaxStep).
	Waits int64
}
