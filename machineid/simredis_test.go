package machineid

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisModel is a Redis server in memory, for the lease simulation: the
// commands and the lease's scripts (redis.go) written again in Go over a
// keyspace of strings and hashes whose TTLs run on the server's own clock,
// with the instance identity (run_id, master_replid) the scripts read, and
// the ways a real Redis loses data: a restart empty or from an older
// snapshot (a new run_id), FLUSHALL (the same one). TestRedisModelMatchesRedis
// keeps it honest against a real redis-server.
//
// It answers what go-redis sends (redisHook): a command's arguments as
// go-redis built them, a reply as go-redis would have parsed it (int64,
// string, []any, redis.Nil, an error reply).
type redisModel struct {
	mu       sync.Mutex
	clock    func() time.Time // the server's wall clock: TIME and expiry
	keys     map[string]*redisValue
	runID    string
	replid   string
	evicts   bool                   // maxmemory with an allkeys-* policy
	readonly bool                   // a replica: scripts (every one writes) are refused
	newID    func() string          // 40 hex digits, for run_id and replid
	writes   int                    // counts writes, for a snapshot's age
	scripts  map[string]redisScript // by SHA1
}

// redisValue is a string or a hash, with an expiry.
type redisValue struct {
	str    string
	hash   map[string]string // nil for a string
	expire int64             // unix ms; 0: none
}

// replyError is an error reply of the server (redis.Error, as go-redis
// returns one).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

const wrongType = replyError("WRONGTYPE Operation against a key holding the wrong kind of value")

// redisScript is one of the lease's scripts in Go: KEYS, ARGV in, the
// reply out. It runs under the model's lock, at one instant, as Redis runs
// a script.
type redisScript func(m *redisModel, now int64, keys, argv []string) (any, error)

func newRedisModel(clock func() time.Time, newID func() string) *redisModel {
	m := &redisModel{clock: clock, keys: map[string]*redisValue{}, newID: newID, runID: newID(), replid: newID()}
	m.scripts = map[string]redisScript{
		leaseScripts["claim"].Hash():         (*redisModel).claim,
		leaseScripts["renew"].Hash():         (*redisModel).renew,
		leaseScripts["release"].Hash():       (*redisModel).release,
		leaseScripts["release clean"].Hash(): (*redisModel).releaseClean,
		leaseScripts["mark"].Hash():          (*redisModel).mark,
		leaseScripts["member"].Hash():        (*redisModel).member,
		leaseScripts["drop member"].Hash():   (*redisModel).dropMember,
		leaseScripts["fleet"].Hash():         (*redisModel).fleet,
		leaseScripts["put hold"].Hash():      (*redisModel).putHold,
	}
	return m
}

// nowMs is the server's clock in unix milliseconds, as Redis's mstime.
func (m *redisModel) nowMs() int64 { return m.clock().UnixMilli() }

// restart makes the server come back as a new process: a new run_id, a
// new replid unless keepReplid (a master restarted from its own RDB may
// keep it), and the keyspace given (nil: empty).
func (m *redisModel) restart(keys map[string]*redisValue, keepReplid bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if keys == nil {
		keys = map[string]*redisValue{}
	}
	m.keys = keys
	m.runID = m.newID()
	if !keepReplid {
		m.replid = m.newID()
	}
}

// snapshot copies the keyspace, as an RDB save would.
func (m *redisModel) snapshot() map[string]*redisValue {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]*redisValue, len(m.keys))
	for k, v := range m.keys {
		c := *v
		if v.hash != nil {
			c.hash = maps.Clone(v.hash)
		}
		out[k] = &c
	}
	return out
}

// flushAll empties the keyspace; the instance stays the same.
func (m *redisModel) flushAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = map[string]*redisValue{}
}

// get returns key's value unless it is missing or expired (Redis: expired
// once the clock is past the expiry).
func (m *redisModel) get(key string, now int64) *redisValue {
	v := m.keys[key]
	if v == nil {
		return nil
	}
	if v.expire != 0 && now > v.expire {
		delete(m.keys, key)
		return nil
	}
	return v
}

func (m *redisModel) getString(key string, now int64) (string, bool, error) {
	v := m.get(key, now)
	switch {
	case v == nil:
		return "", false, nil
	case v.hash != nil:
		return "", false, wrongType
	}
	return v.str, true, nil
}

func (m *redisModel) getHash(key string, now int64) (map[string]string, error) {
	v := m.get(key, now)
	switch {
	case v == nil:
		return nil, nil
	case v.hash == nil:
		return nil, wrongType
	}
	return v.hash, nil
}

