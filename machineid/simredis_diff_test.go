package machineid_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/machineid/internal/redisstore"
)

// TestRedisModelMatchesRedis keeps the simulation's Redis honest: random
// sequences of the lease's scripts and of the commands the lease and the
// simulation send, with the data losses the simulation plays (a restart
// empty, FLUSHALL) and expiries, run on the model and on a real
// redis-server, must get the same replies through go-redis and leave the
// same keyspace. Instance identities (run_id, replid) and TIME-derived
// values are compared by role, not by value.
func TestRedisModelMatchesRedis(t *testing.T) {
	srv := redistest.Start(t)
	real := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { real.Close() })
	ctx := context.Background()
	scripts := redisstore.Scripts()
	seed0 := uint64(time.Now().UnixNano())
	sequences, steps := 12, 120
	for i := range sequences {
		seed := seed0 + uint64(i)
		r := rand.New(rand.NewPCG(seed, 0xd1ff))
		if err := real.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		hook, restart := machineid.ModelRedis(time.Now, seed)
		model := redis.NewClient(&redis.Options{Addr: "10.99.0.1:6379"})
		model.AddHook(hook)
		names := &roleNames{}
		for step := range steps {
			op := diffOp(r, scripts)
			if op.restart {
				srv.Restart()
				restart()
				continue
			}
			if op.sleep > 0 {
				time.Sleep(op.sleep)
				continue
			}
			got := names.of(op.run(ctx, model), "model")
			want := names.of(op.run(ctx, real), "redis")
			if got != want {
				t.Fatalf("seed %d, step %d, %s:\n model: %s\n redis: %s", seed, step, op, got, want)
			}
			if op.short {
				// The two expire a few microseconds apart: let both pass
				// the short TTL before the next step looks.
				time.Sleep(2 * shortTTL)
			}
		}
		if got, want := names.of(keyspace(ctx, model), "model"), names.of(keyspace(ctx, real), "redis"); got != want {
			t.Fatalf("seed %d: the keyspaces differ:\n model: %s\n redis: %s", seed, got, want)
		}
		model.Close()
	}
}

// diffStep is one step of a sequence: a command, a restart or a pause.
type diffStep struct {
	name    string
	script  *redis.Script
	args    []any // the command, or KEYS then ARGV
	nkeys   int
	restart bool
	sleep   time.Duration
	short   bool // sets a key to expire after shortTTL
	// call sends a typed command, as the lease does (MGet, Info, Time).
	call func(context.Context, *redis.Client) (any, error)
}

// shortTTL is the TTL of keys that expire during a sequence.
const shortTTL = 20 * time.Millisecond

func (d diffStep) String() string { return fmt.Sprintf("%s %v", d.name, d.args) }

// run sends the step through c and returns its reply, shown.
func (d diffStep) run(ctx context.Context, c *redis.Client) string {
	var v any
	var err error
	if d.call != nil {
		v, err = d.call(ctx, c)
		if t, ok := v.(time.Time); ok && err == nil {
			if time.Since(t).Abs() < time.Second {
				return "TIME now"
			}
			return "TIME " + t.String()
		}
	} else if d.script != nil {
		keys := make([]string, d.nkeys)
		for i := range keys {
			keys[i] = d.args[i].(string)
		}
		v, err = d.script.Run(ctx, c, keys, d.args[d.nkeys:]...).Result()
	} else {
		v, err = c.Do(ctx, d.args...).Result()
	}
	if d.name == "pttl" && err == nil {
		if n, _ := v.(int64); n > 0 {
			return "a TTL left" // the milliseconds left differ by when each was asked
		}
	}
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return "nil"
		}
		var reply redis.Error
		if !errors.As(err, &reply) {
			return "transport error: " + err.Error()
		}
		// The model answers errors by kind, not word for word.
		return "error " + strings.Fields(err.Error())[0]
	}
	return fmt.Sprintf("%#v", v)
}

