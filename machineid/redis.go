package machineid

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
)

// Keys returns the Redis keys of machine id under prefix: the lease (its
// value is the holder's token, with a TTL) and the time guard's mark (unix
// milliseconds, no TTL). Both carry the hash tag {prefix:machine:id}, so
// they share a Cluster slot and one script can touch both.
func Keys(prefix string, id core.MachineID) (lease, mark string) {
	tag := "{" + prefix + ":machine:" + strconv.Itoa(int(id)) + "}"
	return tag + ":lease", tag + ":mark"
}

// The scripts compare the lease's token before they touch anything, so a
// process that lost its lease can neither extend it, delete the next
// holder's, nor move the mark of an ID it no longer holds.
var (
	// KEYS: lease. ARGV: token, ttl ms. Returns 1 when extended.
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

	// KEYS: lease. ARGV: token. Returns 1 when deleted.
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

	// KEYS: lease, mark. ARGV: token, mark ms, "set" or "max". Returns 1
	// when written (or, for "max", already as high), 0 when not the holder.
	markScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[3] == 'max' then
  local cur = redis.call('GET', KEYS[2])
  if cur then
    local n = tonumber(cur)
    if not n then
      return redis.error_reply('damaged mark ' .. KEYS[2])
    end
    if n >= tonumber(ARGV[2]) then
      return 1
    end
  end
end
redis.call('SET', KEYS[2], ARGV[2])
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
func (l *Lease) claim(ctx context.Context, prefer core.MachineID, hasPrefer bool) (*hold, time.Time, error) {
	if err := l.checkSkew(ctx); err != nil {
		return nil, time.Time{}, err
	}
	token := newToken()
	n := int(l.rng.Count)
	start := rand.IntN(n)
	try := func(id core.MachineID) (*hold, time.Time, error) {
		leaseKey, markKey := Keys(l.cfg.Redis.KeyPrefix, id)
		sent := l.clock.Now()
		err := l.rc.Do(ctx, "set", leaseKey, token, "px", l.ttl.Milliseconds(), "nx").Err()
		if errors.Is(err, redis.Nil) {
			return nil, sent, nil // taken
		}
		if err != nil {
			return nil, sent, redisErr(err, "%s: claiming %s", l.cfg.Redis.where(), leaseKey)
		}
		g := &redisGuard{rc: l.rc, machine: id, leaseKey: leaseKey, markKey: markKey, token: token, notHolder: l.poke}
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

// redisGuard is the time guard's store beside a lease: the mark of one
// machine ID, which only the holder of the lease's token may write.
type redisGuard struct {
	rc       redis.UniversalClient
	machine  core.MachineID
	leaseKey string
	markKey  string
	token    string
	// notHolder is called when a save finds the lease gone, so the lease
	// checks at once instead of at its next renewal.
	notHolder func()
}

// Load reads the mark; none is the zero Time, a damaged one an error
// (guessing could re-issue IDs).
func (g *redisGuard) Load(ctx context.Context) (time.Time, error) {
	s, err := g.rc.Get(ctx, g.markKey).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, redisErr(err, "loading the mark %s", g.markKey)
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, fmt.Errorf("machineid: the mark %s is damaged (%q); delete it only if no ID was issued with machine ID %d in the last minutes",
			g.markKey, s, g.machine)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// Save writes mark if the lease is still ours.
func (g *redisGuard) Save(ctx context.Context, mark time.Time) error {
	return g.write(ctx, mark, "set")
}

// raise writes mark unless the stored mark is higher.
func (g *redisGuard) raise(ctx context.Context, mark time.Time) error {
	return g.write(ctx, mark, "max")
}

func (g *redisGuard) write(ctx context.Context, mark time.Time, mode string) error {
	ms := mark.UnixMilli()
	if mark.Sub(time.UnixMilli(ms)) > 0 {
		ms++ // round up: the mark must not fall below what was issued
	}
	n, err := markScript.Run(ctx, g.rc, []string{g.leaseKey, g.markKey}, g.token, ms, mode).Int64()
	if err != nil {
		return redisErr(err, "saving the mark %s", g.markKey)
	}
	if n == 0 {
		if g.notHolder != nil {
			g.notHolder()
		}
		return fmt.Errorf("%w: %s no longer holds this process's token; the mark %s was not written", ErrNotHolder, g.leaseKey, g.markKey)
	}
	return nil
}
