package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/segment"
)

// Errors of the package; a tag missing is segment.ErrUnknownTag and a
// duplicate Create segment.ErrTagExists.
var (
	// ErrConfig: a Config field that cannot be used; the message names it.
	ErrConfig = errors.New("redisstore: invalid config")
	// ErrAhead: a range would end too far above the loss floor's line
	// (line(now) + Ahead) to be waited for; the tag runs far ahead of the
	// clock (a start set too high, or a clock far behind).
	ErrAhead = errors.New("redisstore: tag ahead of the loss floor")
	// ErrNotDurable: CheckDurability found the server may lose
	// acknowledged writes (no AOF with appendfsync always).
	ErrNotDurable = errors.New("redisstore: redis may lose acknowledged writes")
)

const (
	// Ahead is how far above the line (1000 × Unix ms) a range may end.
	Ahead = 1_000_000_000
	// Limit bounds every number: exact in Lua's doubles, with headroom.
	Limit = 1<<53 - 1 - 1<<32
	// maxWait is the longest the store waits for the line to pass a range.
	maxWait = 10 * time.Second
)

// Config configures a Store made by Open.
type Config struct {
	// Addrs are the Redis addresses (host:port, a port 1-65535); one for a single server,
	// several for a cluster; required.
	Addrs []string
	// Username and Password authenticate; empty for none. Password is a
	// secret: Store never prints it.
	Username, Password string
	// DB is the database number (single server only); zero is 0.
	DB int
	// KeyPrefix is the key prefix; empty is "vesta:seg". Keys are
	// "{prefix}:tags" and "{prefix}:t:<tag>".
	KeyPrefix string
	// NoLossFloor turns off the loss floor (see the package doc): only for
	// a Redis with appendfsync always and no lagging failover. The zero
	// value keeps it on.
	NoLossFloor bool
}

var prefixRe = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// Validate checks cfg, naming the bad field.
func (cfg Config) Validate() error {
	if len(cfg.Addrs) == 0 {
		return fmt.Errorf("%w: Addrs is empty", ErrConfig)
	}
	for i, a := range cfg.Addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || !validPort(port) {
			if len(a) > 64 {
				a = a[:64] + "..."
			}
			return fmt.Errorf("%w: Addrs[%d] %q; want host:port with a port 1-65535", ErrConfig, i, a)
		}
	}
	if cfg.DB < 0 || (cfg.DB > 0 && len(cfg.Addrs) > 1) {
		return fmt.Errorf("%w: DB %d: must be >= 0, and 0 for a cluster", ErrConfig, cfg.DB)
	}
	if cfg.KeyPrefix != "" && !prefixRe.MatchString(cfg.KeyPrefix) {
		return fmt.Errorf("%w: KeyPrefix %q; want 1-64 characters of A-Z a-z 0-9 _ . : -, or empty for vesta:seg", ErrConfig, cfg.KeyPrefix)
	}
	return nil
}

// validPort reports whether port is a number 1-65535.
func validPort(port string) bool {
	p, err := strconv.Atoi(port)
	return err == nil && p >= 1 && p <= 65535
}

// Store is a segment.Store on Redis.
type Store struct {
	rdb      redis.UniversalClient
	own      bool
	prefix   string
	tagsKey  string
	floor    bool
	mu       sync.Mutex
	known    map[string]known // what this client saw of each tag
	closeMu  sync.Once
	closeErr error
}

type known struct{ maxID, step int64 }

var _ segment.Store = (*Store)(nil)

// Open connects to the Redis of cfg (lazily: a server down shows in the
// first call). Close closes the client.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: append([]string(nil), cfg.Addrs...), Username: cfg.Username, Password: cfg.Password, DB: cfg.DB,
	})
	s := New(rdb, cfg)
	s.own = true
	return s, nil
}

// New makes a Store on an existing client (cfg's Addrs, credentials and DB
// are not used). Close leaves the client open.
func New(rdb redis.UniversalClient, cfg Config) *Store {
	p := cfg.KeyPrefix
	if p == "" {
		p = "vesta:seg"
	}
	return &Store{rdb: rdb, prefix: "{" + p + "}", tagsKey: "{" + p + "}:tags",
		floor: !cfg.NoLossFloor, known: map[string]known{}}
}

func (s *Store) key(tag string) string { return s.prefix + ":t:" + tag }

// The scripts share a preamble computing the run id and the line, and
// formatting numbers as integers (Redis would print a Lua number as a
// float).
const preamble = `
local function num(x) return string.format('%d', x) end
local run, line, ms = '', 0, 0
do
  local t = redis.call('TIME')
  ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  line = ms * 1000
  if ARGV[1] == '1' then
    run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''
  end
end
`