// diffOp draws a step over two machine IDs and two tokens, so that
// claims, renewals, marks and releases meet each other's keys.
func diffOp(r *rand.Rand, scripts map[string]*redis.Script) diffStep {
	pick := func(vs ...any) any { return vs[r.IntN(len(vs))] }
	id := r.IntN(2) + 1
	prefix := "sim"
	n := core.MachineID(id)
	lease, mark := redisstore.Keys(prefix, n)
	rel, inst := redisstore.ReleasedKey(prefix, n), redisstore.InstanceKey(prefix, n)
	shape, member := redisstore.ShapeKey(prefix, n), redisstore.MemberKey(prefix, n)
	token := pick("tok-a", "tok-b")
	ttl := pick(int64(60000), int64(60000), shortTTL.Milliseconds())
	short := ttl == shortTTL.Milliseconds()
	ms := int64(1_790_000_000_000) + r.Int64N(5)
	switch r.IntN(20) {
	case 0, 1, 2:
		return diffStep{name: "claim", short: short, script: scripts["claim"], nkeys: 5, args: []any{lease, rel, inst, redisstore.StoreKey(prefix), mark, token, ttl, id}}
	case 3, 4:
		return diffStep{name: "renew", short: short, script: scripts["renew"], nkeys: 1, args: []any{lease, token, ttl}}
	case 5:
		return diffStep{name: "release", script: scripts["release"], nkeys: 1, args: []any{lease, token}}
	case 6:
		return diffStep{name: "release clean", script: scripts["release clean"], nkeys: 2, args: []any{lease, rel, token, ms}}
	case 7, 8:
		return diffStep{name: "mark", script: scripts["mark"], nkeys: 4, args: []any{lease, mark, shape, inst, token, ms, pick("", `{"layout":"sorted"}`)}}
	case 9:
		return diffStep{name: "member", script: scripts["member"], nkeys: 2, args: []any{lease, member, token, "record"}}
	case 10:
		return diffStep{name: "drop member", script: scripts["drop member"], nkeys: 2, args: []any{lease, member, token}}
	case 11:
		return diffStep{name: "fleet", script: scripts["fleet"], nkeys: 1, args: []any{redisstore.FleetKey(prefix), pick(`{"layout":"sorted"}`, `{"layout":"vesta"}`)}}
	case 12:
		switch r.IntN(3) {
		case 0:
			return diffStep{name: "MGet", args: []any{mark, shape}, call: func(ctx context.Context, c *redis.Client) (any, error) {
				return c.MGet(ctx, mark, shape).Result()
			}}
		case 1:
			return diffStep{name: "Info cluster", call: func(ctx context.Context, c *redis.Client) (any, error) { return c.Info(ctx, "cluster").Result() }}
		}
		return diffStep{name: "Time", call: func(ctx context.Context, c *redis.Client) (any, error) { return c.Time(ctx).Result() }}
	case 13:
		return diffStep{name: "get", args: []any{"get", pick(lease, mark, inst, redisstore.FleetKey(prefix))}}
	case 14:
		return diffStep{name: "hgetall", args: []any{"hgetall", pick(rel, redisstore.StoreKey(prefix))}}
	case 15:
		return diffStep{name: "del", args: []any{"del", pick(lease, mark, inst, redisstore.StoreKey(prefix))}}
	case 16:
		return diffStep{name: "flushall", args: []any{"flushall"}}
	case 17:
		if r.IntN(4) == 0 {
			return diffStep{restart: true, name: "restart"}
		}
		return diffStep{name: "flushall", args: []any{"flushall"}}
	case 18:
		return diffStep{sleep: 2 * shortTTL, name: "sleep"}
	}
	return diffStep{name: "pttl", args: []any{"pttl", pick(lease, member, mark)}}
}

// keyspace shows every key with its type, value and whether it expires.
func keyspace(ctx context.Context, c *redis.Client) string {
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		return "KEYS: " + err.Error()
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		typ, _ := c.Type(ctx, k).Result()
		ttl, _ := c.PTTL(ctx, k).Result()
		var v any
		switch typ {
		case "hash":
			v, _ = c.HGetAll(ctx, k).Result()
		default:
			v, _ = c.Get(ctx, k).Result()
		}
		fmt.Fprintf(&b, "%s %s %v expires=%t; ", k, typ, v, ttl > 0)
	}
	return b.String()
}

// roleNames replaces what differs by nature between the model and the
// server with its role: each side's instance identities by order of first
// appearance, instants near now (TIME and since_ms), and TTLs left.
type roleNames struct {
	seen map[string]map[string]string
}

var (
	hex40  = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	nowMs  = regexp.MustCompile(`\b1[7-9]\d{11}\b`)
	nowSec = regexp.MustCompile(`"1[7-9]\d{8}"`)
	usec   = regexp.MustCompile(`"\d{1,6}"\}`)
)

func (n *roleNames) of(s, side string) string {
	if n.seen == nil {
		n.seen = map[string]map[string]string{}
	}
	m := n.seen[side]
	if m == nil {
		m = map[string]string{}
		n.seen[side] = m
	}
	s = hex40.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := m[id]; !ok {
			m[id] = "id" + strconv.Itoa(len(m)+1)
		}
		return m[id]
	})
	s = nowMs.ReplaceAllStringFunc(s, func(v string) string {
		ms, _ := strconv.ParseInt(v, 10, 64)
		if d := time.Since(time.UnixMilli(ms)); d > -10*time.Second && d < 10*time.Second {
			return "NOW_MS"
		}
		return v
	})
	s = nowSec.ReplaceAllString(s, `"NOW_S"`)
	s = usec.ReplaceAllString(s, `"USEC"}`)
	return s
}