// set writes a string; px > 0 sets an expiry, else none.
func (m *redisModel) set(key, val string, now, px int64) {
	v := &redisValue{str: val}
	if px > 0 {
		v.expire = now + px
	}
	m.keys[key] = v
	m.writes++
}

func (m *redisModel) del(key string, now int64) int64 {
	if m.get(key, now) == nil {
		return 0
	}
	delete(m.keys, key)
	m.writes++
	return 1
}

func (m *redisModel) hset(key string, now int64, kv ...string) error {
	h, err := m.getHash(key, now)
	if err != nil {
		return err
	}
	if h == nil {
		h = map[string]string{}
		m.keys[key] = &redisValue{hash: h}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	m.writes++
	return nil
}

// holds is the scripts' first line: whether key holds token ("GET key ==
// token").
func (m *redisModel) holds(key, token string, now int64) (bool, error) {
	v, ok, err := m.getString(key, now)
	return err == nil && ok && v == token, err
}

func (m *redisModel) typeOf(key string, now int64) string {
	switch v := m.get(key, now); {
	case v == nil:
		return "none"
	case v.hash != nil:
		return "hash"
	}
	return "string"
}

// hmget is HMGET: one value per field, nil for a missing one.
func (m *redisModel) hmget(key string, now int64, fields ...string) ([]any, error) {
	h, err := m.getHash(key, now)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(fields))
	for i, f := range fields {
		if v, ok := h[f]; ok {
			out[i] = v
		}
	}
	return out, nil
}

// pttl is PTTL: -2 missing, -1 no expiry, else the milliseconds left.
func (m *redisModel) pttl(key string, now int64) int64 {
	v := m.get(key, now)
	switch {
	case v == nil:
		return -2
	case v.expire == 0:
		return -1
	}
	return v.expire - now
}

func (m *redisModel) ident() string { return m.runID + "/" + m.replid }

// info is the INFO section the scripts and checkServer read.
func (m *redisModel) info(section string) string {
	switch strings.ToLower(section) {
	case "server":
		return "# Server\r\nredis_version:7.0.0\r\nrun_id:" + m.runID + "\r\n"
	case "replication":
		return "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:" + m.replid + "\r\n"
	case "memory":
		if m.evicts {
			return "# Memory\r\nmaxmemory:104857600\r\nmaxmemory_policy:allkeys-lru\r\n"
		}
		return "# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n"
	case "cluster":
		return "# Cluster\r\ncluster_enabled:0\r\n"
	}
	return ""
}

// timeParts is TIME: seconds and microseconds, as strings.
func (m *redisModel) timeParts() (string, string) {
	t := m.clock()
	return strconv.FormatInt(t.Unix(), 10), strconv.FormatInt(int64(t.Nanosecond()/1000), 10)
}

// The lease's scripts, line by line as redis.go's Lua.

func (m *redisModel) claim(now int64, keys, argv []string) (any, error) {
	ttl, err := strconv.ParseInt(argv[1], 10, 64)
	if err != nil || ttl <= 0 {
		return nil, replyError("ERR invalid expire time in 'set' command")
	}
	if _, ok, err := m.getString(keys[0], now); err != nil {
		return nil, err
	} else if ok {
		return []any{int64(0)}, nil
	}
	m.set(keys[0], argv[0], now, ttl)
	rec := []any{nil, nil, nil}
	if m.typeOf(keys[1], now) == "hash" {
		rec, _ = m.hmget(keys[1], now, "final_ms", "run_id", "replid")
	}
	m.del(keys[1], now)
	inst, _, err := m.getString(keys[2], now)
	if err != nil {
		return nil, err
	}
	st := []any{nil, nil, nil}
	if m.typeOf(keys[3], now) == "hash" {
		st, _ = m.hmget(keys[3], now, "run_id", "replid", "since_ms")
	}
	since, _ := st[2].(string)
	before := int64(0)
	field := "id:" + argv[2]
	if st[0] != any(m.runID) || st[1] != any(m.replid) || st[2] == nil {
		// tostring(t[1] * 1000 + math.floor(t[2] / 1000)): Lua's number
		// formatting of a double.
		sec, usec := m.timeParts()
		s, _ := strconv.ParseFloat(sec, 64)
		u, _ := strconv.ParseFloat(usec, 64)
		since = luaNumber(s*1000 + math.Floor(u/1000))
		m.del(keys[3], now)
		if err := m.hset(keys[3], now, "run_id", m.runID, "replid", m.replid, "since_ms", since); err != nil {
			return nil, err
		}
	} else if h, _ := m.getHash(keys[3], now); h != nil {
		if _, ok := h[field]; ok {
			before = 1
		}
	}
	if err := m.hset(keys[3], now, field, "1"); err != nil {
		return nil, err
	}
	marked := int64(0)
	if m.get(keys[4], now) != nil {
		marked = 1
	}
	evicts := int64(0)
	if m.evicts {
		evicts = 1
	}
	or := func(v any) string { s, _ := v.(string); return s }
	return []any{int64(1), or(rec[0]), or(rec[1]), or(rec[2]), m.runID, m.replid, inst, since, evicts, before, marked}, nil
}