// next: KEYS = {tag hash, tags set}; ARGV = {floor on, step (0 = stored),
// known max_id (0 = none), known step, tag, Ahead, Limit}.
var nextScript = redis.NewScript(preamble + `
local step, knownMax, knownStep = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ahead, limit = tonumber(ARGV[6]), tonumber(ARGV[7])
local h = redis.call('HMGET', KEYS[1], 'max_id', 'step', 'run')
local maxID, stored = tonumber(h[1]), tonumber(h[2])
local lost = false
if not maxID then
  if ARGV[1] ~= '1' or knownMax == 0 then
    return redis.error_reply('VESTA_UNKNOWN_TAG')
  end
  maxID, stored, lost = 0, knownStep, true
  redis.call('SADD', KEYS[2], ARGV[5])
elseif ARGV[1] == '1' and h[3] ~= run then
  lost = true
end
if lost then
  local floor = line + ahead
  if knownMax > floor then floor = knownMax end
  if maxID < floor then maxID = floor end
end
if step == 0 then step = stored end
if not step or step < 1 then
  return redis.error_reply('VESTA_BAD_STEP ' .. tostring(h[2]))
end
local newMax = maxID + step
if newMax > limit then
  return redis.error_reply('VESTA_LIMIT ' .. num(newMax))
end
if ARGV[1] == '1' and newMax > line + ahead then
  if lost then
    -- keep the jump, so that the wait below ends
    redis.call('HSET', KEYS[1], 'max_id', num(maxID), 'step', num(stored), 'run', run, 'updated', num(ms))
  end
  return redis.error_reply('VESTA_AHEAD ' .. num(newMax - line - ahead))
end
redis.call('HSET', KEYS[1], 'max_id', num(newMax), 'step', num(stored), 'run', run, 'updated', num(ms))
return {num(newMax), num(step), num(stored)}
`)

// create: KEYS = {tag hash, tags set}; ARGV = {floor on, max_id, step,
// description, tag, Ahead}.
var createScript = redis.NewScript(preamble + `
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.error_reply('VESTA_EXISTS')
end
if ARGV[1] == '1' and tonumber(ARGV[2]) + tonumber(ARGV[3]) > line + tonumber(ARGV[6]) then
  return redis.error_reply('VESTA_AHEAD ' .. num(line))
end
redis.call('HSET', KEYS[1], 'max_id', ARGV[2], 'step', ARGV[3], 'description', ARGV[4], 'run', run, 'updated', num(ms))
redis.call('SADD', KEYS[2], ARGV[5])
return 1
`)

func b2s(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Next reserves a range: max_id += step (0: the stored step) in one script,
// applying the loss floor (package doc). It waits, bounded by ctx, while
// the first range after a loss jump lies above the line.
func (s *Store) Next(ctx context.Context, tag string, step int64) (segment.Range, error) {
	if step < 0 {
		return segment.Range{}, fmt.Errorf("redisstore: step %d is negative", step)
	}
	if err := segment.ValidTag(tag); err != nil {
		return segment.Range{}, err
	}
	deadline := time.Now().Add(maxWait)
	for {
		s.mu.Lock()
		k := s.known[tag]
		s.mu.Unlock()
		res, err := nextScript.Run(ctx, s.rdb, []string{s.key(tag), s.tagsKey},
			b2s(s.floor), step, k.maxID, k.step, tag, int64(Ahead), int64(Limit)).StringSlice()
		if err == nil {
			return s.ranged(tag, res)
		}
		msg := scriptError(err)
		switch {
		case strings.HasPrefix(msg, "VESTA_UNKNOWN_TAG"):
			return segment.Range{}, fmt.Errorf("redisstore: tag %q: %w", tag, segment.ErrUnknownTag)
		case strings.HasPrefix(msg, "VESTA_AHEAD "):
			over, _ := strconv.ParseInt(strings.TrimPrefix(msg, "VESTA_AHEAD "), 10, 64)
			wait := time.Duration(over/1000+1) * time.Millisecond
			if time.Now().Add(wait).After(deadline) {
				return segment.Range{}, fmt.Errorf("%w: tag %q is %d above line+%d", ErrAhead, tag, over, int64(Ahead))
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return segment.Range{}, fmt.Errorf("redisstore: tag %q: waiting for the loss floor: %w", tag, ctx.Err())
			}
		}
		return segment.Range{}, fmt.Errorf("redisstore: tag %q: %w", tag, err)
	}
}

// scriptError is the text of an error a script raised, without the "ERR "
// Redis may put before it.
func scriptError(err error) string {
	return strings.TrimPrefix(err.Error(), "ERR ")
}

func (s *Store) ranged(tag string, res []string) (segment.Range, error) {
	if len(res) != 3 {
		return segment.Range{}, fmt.Errorf("redisstore: tag %q: script answered %q", tag, res)
	}
	var v [3]int64
	for i, x := range res {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return segment.Range{}, fmt.Errorf("redisstore: tag %q: script answered %q", tag, res)
		}
		v[i] = n
	}
	s.learn(tag, v[0], v[2])
	return segment.RangeAt(v[0], v[1], v[2]), nil
}

