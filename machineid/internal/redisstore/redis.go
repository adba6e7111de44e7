package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// identityLua reads the identity of the Redis instance running a script:
// INFO's run_id (new at every start, so a restart from old data shows) and
// master_replid (new when a replica is promoted, so a failover to a replica
// that lacks the latest writes shows).
const identityLua = `
local srv = redis.call('INFO', 'server')
local rep = redis.call('INFO', 'replication')
local run_id = string.match(srv, 'run_id:(%w+)') or ''
local replid = string.match(rep, 'master_replid:(%w+)') or ''
local ident = run_id .. '/' .. replid
`

// holderLua starts a script that writes only for the holder: it returns 0
// unless the token ARGV[1] holds the lease KEYS[1].
const holderLua = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
`

// The scripts compare the lease's token before they touch anything, so a
// process that lost its lease can neither extend it, delete the next
// holder's, nor move the mark of an ID it no longer holds.
var (
	// KEYS: lease, released, instance, store, mark. ARGV: token, ttl ms,
	// the machine ID. Claims the lease with SET NX PX and, atomically with
	// it, takes (reads and deletes) the clean-release record, so it serves
	// one claim only, and notes in the store hash that the ID was claimed
	// on this instance. Returns {0} when the lease is taken, else {1,
	// final_ms, run_id, replid (of the record, "" when none), run_id,
	// replid (of this instance), the identity that last wrote the mark,
	// since_ms of the instance, 1 when keys may be evicted (maxmemory with
	// an allkeys-* policy), 1 when the ID was claimed on this instance
	// before, 1 when the mark exists}.
	claimScript = redis.NewScript(`
local mem = redis.call('INFO', 'memory')
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0}
end
local rec = {false, false, false}
if redis.call('TYPE', KEYS[2]).ok == 'hash' then
  rec = redis.call('HMGET', KEYS[2], 'final_ms', 'run_id', 'replid')
end
redis.call('DEL', KEYS[2])
` + identityLua + `
local inst = redis.call('GET', KEYS[3]) or ''
local st = {false, false, false}
if redis.call('TYPE', KEYS[4]).ok == 'hash' then
  st = redis.call('HMGET', KEYS[4], 'run_id', 'replid', 'since_ms')
end
local since = st[3]
local before = 0
if st[1] ~= run_id or st[2] ~= replid or not since then
  local t = redis.call('TIME')
  since = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
  redis.call('DEL', KEYS[4])
  redis.call('HSET', KEYS[4], 'run_id', run_id, 'replid', replid, 'since_ms', since)
elseif redis.call('HEXISTS', KEYS[4], 'id:' .. ARGV[3]) == 1 then
  before = 1
end
redis.call('HSET', KEYS[4], 'id:' .. ARGV[3], 1)
local marked = redis.call('EXISTS', KEYS[5])
local maxmem = string.match(mem, 'maxmemory:(%d+)') or '0'
local policy = string.match(mem, 'maxmemory_policy:([%w-]+)') or ''
local evicts = 0
if maxmem ~= '0' and string.sub(policy, 1, 7) == 'allkeys' then
  evicts = 1
end
return {1, rec[1] or '', rec[2] or '', rec[3] or '', run_id, replid, inst, since, evicts, before, marked}`)

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
	releaseCleanScript = redis.NewScript(holderLua + `redis.call('DEL', KEYS[1])
` + identityLua + `
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'final_ms', ARGV[2], 'token', ARGV[1], 'run_id', run_id, 'replid', replid)
return 1`)

	// KEYS: lease, mark, shape, instance. ARGV: token, mark ms, shape JSON
	// ("" keeps it). Raises the mark to ARGV[2] (a lower value leaves it: a
	// late write never lowers a mark), records the shape and the identity
	// of this instance. Returns 1 when written or already as high, 0 when
	// not the holder.
	markScript = redis.NewScript(holderLua + `local cur = redis.call('GET', KEYS[2])
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
` + identityLua + `
redis.call('SET', KEYS[4], ident)
return 1`)

	// KEYS: lease, member. ARGV: token, record. Writes the member record
	// with the lease's remaining TTL, so that both expire together, if the
	// token still holds the lease. Returns 1 when written.
	memberScript = redis.NewScript(holderLua + `local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