// luaNumber is Lua 5.1's tostring of a number ("%.14g").
func luaNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e14 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

func (m *redisModel) renew(now int64, keys, argv []string) (any, error) {
	sec, usec := m.timeParts()
	v, ok, err := m.getString(keys[0], now)
	if err != nil {
		return nil, err
	}
	if !ok || v != argv[0] {
		return []any{int64(0), sec, usec}, nil
	}
	ttl, err := strconv.ParseInt(argv[1], 10, 64)
	if err != nil {
		return nil, replyError("ERR value is not an integer or out of range")
	}
	m.get(keys[0], now).expire = now + ttl
	m.writes++
	return []any{int64(1), sec, usec}, nil
}

func (m *redisModel) release(now int64, keys, argv []string) (any, error) {
	if held, err := m.holds(keys[0], argv[0], now); !held {
		return int64(0), err
	}
	return m.del(keys[0], now), nil
}

func (m *redisModel) releaseClean(now int64, keys, argv []string) (any, error) {
	if held, err := m.holds(keys[0], argv[0], now); !held {
		return int64(0), err
	}
	m.del(keys[0], now)
	m.del(keys[1], now)
	if err := m.hset(keys[1], now, "final_ms", argv[1], "token", argv[0], "run_id", m.runID, "replid", m.replid); err != nil {
		return nil, err
	}
	return int64(1), nil
}

func (m *redisModel) mark(now int64, keys, argv []string) (any, error) {
	if held, err := m.holds(keys[0], argv[0], now); !held {
		return int64(0), err
	}
	cur, has, err := m.getString(keys[1], now)
	if err != nil {
		return nil, err
	}
	want, werr := luaToNumber(argv[1])
	if has {
		n, err := luaToNumber(cur)
		if err != nil {
			return nil, replyError("damaged mark " + keys[1])
		}
		if werr != nil {
			return nil, replyError("ERR Error running script: attempt to compare number with nil")
		}
		if n < want {
			m.set(keys[1], argv[1], now, 0)
		}
	} else {
		m.set(keys[1], argv[1], now, 0)
	}
	if argv[2] != "" {
		m.set(keys[2], argv[2], now, 0)
	}
	m.set(keys[3], m.ident(), now, 0)
	return int64(1), nil
}

// luaToNumber is Lua 5.1's tonumber of a string, for the decimal numbers
// the lease writes.
func luaToNumber(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("not a number")
	}
	return strconv.ParseFloat(s, 64)
}

// putHold is the hold history's write, its hash alone: the order, its
// trim and the expiry are not modelled (the simulation reads no history).
func (m *redisModel) putHold(now int64, keys, argv []string) (any, error) {
	if held, err := m.holds(keys[0], argv[0], now); !held {
		return int64(0), err
	}
	if err := m.hset(keys[1], now, argv[1], argv[2]); err != nil {
		return nil, err
	}
	return int64(1), nil
}

func (m *redisModel) member(now int64, keys, argv []string) (any, error) {
	if held, err := m.holds(keys[0], argv[0], now); !held {
		return int64(0), err
	}
	ttl := m.pttl(keys[0], now)
	if ttl <= 0 {
		return int64(0), nil
	}
	m.set(keys[1], argv[1], now, ttl)
	return int64(1), nil
}

func (m *redisModel) dropMember(now int64, keys, argv []string) (any, error) {
	if held, err := m.holds(keys[0], argv[0], now); !held {
		return int64(0), err
	}
	return m.del(keys[1], now), nil
}

func (m *redisModel) fleet(now int64, keys, argv []string) (any, error) {
	cur, ok, err := m.getString(keys[0], now)
	if err != nil {
		return nil, err
	}
	if ok {
		return cur, nil
	}
	m.set(keys[0], argv[0], now, 0)
	return nil, redis.Nil
}