// learn records the highest max_id seen of a tag, the floor a loss of the
// tag's hash is recreated above.
func (s *Store) learn(tag string, maxID, step int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.known[tag]
	if maxID > k.maxID {
		k.maxID = maxID
	}
	if step > 0 {
		k.step = step
	}
	s.known[tag] = k
}

// Tags lists the tags, sorted.
func (s *Store) Tags(ctx context.Context) ([]segment.TagInfo, error) {
	names, err := s.rdb.SMembers(ctx, s.tagsKey).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: listing tags: %w", err)
	}
	slices.Sort(names)
	cmds := make([]*redis.SliceCmd, len(names))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.HMGet(ctx, s.key(n), "max_id", "step", "description", "updated")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisstore: listing tags: %w", err)
	}
	out := make([]segment.TagInfo, 0, len(names))
	for i, n := range names {
		v := cmds[i].Val()
		if len(v) != 4 || v[0] == nil {
			continue // listed but its hash is gone
		}
		t := segment.TagInfo{Tag: n}
		t.MaxID, _ = strconv.ParseInt(str(v[0]), 10, 64)
		t.Step, _ = strconv.ParseInt(str(v[1]), 10, 64)
		t.Description = str(v[2])
		if ms, err := strconv.ParseInt(str(v[3]), 10, 64); err == nil {
			t.Updated = time.UnixMilli(ms)
		}
		s.learn(n, t.MaxID, t.Step)
		out = append(out, t)
	}
	return out, nil
}

func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// Create adds a tag; segment.ErrTagExists if present. With the loss floor
// on, the start must lie below the line (package doc).
func (s *Store) Create(ctx context.Context, t segment.TagInfo) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if t.MaxID+t.Step > Limit {
		return fmt.Errorf("%w: MaxID %d + Step %d above %d", segment.ErrConfig, t.MaxID, t.Step, int64(Limit))
	}
	err := createScript.Run(ctx, s.rdb, []string{s.key(t.Tag), s.tagsKey},
		b2s(s.floor), t.MaxID, t.Step, t.Description, t.Tag, int64(Ahead)).Err()
	if err == nil {
		s.learn(t.Tag, t.MaxID, t.Step)
		return nil
	}
	msg := scriptError(err)
	switch {
	case strings.HasPrefix(msg, "VESTA_EXISTS"):
		return fmt.Errorf("redisstore: tag %q: %w", t.Tag, segment.ErrTagExists)
	case strings.HasPrefix(msg, "VESTA_AHEAD "):
		return fmt.Errorf("%w: MaxID %d: with the loss floor on, a start must lie below %s + %d",
			segment.ErrConfig, t.MaxID, strings.TrimPrefix(msg, "VESTA_AHEAD "), int64(Ahead))
	}
	return fmt.Errorf("redisstore: creating tag %q: %w", t.Tag, err)
}

// CheckDurability reports whether the server keeps acknowledged writes
// across a crash: nil with appendonly yes and appendfsync always, else an
// error wrapping ErrNotDurable (or the CONFIG error, e.g. on a managed
// Redis that hides CONFIG).
func (s *Store) CheckDurability(ctx context.Context) error {
	v, err := s.rdb.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return fmt.Errorf("redisstore: CONFIG GET: %w", err)
	}
	if v["appendonly"] != "yes" || v["appendfsync"] != "always" {
		return fmt.Errorf("%w: appendonly %q, appendfsync %q (want yes, always)", ErrNotDurable, v["appendonly"], v["appendfsync"])
	}
	return nil
}

// Close closes the client if Open made it. Idempotent.
func (s *Store) Close() error {
	s.closeMu.Do(func() {
		if s.own {
			s.closeErr = s.rdb.Close()
		}
	})
	return s.closeErr
}
