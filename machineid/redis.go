package machineid

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
)

// Keys returns the Redis keys of machine id under prefix: the lease (its
// value is the holder's token, with a TTL) and the time guard's mark (unix
// milliseconds, no TTL). Both carry the hash tag {prefix:machine:id}, so
// they share a Cluster slot and one script can touch them all (with
// ShapeKey and ReleasedKey).
func Keys(prefix string, id core.MachineID) (lease, mark string) {
	tag := keyTag(prefix, id)
	return tag + ":lease", tag + ":mark"
}

// ShapeKey is the key beside the mark that says what the mark's instants
// mean: JSON {"layout","type","epoch_ms","version"} of the generator that
// last wrote it. A mark without it (written by earlier versions) is read
// as the loading generator's own shape.
func ShapeKey(prefix string, id core.MachineID) string { return keyTag(prefix, id) + ":shape" }

// ReleasedKey is the clean-release record of machine id: a hash written by
// the release of a lease (final_ms: the exact end of what its holder
// issued; token; run_id and replid: the Redis instance it was written on)
// and deleted by the next claim, which trusts it only on that same
// instance.
func ReleasedKey(prefix string, id core.MachineID) string { return keyTag(prefix, id) + ":released" }

func keyTag(prefix string, id core.MachineID) string {
	return "{" + prefix + ":machine:" + strconv.Itoa(int(id)) + "}"
}

// identityLua reads the identity of the Redis instance running a script:
// INFO's run_id (new at every start, so a restart from old data shows) and
// master_replid (new when a replica is promoted, so a failover to a replica
// that lacks the latest writes shows).
const identityLua = `
local srv = redis.call('INFO', 'server')
local rep = redis.call('INFO', 'replication')
local run_id = string.match(srv, 'run_id:(%w+)') or ''
local replid = string.match(rep, 'master_replid:(%w+)') or ''
`

// The scripts compare the lease's token before they touch anything, so a
// process that lost its lease can neither extend it, delete the next
// holder's, nor move the mark of an ID it no longer holds.
var (
	// KEYS: lease, released. ARGV: token, ttl ms. Claims the lease with
	// SET NX PX and, atomically with it, takes (reads and deletes) the
	// clean-release record, so it serves one claim only. Returns {0} when
	// the lease is taken, else {1, final_ms, run_id, replid (of the
	// record, "" when none), run_id, replid (of this instance)}.
	claimScript = redis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0}
end
local rec = {false, false, false}
if redis.call('TYPE', KEYS[2]).ok == 'hash' then
  rec = redis.call('HMGET', KEYS[2], 'final_ms', 'run_id', 'replid')
end
redis.call('DEL', KEYS[2])
` + identityLua + `
return {1, rec[1] or '', rec[2] or '', rec[3] or '', run_id, replid}`)

	// KEYS: lease. ARGV: token, ttl ms. Returns {1 when extended else 0,
	// TIME seconds, TIME microseconds}: each renewal re-checks the clock.
	renewScript = redis.NewScript(`
local t = redis.call('TIME')
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return {redis.call('PEXPIRE', KEYS[1], ARGV[2]), t[1], t[2]}
end
return {0, t[1], t[2]}`)

	// KEYS: lease. ARGV: token. Returns 1 when deleted.
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

	// KEYS: lease, released. ARGV: token, final ms. The clean release:
	// deletes the lease and writes the release record with the identity of
	// this instance. Returns 1 when released.
	releaseCleanScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
` + identityLua + `
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'final_ms', ARGV[2], 'token', ARGV[1], 'run_id', run_id, 'replid', replid)
return 1`)

	// KEYS: lease, mark, shape. ARGV: token, mark ms, shape JSON ("" keeps
	// it). Raises the mark to ARGV[2] (a lower value leaves it: a late
	// write never lowers a mark) and records the shape. Returns 1 when
	// written or already as high, 0 when not the holder.
	markScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local cur = redis.call('GET', KEYS[2])
local n = nil
if cur then
  n = tonumber(cur)
  if not n then
    return redis.error_reply('damaged mark ' .. KEYS[2])
  end