return 1`)

	// KEYS: lease, member. ARGV: token. Deletes the member record if the
	// token still holds the lease (else it is the next holder's).
	dropMemberScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[2])
end
return 0`)

	// KEYS: fleet. ARGV: this host's record. Records it when there is none;
	// returns the record found, or false when it recorded this one.
	fleetScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  return cur
end
redis.call('SET', KEYS[1], ARGV[1])
return false`)
)

// tlsConfig is rc's TLS, which Check judged: nil or a *tls.Config.
func tlsConfig(rc leasestore.RedisSettings) *tls.Config {
	c, _ := tlsOf("Redis.TLS", rc.TLS)
	return c
}

// newClient dials one Redis (a single server, or a master a Sentinel
// named); go-redis's own retries are off because the lease retries on its
// own schedule. Maintenance notifications (a managed Redis moving the
// client to another endpoint) are off too: a hold belongs to the instance
// it was claimed on, and without them NewClient neither resolves the
// address nor starts goroutines.
func newClient(rc leasestore.RedisSettings, addr string) *redis.Client {
	timeout := leasestore.CommandTimeout(rc.LeaseTTL)
	return redis.NewClient(&redis.Options{
		Addr: addr, Username: rc.Username, Password: rc.Password,
		DB: rc.DB, TLSConfig: tlsConfig(rc), ClientName: "vesta-machineid",
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, DialerRetries: 1,
		MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 4,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// redisErr says what failed. Errors of the connection (and Redis replies
// that mean "try later") wrap leasestore.ErrUnavailable; other replies (a wrong
// password, a script error) are configuration problems and do not.
func redisErr(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	var reply redis.Error
	if errors.As(err, &reply) && !redis.IsLoadingError(err) && !redis.IsMasterDownError(err) &&
		!redis.IsClusterDownError(err) && !redis.IsTryAgainError(err) && !redis.IsReadOnlyError(err) {
		return fmt.Errorf("machineid: %s: %w", what, err)
	}
	return fmt.Errorf("%w: %s: %w", leasestore.ErrUnavailable, what, err)
}

// conn runs the lease's scripts on one Redis. With MinReplicas above zero
// each write is followed, on the same connection (one pipeline), by WAIT: a
// write that fewer replicas than that acknowledged in time counts as
// failed, with leasestore.ErrReplicas.
type conn struct {
	rc       *redis.Client
	addr     string
	replicas int
	waitFor  time.Duration
}

func newConn(rc *redis.Client, addr string, cfg leasestore.RedisSettings) *conn {
	// A fifth of the read timeout (newClient): WAIT's reply, late by its
	// whole timeout when replicas lag, must still come back in time.
	return &conn{rc: rc, addr: addr, replicas: cfg.MinReplicas, waitFor: min(max(cfg.LeaseTTL/20, 10*time.Millisecond), 600*time.Millisecond)}
}

// run runs s; the result is returned even when WAIT fell short.
func (c *conn) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	if c.replicas == 0 {
		return s.Run(ctx, c.rc, keys, args...).Result()
	}
	pipe := c.rc.Pipeline()
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
			leasestore.ErrReplicas, acked, c.replicas, c.waitFor)
	}
	return res.Val(), nil
}

// Store keeps leases in one Redis, or in the master a majority of Redis
// Sentinels names (sentinel.go). Redis Cluster is refused: a master cut
// off in a minority keeps accepting writes while a replica is promoted on
// the majority side, and nothing lets a holder tell.
type Store struct {
	base   leasestore.Base
	rc     leasestore.RedisSettings
	hook   Hook
	single *conn          // without Sentinel
	group  *sentinelGroup // with Sentinel

	mu      sync.Mutex
	masters map[string]*conn // by address, with Sentinel
	skewed  bool             // the last renewal found the clock beyond MaxClockSkew
}

// redisHold is a Redis lease's own part of a hold.
type redisHold struct {
	token string
	conn  *conn // the Redis the claim went to; every write of the hold goes there
	view  view  // with Sentinel: the master and config epoch that confirmed the claim
}

// Hook, when not nil, gives the go-redis hook to add to each client the
// store makes: of the Redis at addr (sentinel < 0), or of the Sentinel
// b.Redis.Addrs[sentinel]. The lease simulation's network is one; the
// product passes none.
type Hook func(addr string, sentinel int) redis.Hook

// Provider is the redis provider's store (machineid/redislease registers
// it).
var Provider = leasestore.Provider{
	Open:  func(_ context.Context, b leasestore.Base) (leasestore.Store, error) { return New(b, nil), nil },
	Check: func(b leasestore.Base) error { _, err := tlsOf("Redis.TLS", b.Redis.TLS); return err },
}

// tlsOf is a TLS setting as the clients take it: nil, or a *tls.Config.
func tlsOf(field string, v any) (*tls.Config, error) {
	c, ok := v.(*tls.Config) // a nil *tls.Config is plain TCP too
	if v != nil && !ok {
		return nil, fmt.Errorf("%w: %s: a %T; want a *tls.Config, or nil for plain TCP", leasestore.ErrConfig, field, v)
	}
	return c, nil
}

// New is the store of b.Redis, its clients made with hook.
func New(b leasestore.Base, hook Hook) *Store {
	s := &Store{base: b, rc: b.Redis, hook: hook, masters: map[string]*conn{}}
	if s.rc.MasterName != "" {
		s.group = newSentinelGroup(s.rc, b.Clock, hook)
	} else {
		s.single = newConn(s.client(s.rc.Addrs[0]), s.rc.Addrs[0], s.rc)
	}
	return s
}

// client is newClient with the store's hook.
func (s *Store) client(addr string) *redis.Client {
	c := newClient(s.rc, addr)
	if s.hook != nil {
		c.AddHook(s.hook(addr, -1))
	}
	return c
}

// Where names the Redis for messages.
func (s *Store) Where() string {
	if s.rc.MasterName != "" {
		return fmt.Sprintf("Redis master %q via Sentinel %v", s.rc.MasterName, s.rc.Addrs)
	}
	return fmt.Sprintf("Redis %v", s.rc.Addrs)
}

// master is the Redis that claims go to: the single one, or the master a
// majority of the Sentinels names, with that view.
func (s *Store) master(ctx context.Context) (*conn, view, error) {
	if s.group == nil {
		return s.single, view{}, nil
	}
	v, err := s.group.view(ctx)
	if err != nil {
		return nil, view{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.masters[v.addr]
	if !ok {
		c = newConn(s.client(v.addr), v.addr, s.rc)
		s.masters[v.addr] = c
	}
	return c, v, nil
}

// checkServer refuses a Redis Cluster node, then compares the local clock
// with Redis's TIME (Leaf's start-up check). The round trip's half is
// allowed on top of MaxClockSkew.
func (s *Store) checkServer(ctx context.Context, c *conn) error {
	info, err := c.rc.Info(ctx, "cluster").Result()
	if err != nil {
		return redisErr(err, "%s: INFO cluster", s.Where())
	}
	if strings.Contains(info, "cluster_enabled:1") {
		return fmt.Errorf("%w: Redis.Addrs: %s is a Redis Cluster node: a Cluster master cut off in a minority keeps accepting writes while a replica is promoted on the majority side, which can split a machine-ID lease; lease from a single Redis (AOF on), from Redis Sentinel (Redis.MasterName) or from etcd",
			leasestore.ErrConfig, c.addr)
	}
	t0 := s.base.Clock.Now()
	rt, err := c.rc.Time(ctx).Result()
	t1 := s.base.Clock.Now()
	if err != nil {
		return redisErr(err, "%s: TIME", s.Where())
	}
	return s.judgeSkew(t0, t1, rt)
}

// judgeSkew compares the local clock between t0 and t1 with Redis's TIME
// rt read in between, records the skew and says whether it is beyond
// MaxClockSkew (plus half the round trip).
func (s *Store) judgeSkew(t0, t1, rt time.Time) error {
	skew, err := JudgeClock(t0, t1, rt, s.rc.MaxClockSkew, "Redis TIME")
	s.base.ObserveSkew(skew)
	return err
}

// JudgeClock compares the local clock, read at t0 and t1, with another
// clock's reading rt taken in between, and returns the offset seen from
// the middle of the round trip. rt was read somewhere between t0 and t1,
// so the clocks may be as far apart as that offset plus half the round
// trip: that sum must be within maxSkew (0: no check), else the error
// wraps leasestore.ErrClockSkew. A slow round trip proves less, and counts as a skew.
func JudgeClock(t0, t1, rt time.Time, maxSkew time.Duration, what string) (time.Duration, error) {
	rtt := t1.Sub(t0)
	local := t0.Add(rtt / 2)
	skew := local.Sub(rt)
	if maxSkew > 0 && skew.Abs()+rtt/2 > maxSkew {
		return skew, fmt.Errorf("%w: the local clock reads %s and %s %s, %s apart, read over a %s round trip (max_clock_skew %s counts both); fix the clock (NTP) of this host or of the other, or the network",
			leasestore.ErrClockSkew, local.UTC().Format(time.RFC3339Nano), what, rt.UTC().Format(time.RFC3339Nano), skew.Round(time.Millisecond), rtt.Round(time.Millisecond), maxSkew)
	}
	return skew, nil
}

// claim tries the IDs in order on the master, with SET NX PX. With
// Sentinel the claim counts only if, after its reply, a majority of the
// Sentinels still names the master it went to at the same config epoch
// (sentinel.go says why that closes a split brain).
func (s *Store) Claim(ctx context.Context, ids []core.MachineID) (*leasestore.Hold, time.Time, error) {
	c, v, err := s.master(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	if err := s.checkServer(ctx, c); err != nil {
		return nil, time.Time{}, err
	}
	token := leasestore.NewToken()
	for _, id := range ids {
		h, sent, err := s.try(ctx, c, v, id, token)
		if err != nil {
			return nil, time.Time{}, err
		}
		if h == nil {
			continue // taken
		}
		if s.group != nil {
			if err := s.group.confirm(ctx, v); err != nil {
				s.dropClaim(ctx, h)
				return nil, time.Time{}, fmt.Errorf("%w: claiming %s: %w", leasestore.ErrUnavailable, h.Key, err)
			}
			// The quarantine runs from the claim's reply, or from when
			// claims first saw this master: both come after a majority
			// named it at this epoch, so after every renewal a holder at an
			// older epoch counted (sentinel.go).
		}
		return h, sent, nil
	}
	return nil, time.Time{}, nil
}

// dropClaim gives back a claim that does not count.
func (s *Store) dropClaim(ctx context.Context, h *leasestore.Hold) {
	rh := h.Of.(*redisHold)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leasestore.CommandTimeout(s.rc.LeaseTTL))
	defer cancel()
	if _, err := rh.conn.run(ctx, releaseScript, []string{h.Key}, rh.token); err != nil && !errors.Is(err, leasestore.ErrReplicas) {
		s.base.Log.Warn("machineid: releasing a claim that does not count failed; it expires", "key", h.Key, "ttl", s.rc.LeaseTTL, "err", err)
	}
}

// try claims id on c.
func (s *Store) try(ctx context.Context, c *conn, v view, id core.MachineID, token string) (*leasestore.Hold, time.Time, error) {
	prefix := s.rc.KeyPrefix
	leaseKey, markKey := Keys(prefix, id)
	relKey, instKey := ReleasedKey(prefix, id), InstanceKey(prefix, id)
	sent := s.base.Clock.Now()
	res, err := c.run(ctx, claimScript, []string{leaseKey, relKey, instKey, StoreKey(prefix), markKey}, token, s.rc.LeaseTTL.Milliseconds(), int(id))
	// The quarantine runs from the reply: any renewal of an earlier
	// holder reached Redis before this claim did.
	claimed := s.base.Clock.Now()
	if err != nil && !errors.Is(err, leasestore.ErrReplicas) {
		return nil, sent, redisErr(err, "%s: claiming %s", s.Where(), leaseKey)
	}
	a, ok := res.([]any)
	if !ok || len(a) == 0 {
		return nil, sent, fmt.Errorf("machineid: %s: claiming %s: unexpected reply %v", s.Where(), leaseKey, res)
	}
	if got, _ := a[0].(int64); got == 0 {
		return nil, sent, nil // taken
	}
	h := &leasestore.Hold{ID: id, Key: leaseKey, Of: &redisHold{token: token, conn: c, view: v}}
	if err != nil { // leasestore.ErrReplicas: the claim may not survive a failover
		s.dropClaim(ctx, h)
		return nil, sent, fmt.Errorf("%w: %s: claiming %s: %w", leasestore.ErrUnavailable, s.Where(), leaseKey, err)
	}
	str := func(i int) string {
		if i < len(a) {
			v, _ := a[i].(string)
			return v
		}
		return ""
	}
	runID, replid := str(4), str(5)
	// Every holder whose lease Redis lost lost it before the reply, read
	// on this clock: Redis's clock (or, under Sentinel, the clock of a
	// Sentinel both majorities share) is at most MaxClockSkew behind it.
	skew := s.rc.MaxClockSkew
	q := leasestore.Quarantine{From: claimed.Add(skew), Reach: s.base.Reach}
	if s.base.Plant.OwnTiming {
		q.Reach = s.rc.LeaseTTL + skew
	}
	flag := func(i int) bool {
		if i >= len(a) {
			return false
		}
		n, _ := a[i].(int64)
		return n == 1
	}
	evicts, before, marked := flag(8), flag(9), flag(10)
	if ms, perr := strconv.ParseInt(str(1), 10, 64); perr == nil && ms > 0 {
		if str(2) != "" && str(3) != "" && str(2) == runID && str(3) == replid {
			q.Exact = time.UnixMilli(ms).UTC()
		} else {
			s.base.Log.Warn("machineid: ignoring a release record written on another Redis instance (restarted or failed over since)",
				"machine", id, "record_run_id", str(2), "record_replid", str(3), "run_id", runID, "replid", replid)
		}
	}
	switch {
	case evicts:
		s.base.Log.Warn("machineid: Redis may evict keys (maxmemory with an allkeys-* policy): marks are not trusted and every claim waits out the quarantine; set maxmemory-policy noeviction on the lease database",
			"machine", id, "redis", c.addr)
	case marked && runID != "" && str(6) == runID+"/"+replid:
		// The mark was written by this very instance: nothing of the ID
		// was lost since, so it lies above all an earlier holder issues.
		q.Trusted = true
	case !before:
		// Never claimed on this instance: whatever it lost, it lost
		// before claims first saw it, at since_ms on this Redis's clock.
		// A single Redis's clock is the one its holders were checked
		// against; under Sentinel they were checked against the
		// Sentinels, each within MaxClockSkew of this host, which is
		// within MaxClockSkew of this master.
		if ms, perr := strconv.ParseInt(str(7), 10, 64); perr == nil && ms > 0 {
			since := time.UnixMilli(ms)
			if s.group != nil {
				since = since.Add(2 * skew)
			}
			q.From = leasestore.Earliest(q.From, since)
		}
	}
	// Otherwise the ID was held on this instance and its mark is gone or
	// not this instance's: its keys were deleted by hand, or evicted; the
	// quarantine runs from the claim.
	ms := &redisMarks{conn: c, leaseKey: leaseKey, markKey: markKey, shapeKey: ShapeKey(prefix, id), instKey: instKey, token: token}
	h.Guard = leasestore.NewGuard(ms, id, q)
	return h, sent, nil
}

// renew extends h with the compare-and-extend script, re-checks the clock
// against Redis's TIME and, with Sentinel, has a majority confirm the
// hold's master and epoch.
func (s *Store) Renew(ctx context.Context, h *leasestore.Hold) (time.Time, error) {
	rh := h.Of.(*redisHold)
	sent := s.base.Clock.Now()
	res, err := rh.conn.run(ctx, renewScript, []string{h.Key}, rh.token, s.rc.LeaseTTL.Milliseconds())
	back := s.base.Clock.Now()
	if err != nil {
		if errors.Is(err, leasestore.ErrReplicas) {
			err = fmt.Errorf("%w: machine %d: renewing %s: %w", leasestore.ErrUnavailable, h.ID, h.Key, err)
		} else {
			err = redisErr(err, "%s: renewing %s on %s", s.Where(), h.Key, rh.conn.addr)
		}
		if s.group != nil {
			// The hold's master may be gone for good: once a majority of
			// the Sentinels names another, the hold is lost and the lease
			// claims again there, instead of waiting for a dead master.
			if cerr := s.group.confirm(ctx, rh.view); errors.Is(cerr, leasestore.ErrLeaseLost) {
				return sent, fmt.Errorf("machine %d: renewing %s: %w", h.ID, h.Key, cerr)
			}
		}
		return sent, err
	}
	n, err := renewReply(res)
	if err != nil {
		return sent, err
	}
	if n == 0 {
		return sent, fmt.Errorf("%w: machine %d: %s no longer holds this process's token (expired or taken over)", leasestore.ErrLeaseLost, h.ID, h.Key)
	}
	// The renewal re-checks the clock against Redis's TIME: the quarantine
	// of the next holder counts on it. A clock this far off counts as a
	// failed renewal (the key stays ours), so issuing stops at the
	// deadline until the clock is back within the bound.
	rt, _ := renewTime(res)
	skewErr := s.judgeSkew(sent, back, rt)
	s.mu.Lock()
	switch {
	case skewErr != nil && !s.skewed:
		s.base.Log.Error("machineid: the clock drifted beyond max_clock_skew; renewals count as failed until it is back", "machine", h.ID, "err", skewErr)
	case skewErr == nil && s.skewed:
		s.base.Log.Info("machineid: the clock is back within max_clock_skew", "machine", h.ID)
	}
	s.skewed = skewErr != nil
	s.mu.Unlock()
	if skewErr != nil {
		return sent, skewErr
	}
	if s.group != nil {
		if err := s.group.confirm(ctx, rh.view); err != nil {
			return sent, fmt.Errorf("machine %d: renewing %s: %w", h.ID, h.Key, err)
		}
	}
	return sent, nil
}

// release deletes h's key if it still holds h's token; with exact, it
// writes the release record, so that the next claim on this same instance
// starts from final without a quarantine.
func (s *Store) Release(ctx context.Context, h *leasestore.Hold, final time.Time, exact bool) error {
	rh := h.Of.(*redisHold)
	var res any
	var err error
	if exact {
		relKey := ReleasedKey(s.rc.KeyPrefix, h.ID)
		res, err = rh.conn.run(ctx, releaseCleanScript, []string{h.Key, relKey}, rh.token, final.UnixMilli())
	} else {
		res, err = rh.conn.run(ctx, releaseScript, []string{h.Key}, rh.token)
	}
	n, _ := res.(int64)
	switch {
	case err != nil && n != 0: // leasestore.ErrReplicas: a failover may lose the record (the next claim is then quarantined)
		return redisErr(err, "releasing %s", h.Key)
	case err != nil:
		return redisErr(err, "releasing %s (it expires within %s)", h.Key, s.rc.LeaseTTL)
	case n == 0:
		s.base.Log.Info("machineid: the lease was no longer ours at release", "key", h.Key)
	}
	return nil
}

// fleet records f under the key prefix, or compares it with the record.
func (s *Store) Fleet(ctx context.Context, f leasestore.Fleet) error {
	c, _, err := s.master(ctx)
	if err != nil {
		return err
	}
	key := FleetKey(s.rc.KeyPrefix)
	res, err := c.run(ctx, fleetScript, []string{key}, f.Encode())
	if errors.Is(err, redis.Nil) {
		return nil // recorded ours
	}
	if err != nil && !errors.Is(err, leasestore.ErrReplicas) {
		return redisErr(err, "%s: reading the fleet record %s", s.Where(), key)
	}
	raw, ok := res.(string)
	if !ok {
		return nil // recorded ours
	}
	return leasestore.JudgeFleet(f, raw, key, s.Where())
}

// putMember writes h's member record on the hold's Redis, without WAIT:
// it is information only, and a lost record is rewritten at the next
// renewal.
func (s *Store) PutMember(ctx context.Context, h *leasestore.Hold, rec string) error {
	rh := h.Of.(*redisHold)
	if err := memberScript.Run(ctx, rh.conn.rc, []string{h.Key, MemberKey(s.rc.KeyPrefix, h.ID)}, rh.token, rec).Err(); err != nil {
		return redisErr(err, "%s: writing the member record of machine %d", s.Where(), h.ID)
	}
	return nil
}

func (s *Store) DropMember(ctx context.Context, h *leasestore.Hold) error {
	rh := h.Of.(*redisHold)
	if err := dropMemberScript.Run(ctx, rh.conn.rc, []string{h.Key, MemberKey(s.rc.KeyPrefix, h.ID)}, rh.token).Err(); err != nil {
		return redisErr(err, "%s: deleting the member record of machine %d", s.Where(), h.ID)
	}
	return nil
}

// members reads the member key of every machine ID (the space is 1024
// IDs) in one pipeline of GETRANGE, which reads at most leasestore.MaxMemberBytes+1
// bytes of each, so a huge value costs no more than a small one.
func (s *Store) Members(ctx context.Context) ([]leasestore.RawMember, error) {
	c, _, err := s.master(ctx)
	if err != nil {
		return nil, err
	}
	pipe := c.rc.Pipeline()
	cmds := make([]*redis.StringCmd, int(core.MaxMachine)+1)
	for id := range cmds {
		cmds[id] = pipe.GetRange(ctx, MemberKey(s.rc.KeyPrefix, core.MachineID(id)), 0, leasestore.MaxMemberBytes)
	}
	_, err = pipe.Exec(ctx)
	var reply redis.Error
	if err != nil && !errors.As(err, &reply) { // a reply error is one key's (WRONGTYPE): skipped below
		return nil, redisErr(err, "%s: reading the member records", s.Where())
	}
	var out []leasestore.RawMember
	for id, cmd := range cmds {
		v, err := cmd.Result()
		key := MemberKey(s.rc.KeyPrefix, core.MachineID(id))
		switch {
		case err != nil:
			out = append(out, leasestore.RawMember{Key: key, ID: core.MachineID(id), Skip: leasestore.Clip(err.Error(), leasestore.MaxAddrBytes)})
		case v != "":
			out = append(out, leasestore.RawMember{Key: key, ID: core.MachineID(id), Value: v})
		}
	}
	return out, nil
}

func (s *Store) Prefix() string { return s.rc.KeyPrefix }

func (s *Store) Close() error {
	var errs []error
	if s.single != nil {
		errs = append(errs, s.single.rc.Close())
	}
	s.mu.Lock()
	for _, c := range s.masters {
		errs = append(errs, c.rc.Close())
	}
	s.mu.Unlock()
	if s.group != nil {
		errs = append(errs, s.group.close())
	}
	return errors.Join(errs...)
}

// redisMarks is the markStore of a Redis hold.
type redisMarks struct {
	conn                                 *conn
	leaseKey, markKey, shapeKey, instKey string
	token                                string
}

func (r *redisMarks) Names() (string, string) { return r.markKey, r.leaseKey }

func (r *redisMarks) Read(ctx context.Context) (int64, string, error) {
	vals, err := r.conn.rc.MGet(ctx, r.markKey, r.shapeKey).Result()
	if err != nil {
		return 0, "", redisErr(err, "loading the mark %s", r.markKey)
	}
	s, ok := vals[0].(string)
	if !ok {
		return 0, "", nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return 0, "", fmt.Errorf("machineid: the mark %s is damaged (%q); delete it only if no ID was issued with its machine ID in the last minutes", r.markKey, s)
	}
	sh, _ := vals[1].(string)
	return ms, sh, nil
}

func (r *redisMarks) Write(ctx context.Context, ms int64, shape string) (bool, error) {
	res, err := r.conn.run(ctx, markScript, []string{r.leaseKey, r.markKey, r.shapeKey, r.instKey}, r.token, ms, shape)
	if err != nil {
		return false, redisErr(err, "saving the mark %s", r.markKey)
	}
	n, _ := res.(int64)
	return n != 0, nil
}

// renewReply is the renew script's first element: 1 when extended.
func renewReply(res any) (int64, error) {
	a, ok := res.([]any)
	if !ok || len(a) < 3 {
		return 0, fmt.Errorf("machineid: renewal: unexpected reply %v", res)
	}
	n, _ := a[0].(int64)
	return n, nil
}

// renewTime is Redis's TIME as the renew script returned it.
func renewTime(res any) (time.Time, bool) {
	a, ok := res.([]any)
	if !ok || len(a) < 3 {
		return time.Time{}, false
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(a[1]), 10, 64)
	usec, err2 := strconv.ParseInt(fmt.Sprint(a[2]), 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, usec*1000), true
}

// Scripts are the lease's Lua scripts, by what they do: for the lease
// simulation's model of Redis, which answers each in Go, and its test
// against a real redis-server.
func Scripts() map[string]*redis.Script {
	return map[string]*redis.Script{
		"claim": claimScript, "renew": renewScript, "release": releaseScript, "release clean": releaseCleanScript,
		"mark": markScript, "member": memberScript, "drop member": dropMemberScript, "fleet": fleetScript,
		"put hold": putHoldScript, "read holds": readHoldsScript,
	}
}
