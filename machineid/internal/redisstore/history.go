package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// The hold history in Redis, per machine ID: a hash HoldsKey (each hold's
// name to its entry's JSON) and a sorted set HoldsOrderKey (the same
// names, scored by each entry's last instant in unix milliseconds), which
// orders and bounds it. Both expire the history's MaxAge after the last
// write. Information only: nothing reads them for a safety decision.

var (
	// KEYS: lease, holds, order. ARGV: token, name, entry, last ms, keep,
	// cut ms, max age ms. Writes the entry if the token still holds the
	// lease, drops every other entry older than cut ms and the oldest
	// past keep, and sets both keys to expire after max age. Returns 1
	// when written.
	putHoldScript = redis.NewScript(holderLua + `redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
local function drop(n)
  redis.call('ZREM', KEYS[3], n)
  redis.call('HDEL', KEYS[2], n)
end
for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[6])) do
  if n ~= ARGV[2] then
    drop(n)
  end
end
local extra = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[5])
if extra > 0 then
  for _, n in ipairs(redis.call('ZRANGE', KEYS[3], 0, extra)) do
    if extra > 0 and n ~= ARGV[2] then
      drop(n)
      extra = extra - 1
    end
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[7])
redis.call('PEXPIRE', KEYS[3], ARGV[7])
return 1`)

	// KEYS: holds, order. ARGV: count, max bytes. Returns name, entry
	// pairs of the latest count names (false for an entry the hash
	// lacks), each entry cut to max bytes + 1, so that a huge one costs no
	// more than a small one on the wire.
	readHoldsScript = redis.NewScript(`
local out = {}
local cap = tonumber(ARGV[2]) + 1
for _, n in ipairs(redis.call('ZREVRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1)) do
  local v = redis.call('HGET', KEYS[1], n)
  if v and #v > cap then
    v = string.sub(v, 1, cap)
  end
  out[#out + 1] = n
  out[#out + 1] = v or false
end
return out`)
)

// HoldName is the token's first 16 characters: 80 random bits, unique per
// claim, and not the whole token, which proves the hold.
func (s *Store) HoldName(h *leasestore.Hold) (string, string) {
	rh := h.Of.(*redisHold)
	name := rh.token[:min(16, len(rh.token))]
	return name, "redis token " + name + "…"
}

// PutHold writes the entry on the hold's Redis, without WAIT: it is
// information only, and rewritten at the next renewal.
func (s *Store) PutHold(ctx context.Context, h *leasestore.Hold, name, rec string, lastMs int64, keep leasestore.Keep, cutMs int64) error {
	rh := h.Of.(*redisHold)
	p := s.rc.KeyPrefix
	err := putHoldScript.Run(ctx, rh.conn.rc, []string{h.Key, HoldsKey(p, h.ID), HoldsOrderKey(p, h.ID)},
		rh.token, name, rec, lastMs, keep.Holds, cutMs, keep.MaxAge.Milliseconds()).Err()
	if err != nil {
		return redisErr(err, "%s: writing the hold history of machine %d", s.Where(), h.ID)
	}
	return nil
}

// Holds reads machine id's history on the current master, in one script.
func (s *Store) Holds(ctx context.Context, id core.MachineID) ([]leasestore.RawHold, error) {
	c, _, err := s.master(ctx)
	if err != nil {
		return nil, err
	}
	p := s.rc.KeyPrefix
	res, err := readHoldsScript.Run(ctx, c.rc, []string{HoldsKey(p, id), HoldsOrderKey(p, id)}, leasestore.MaxHistoryHolds, leasestore.MaxHoldBytes).Result()
	if err != nil {
		return nil, redisErr(err, "%s: reading the hold history of machine %d (%s)", s.Where(), id, HoldsKey(p, id))
	}
	a, ok := res.([]any)
	if !ok || len(a)%2 != 0 {
		return nil, fmt.Errorf("machineid: %s: reading the hold history of machine %d: unexpected reply %T", s.Where(), id, res)
	}
	out := make([]leasestore.RawHold, 0, len(a)/2)
	for i := 0; i < len(a); i += 2 {
		name, _ := a[i].(string)
		key := HoldsKey(p, id) + "[" + strconv.Quote(leasestore.Clip(name, leasestore.MaxTextBytes)) + "]"
		v, ok := a[i+1].(string)
		if !ok {
			out = append(out, leasestore.RawHold{Key: key, Skip: "listed in " + HoldsOrderKey(p, id) + " but not in the hash"})
			continue
		}
		out = append(out, leasestore.RawHold{Key: key, Value: v})
	}
	return out, nil
}