end
if not n or n < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[3], ARGV[3])
end
return 1`)
)

// newClient dials Redis per the config. Timeouts follow the lease's TTL so
// that a dead Redis is noticed well before the deadline; go-redis's own
// retries are off because the lease retries on its own schedule.
func newClient(rc RedisConfig) (redis.UniversalClient, bool) {
	if rc.Client != nil {
		return rc.Client, false
	}
	timeout := min(max(rc.LeaseTTL/4, 50*time.Millisecond), 3*time.Second)
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: rc.Addrs, MasterName: rc.MasterName, Username: rc.Username, Password: rc.Password,
		DB: rc.DB, TLSConfig: rc.TLS, ClientName: "vesta-machineid",
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, DialerRetries: 1,
		MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 4,
	}), true
}

// redisErr says what failed. Errors of the connection (and Redis replies
// that mean "try later") wrap ErrUnavailable; other replies (a wrong
// password, a script error) are configuration problems and do not.
func redisErr(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	var reply redis.Error
	if errors.As(err, &reply) && !redis.IsLoadingError(err) && !redis.IsMasterDownError(err) &&
		!redis.IsClusterDownError(err) && !redis.IsTryAgainError(err) && !redis.IsReadOnlyError(err) {
		return fmt.Errorf("machineid: %s: %w", what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
}

// newToken is a lease's value: 128 random bits, then the host and the pid
// for operators reading Redis. A fresh token for every claim is what lets a
// successful renewal prove that nobody held the ID in between.
func newToken() string {
	host, _ := os.Hostname()
	return crand.Text() + "/" + host + "/" + strconv.Itoa(os.Getpid())
}

// conn runs the lease's scripts. With MinReplicas above zero each write is
// followed, on the same connection (one pipeline), by WAIT: a write that
// fewer replicas than that acknowledged in time counts as failed, with
// ErrReplicas.
type conn struct {
	rc       redis.UniversalClient
	replicas int
	waitFor  time.Duration
}

func newConn(rc redis.UniversalClient, cfg RedisConfig) *conn {
	// A fifth of the read timeout (newClient): WAIT's reply, late by its
	// whole timeout when replicas lag, must still come back in time.
	return &conn{rc: rc, replicas: cfg.MinReplicas, waitFor: min(max(cfg.LeaseTTL/20, 10*time.Millisecond), 600*time.Millisecond)}
}

// run runs s; the result is returned even when WAIT fell short.
func (c *conn) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	if c.replicas == 0 {
		return s.Run(ctx, c.rc, keys, args...).Result()
	}
	var node redis.Cmdable = c.rc
	if cc, ok := c.rc.(*redis.ClusterClient); ok {
		// WAIT has no key: send it to the node of the keys, on one
		// connection with the write.
		n, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, err
		}
		node = n
	}
	pipe := node.Pipeline()
	res := s.Eval(ctx, pipe, keys, args...)
	w := pipe.Do(ctx, "wait", c.replicas, c.waitFor.Milliseconds())
	_, err := pipe.Exec(ctx)
	if res.Err() != nil {
		return nil, res.Err()
	}
	if err != nil {
		return nil, err
	}
	acked, err := w.Int64()
	if err != nil {
		return nil, err
	}
	if acked < int64(c.replicas) {
		return res.Val(), fmt.Errorf("%w: %d of machine.redis.min_replicas %d replicas acknowledged the write within %s",
			ErrReplicas, acked, c.replicas, c.waitFor)
	}
	return res.Val(), nil
}

// hold is one claimed lease: an ID, its keys and the token in them.
type hold struct {
	id       core.MachineID
	token    string
	leaseKey string
	guard    *redisGuard
}

// checkSkew compares the local clock with Redis's TIME (Leaf's start-up
// check). The round trip's half is allowed on top of MaxClockSkew.
func (l *Lease) checkSkew(ctx context.Context) error {
	t0 := l.clock.Now()
	rt, err := l.rc.Time(ctx).Result()
	t1 := l.clock.Now()
	if err != nil {
		return redisErr(err, "%s: TIME", l.cfg.Redis.where())
	}
	return l.judgeSkew(t0, t1, rt)
}

// judgeSkew compares the local clock between t0 and t1 with Redis's TIME
// rt read in between, records the skew and says whether it is beyond
// MaxClockSkew (plus half the round trip).
func (l *Lease) judgeSkew(t0, t1, rt time.Time) error {
	rtt := t1.Sub(t0)
	local := t0.Add(rtt / 2)
	skew := local.Sub(rt)
	l.m.setSkew(skew)
	maxSkew := l.cfg.Redis.MaxClockSkew
	if maxSkew > 0 && skew.Abs() > maxSkew+rtt/2 {
		return fmt.Errorf("%w: the local clock reads %s and Redis TIME %s, %s apart (max_clock_skew %s); fix the clock (NTP) of this host or of Redis",
			ErrClockSkew, local.UTC().Format(time.RFC3339Nano), rt.UTC().Format(time.RFC3339Nano), skew.Round(time.Millisecond), maxSkew)
	}
	return nil
}

// claim takes a free ID of the range with SET NX PX: prefer first (when
// it lies in the range), then every ID from a random point, so that a fleet
// starting together spreads instead of fighting over the first ID. It
// returns the hold and when the claim was sent (the lease runs from then).
// The hold's guard knows whether the claim followed a clean release on
// this very Redis instance; if not, it is quarantined (see redisGuard).
func (l *Lease) claim(ctx context.Context, prefer core.MachineID, hasPrefer bool) (*hold, time.Time, error) {
	if err := l.checkSkew(ctx); err != nil {
		return nil, time.Time{}, err
	}
	token := newToken()
	n := int(l.rng.Count)
	start := rand.IntN(n)
	try := func(id core.MachineID) (*hold, time.Time, error) {
		leaseKey, markKey := Keys(l.cfg.Redis.KeyPrefix, id)
		relKey := ReleasedKey(l.cfg.Redis.KeyPrefix, id)
		sent := l.clock.Now()
		res, err := l.conn.run(ctx, claimScript, []string{leaseKey, relKey}, token, l.ttl.Milliseconds())
		// The quarantine runs from the reply: any renewal of an earlier
		// holder reached Redis before this claim did.
		claimed := l.clock.Now()
		if err != nil && !errors.Is(err, ErrReplicas) {
			return nil, sent, redisErr(err, "%s: claiming %s", l.cfg.Redis.where(), leaseKey)
		}
		a, ok := res.([]any)
		if !ok || len(a) == 0 {
			return nil, sent, fmt.Errorf("machineid: %s: claiming %s: unexpected reply %v", l.cfg.Redis.where(), leaseKey, res)
		}
		if got, _ := a[0].(int64); got == 0 {
			return nil, sent, nil // taken
		}
		if err != nil { // ErrReplicas: the claim may not survive a failover
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.period)
			_, rerr := l.conn.run(ctx, releaseScript, []string{leaseKey}, token)
			cancel()
			if rerr != nil && !errors.Is(rerr, ErrReplicas) {
				l.log.Warn("machineid: releasing a claim that too few replicas acknowledged failed; it expires", "key", leaseKey, "ttl", l.ttl, "err", rerr)
			}
			return nil, sent, fmt.Errorf("%w: %s: claiming %s: %w", ErrUnavailable, l.cfg.Redis.where(), leaseKey, err)
		}
		str := func(i int) string {
			if i < len(a) {
				v, _ := a[i].(string)
				return v
			}
			return ""
		}
		q := quarantine{claimed: claimed, ttl: l.ttl, skew: l.cfg.Redis.MaxClockSkew}
		if ms, perr := strconv.ParseInt(str(1), 10, 64); perr == nil && ms > 0 {
			q.record = time.UnixMilli(ms).UTC()
			q.clean = str(2) != "" && str(3) != "" && str(2) == str(4) && str(3) == str(5)
			if !q.clean {
				l.log.Warn("machineid: ignoring a release record written on another Redis instance (restarted or failed over since): quarantined",
					"machine", id, "record_run_id", str(2), "record_replid", str(3), "run_id", str(4), "replid", str(5))
			}
		}
		g := &redisGuard{conn: l.conn, machine: id, leaseKey: leaseKey, markKey: markKey,
			shapeKey: ShapeKey(l.cfg.Redis.KeyPrefix, id), token: token, notHolder: l.poke, q: q}
		return &hold{id: id, token: token, leaseKey: leaseKey, guard: g}, sent, nil
	}
	if hasPrefer && l.rng.Contains(prefer) {
		if h, sent, err := try(prefer); h != nil || err != nil {
			return h, sent, err
		}
	}
	for i := range n {
		id := l.rng.First + core.MachineID((start+i)%n)
		if hasPrefer && id == prefer {
			continue
		}
		if h, sent, err := try(id); h != nil || err != nil {
			return h, sent, err
		}
	}
	return nil, time.Time{}, fmt.Errorf("%w: all %d IDs of the %s range %s are leased (key prefix %q); wait for a holder to stop or widen the range",
		ErrRangeFull, n, l.mode, l.rng, l.cfg.Redis.KeyPrefix)
}

// quarantine is what a claim knows about the ID's previous holder.
type quarantine struct {
	claimed time.Time     // when the claim's reply came (lease clock)
	ttl     time.Duration // of every lease (one configuration per range)
	skew    time.Duration // MaxClockSkew
	record  time.Time     // the release record's final mark; zero: none
	clean   bool          // the record was written on this Redis instance
}

// floor is the instant the new holder's time fields must lie above.
//
// With a clean release record from this same instance, the previous holder
// stopped and wrote the exact end of what it issued: the floor is that.
// Otherwise a live holder may still exist whose key Redis lost: it fences
// at its next renewal (the key is gone or holds our token) and in any case
// by its deadline, less than ttl after its last renewal reached Redis,
// which was before our claim's reply. Its clock is within skew of Redis's
// TIME, ours too, so within 2*skew of ours; it issues at most borrow
// ahead of its clock. So its time fields stay below claimed + ttl +
// 2*skew + borrow, and the floor is 1ms above.
func (q quarantine) floor(borrow time.Duration) time.Time {
	if q.clean {
		return q.record
	}
	return q.claimed.Add(q.ttl + 2*q.skew + borrow + time.Millisecond)
}

// redisGuard is the time guard's store beside a lease: the mark of one
// machine ID, which only the holder of the lease's token may write. Its
// Load never returns less than the quarantine's floor.
type redisGuard struct {
	conn     *conn
	machine  core.MachineID
	leaseKey string
	markKey  string
	shapeKey string
	token    string
	q        quarantine
	// notHolder is called when a save finds the lease gone, so the lease
	// checks at once instead of at its next renewal.
	notHolder func()

	// borrow is the generator's MaxBorrow (from LoadFor or
	// WaitQuarantine), read by Status without waiting for a write.
	borrow atomic.Int64

	// mu is held across every write, so that the release reads the last
	// one that succeeded and none succeeds after it.
	mu       sync.Mutex
	shape    string    // JSON recorded with every write; "" before LoadFor
	floor    time.Time // what Load returned (the highest), zero before
	saved    time.Time // the last mark written, exact end included
	released bool      // no write succeeds any more
}

// shapeJSON is the stored form of a core.Shape.
type shapeJSON struct {
	Layout  string    `json:"layout"`
	Type    core.Type `json:"type"`
	EpochMs int64     `json:"epoch_ms"`
	Version uint8     `json:"version"`
}

func encodeShape(s core.Shape) string {
	b, _ := json.Marshal(shapeJSON{Layout: s.Layout.String(), Type: s.Type, EpochMs: s.EpochMs, Version: s.Version})
	return string(b)
}

func decodeShape(s string) (core.Shape, error) {
	var j shapeJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return core.Shape{}, err
	}
	l, err := core.ParseLayout(j.Layout)
	if err != nil {
		return core.Shape{}, err
	}
	if j.Type > core.MinGranularity || j.Version > 1 {
		return core.Shape{}, fmt.Errorf("type %d or version %d out of range", j.Type, j.Version)
	}
	return core.Shape{Layout: l, Type: j.Type, EpochMs: j.EpochMs, Version: j.Version}, nil
}

// Load reads the mark: the higher of the stored mark and the quarantine's
// floor. None is the zero Time, a damaged one an error (guessing could
// re-issue IDs).
func (g *redisGuard) Load(ctx context.Context) (time.Time, error) {
	m, err := g.LoadFor(ctx, core.GuardUse{Machine: g.machine, MaxBorrow: time.Duration(g.borrow.Load())})
	return m.At, err
}

// LoadFor is Load with the shape the mark was written with; every later
// write records use.Shape (unless use.Shape is the zero Shape of a plain
// Load).
func (g *redisGuard) LoadFor(ctx context.Context, use core.GuardUse) (core.Mark, error) {
	vals, err := g.conn.rc.MGet(ctx, g.markKey, g.shapeKey).Result()
	if err != nil {
		return core.Mark{}, redisErr(err, "loading the mark %s", g.markKey)
	}
	var m core.Mark
	if s, ok := vals[0].(string); ok {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms <= 0 {
			return core.Mark{}, fmt.Errorf("machineid: the mark %s is damaged (%q); delete it only if no ID was issued with machine ID %d in the last minutes",
				g.markKey, s, g.machine)
		}
		m.At = time.UnixMilli(ms).UTC()
		if sh, ok := vals[1].(string); ok {
			if m.Shape, err = decodeShape(sh); err != nil {
				return core.Mark{}, fmt.Errorf("machineid: the shape %s is damaged (%q: %v); delete it only if every generator of machine ID %d had the same layout, type, epoch and version",
					g.shapeKey, sh, err, g.machine)
			}
			m.HasShape = true
		}
	}
	g.borrow.Store(int64(use.MaxBorrow))
	g.mu.Lock()
	defer g.mu.Unlock()
	if use.Shape != (core.Shape{}) {
		g.shape = encodeShape(use.Shape)
	}
	if g.q.clean {
		// The previous holder's exact end on this same instance covers
		// every ID of this machine ID; the stored mark exceeds it only by
		// that holder's unused reservation.
		m.At = g.q.record
	}
	m.At = latest(m.At, g.q.floor(use.MaxBorrow))
	g.floor = latest(g.floor, m.At)
	return m, nil
}

// Save raises the mark to mark if the lease is still ours. A lower mark
// (a generator's exact end, below its last reservation) leaves the stored
// one and is kept for the release record.
func (g *redisGuard) Save(ctx context.Context, mark time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released {
		return fmt.Errorf("%w: %s was released; the mark %s was not written", ErrNotHolder, g.leaseKey, g.markKey)
	}
	ms := mark.UnixMilli()
	if mark.Sub(time.UnixMilli(ms)) > 0 {
		ms++ // round up: the mark must not fall below what was issued
	}
	res, err := g.conn.run(ctx, markScript, []string{g.leaseKey, g.markKey, g.shapeKey}, g.token, ms, g.shape)
	if err != nil {
		return redisErr(err, "saving the mark %s", g.markKey)
	}
	if n, _ := res.(int64); n == 0 {
		if g.notHolder != nil {
			g.notHolder()
		}
		return fmt.Errorf("%w: %s no longer holds this process's token; the mark %s was not written", ErrNotHolder, g.leaseKey, g.markKey)
	}
	g.saved = time.UnixMilli(ms).UTC()
	return nil
}

// setShape makes every later write record sh.
func (g *redisGuard) setShape(sh core.Shape) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shape = encodeShape(sh)
}

// raise writes mark unless the stored mark is higher (every write does).
func (g *redisGuard) raise(ctx context.Context, mark time.Time) error {
	return g.Save(ctx, mark)
}

// final stops every later write and returns the mark for the release
// record: everything issued under this hold lies below it. ok is false
// when no generator loaded the mark (nothing known to vouch for).
func (g *redisGuard) final() (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.released = true
	if g.floor.IsZero() {
		return time.Time{}, false
	}
	return latest(g.floor, g.saved), true
}

// quarantineFloor is the floor for a generator that borrows up to borrow,
// and whether it comes from a clean release.
func (g *redisGuard) quarantineFloor(borrow time.Duration) (time.Time, bool) {
	for {
		b := g.borrow.Load()
		if b >= int64(borrow) || g.borrow.CompareAndSwap(b, int64(borrow)) {
			return g.q.floor(time.Duration(max(b, int64(borrow)))), g.q.clean
		}
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