// do runs one command as go-redis built it (cmd.Args()): the lease's
// scripts by EVALSHA, and the few commands the lease and the tests send.
// The reply is what go-redis would have parsed from a real server's.
func (m *redisModel) do(args []any) (any, error) {
	if len(args) == 0 {
		return nil, replyError("ERR empty command")
	}
	a := make([]string, len(args))
	for i, v := range args {
		a[i] = argString(v)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.nowMs()
	switch name := strings.ToLower(a[0]); name {
	case "evalsha", "eval":
		if len(a) < 3 {
			return nil, replyError("ERR wrong number of arguments for '" + name + "' command")
		}
		sha := a[1]
		if name == "eval" {
			sha = redis.NewScript(a[1]).Hash()
		}
		s, ok := m.scripts[sha]
		if ok && m.readonly {
			return nil, replyError("READONLY You can't write against a read only replica.")
		}
		if !ok {
			return nil, replyError("NOSCRIPT No matching script. Please use EVAL.")
		}
		n, err := strconv.Atoi(a[2])
		if err != nil || n < 0 || 3+n > len(a) {
			return nil, replyError("ERR Number of keys can't be greater than number of args")
		}
		return s(m, now, a[3:3+n], a[3+n:])
	case "info":
		section := "server"
		if len(a) > 1 {
			section = a[1]
		}
		return m.info(section), nil
	case "time":
		sec, usec := m.timeParts()
		return []any{sec, usec}, nil
	case "get":
		v, ok, err := m.getString(a[1], now)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, redis.Nil
		}
		return v, nil
	case "mget":
		out := make([]any, len(a)-1)
		for i, k := range a[1:] {
			if v, ok, err := m.getString(k, now); err == nil && ok {
				out[i] = v
			}
		}
		return out, nil
	case "del":
		var n int64
		for _, k := range a[1:] {
			n += m.del(k, now)
		}
		return n, nil
	case "pttl":
		return m.pttl(a[1], now), nil
	case "hgetall":
		h, err := m.getHash(a[1], now)
		if err != nil {
			return nil, err
		}
		return maps.Clone(h), nil
	case "keys": // every key: the differential test's only pattern
		var out []any
		for k := range m.keys {
			if m.get(k, now) != nil {
				out = append(out, k)
			}
		}
		return out, nil
	case "type":
		return m.typeOf(a[1], now), nil
	case "flushall":
		m.keys = map[string]*redisValue{}
		return "OK", nil
	case "ping":
		return "PONG", nil
	}
	return nil, replyError("ERR unknown command '" + a[0] + "'")
}

// argString is an argument as go-redis writes it on the wire.
func argString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		if v {
			return "1"
		}
		return "0"
	case time.Duration:
		return strconv.FormatInt(int64(v), 10)
	}
	return fmt.Sprint(v)
}

// setReply hands a reply to the command go-redis is waiting on.
func setReply(cmd redis.Cmder, v any, err error) {
	if err != nil {
		cmd.SetErr(err)
		return
	}
	switch c := cmd.(type) {
	case *redis.Cmd:
		if h, ok := v.(map[string]string); ok { // a RESP3 map, as go-redis reads one untyped
			m := make(map[any]any, len(h))
			for k, x := range h {
				m[k] = x
			}
			v = m
		}
		c.SetVal(v)
	case *redis.StringCmd:
		c.SetVal(v.(string))
	case *redis.StatusCmd:
		c.SetVal(v.(string))
	case *redis.IntCmd:
		c.SetVal(v.(int64))
	case *redis.SliceCmd:
		c.SetVal(v.([]any))
	case *redis.DurationCmd:
		n := v.(int64)
		if n > 0 {
			c.SetVal(time.Duration(n) * time.Millisecond)
		} else {
			c.SetVal(time.Duration(n))
		}
	case *redis.MapStringStringCmd:
		c.SetVal(v.(map[string]string))
	case *redis.StringSliceCmd:
		out := make([]string, 0, len(v.([]any)))
		for _, k := range v.([]any) {
			out = append(out, k.(string))
		}
		c.SetVal(out)
	case *redis.TimeCmd:
		p := v.([]any)
		sec, _ := strconv.ParseInt(p[0].(string), 10, 64)
		usec, _ := strconv.ParseInt(p[1].(string), 10, 64)
		c.SetVal(time.Unix(sec, usec*1000))
	default:
		cmd.SetErr(fmt.Errorf("redis model: no reply for %T", cmd))
	}
}
