package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
)

// serverEnv is the environment of a server: central RPC on a free port, no
// REST, a time guard directory of its own, and with rds a machine ID
// leased from Redis under prefix with the given lease TTL. Further
// VESTA_* pairs override.
func serverEnv(t testing.TB, rds *redistest.Server, prefix string, ttl time.Duration, kv ...string) map[string]string {
	env := map[string]string{
		"VESTA_CENTRAL_LISTEN": "127.0.0.1:0",
		"VESTA_REST_LISTEN":    "",
		"VESTA_TIME_GUARD_DIR": t.TempDir(),
	}
	if rds != nil {
		maps.Copy(env, map[string]string{
			"VESTA_MACHINE_PROVIDERS":            "redis",
			"VESTA_MACHINE_REDIS_ADDRS":          rds.Addr(),
			"VESTA_MACHINE_REDIS_KEY_PREFIX":     prefix,
			"VESTA_MACHINE_REDIS_LEASE_TTL":      ttl.String(),
			"VESTA_MACHINE_REDIS_MAX_CLOCK_SKEW": "100ms", // one host's clocks: keeps the quarantine short
		})
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

// embedConfig is an embedded issuer's configuration: with rds, a machine
// ID of the embedded range leased under prefix; else static machine. Its
// time guard has a directory of its own.
func embedConfig(t testing.TB, rds *redistest.Server, prefix string, ttl time.Duration) embed.Config {
	cfg := embed.DefaultConfig()
	cfg.DataDir = t.TempDir()
	if rds != nil {
		cfg.Machine.Providers = []string{"redis"}
		cfg.Machine.Redis.Addrs = []string{rds.Addr()}
		cfg.Machine.Redis.KeyPrefix = prefix
		cfg.Machine.Redis.LeaseTTL = ttl
		cfg.Machine.Redis.MaxClockSkew = 100 * time.Millisecond // one host's clocks: keeps the quarantine short
	}
	return cfg
}

// clientConfig is a Go client of servers that fails over fast: an attempt
// timeout of attempt, every other server tried, breakers that open after 2
// failures for 250ms, and the embedded fallback leasing from rds (or on a
// static machine without it).
func clientConfig(t testing.TB, servers []string, attempt time.Duration, rds *redistest.Server, prefix string, ttl time.Duration) client.Config {
	cfg := client.DefaultConfig(servers...)
	cfg.Timeout = attempt
	cfg.Retries = len(servers) - 1
	cfg.BreakerFailures = 2
	cfg.BreakerTimeout = 250 * time.Millisecond
	cfg.FallbackConfig = embedConfig(t, rds, prefix, ttl)
	return cfg
}

// redisClient is a plain go-redis client of rds, closed when the test ends.
func redisClient(t testing.TB, rds *redistest.Server) *redis.Client {
	return redisClientVia(t, rds.Addr(), nil)
}

// redisClientVia is redisClient of the Redis at addr, dialled with dial
// (from a test host's namespace, say); nil is go-redis's own dialer.
func redisClientVia(t testing.TB, addr string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *redis.Client {
	rc := redis.NewClient(&redis.Options{Addr: addr, Dialer: dial, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// rawConn is a MessagePack-RPC connection made with package wire alone,
// as a client in another language would: one call at a time.
type rawConn struct {
	nc    net.Conn
	enc   *wire.Encoder
	rd    *wire.Reader
	buf   []byte
	msgid uint32
}

// rawTimeout bounds one raw call: a hang, not a speed.
const rawTimeout = 10 * time.Second

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := tryDialRaw(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.close() })
	return c
}

func tryDialRaw(addr string) (*rawConn, error) {
	var d net.Dialer
	return tryDialRawWith(d.DialContext, addr)
}

// tryDialRawWith dials with dial (from a test host's namespace, say).
func tryDialRawWith(dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string) (*rawConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rawTimeout)
	defer cancel()
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{nc: nc, enc: wire.NewEncoder(), rd: wire.NewReader(nc, wire.MaxResponseBytes(1_000_000))}, nil
}

func (c *rawConn) close() { c.nc.Close() }

// call sends one request and reads its answer into result. A server's
// error answer is returned as a *api.Error.
func (c *rawConn) call(proc string, params, result any) error {
	c.msgid++
	var err error
	if c.buf, err = c.enc.AppendRequest(c.buf[:0], c.msgid, proc, params); err != nil {
		return err
	}
	c.nc.SetDeadline(time.Now().Add(rawTimeout))
	if _, err := c.nc.Write(c.buf); err != nil {
		return err
	}
	frame, err := c.rd.Next()
	if err != nil {
		return err
	}
	resp, err := wire.DecodeResponse(frame)
	if err != nil {
		return err
	}
	if resp.MsgID != c.msgid {
		return fmt.Errorf("answer to msgid %d; want %d", resp.MsgID, c.msgid)
	}
	if resp.Error != nil {
		return resp.Error
	}
	return wire.DecodeResult(resp.Result, result)
}

func (c *rawConn) genID() (core.ID, error) {
	var id uint64
	err := c.call(wire.ProcGenID, nil, &id)
	return core.ID(id), err
}

func (c *rawConn) genIDs(n int) ([]core.ID, error) {
	var ids []uint64
	if err := c.call(wire.ProcGenIDs, wire.GenIDsParams{Count: uint64(n)}, &ids); err != nil {
		return nil, err
	}
	if len(ids) != n {
		return nil, fmt.Errorf("Vesta.GenIDs: %d IDs for a count of %d", len(ids), n)
	}
	out := make([]core.ID, n)
	for i, id := range ids {
		out[i] = core.ID(id)
	}
	return out, increasing(out)
}

// restClient calls a REST server with a keep-alive HTTP client; its idle
// connections are closed when the test ends.
type restClient struct {
	base string
	hc   *http.Client
}

func newREST(t testing.TB, base string) *restClient {
	tr := &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &restClient{base: base, hc: &http.Client{Transport: tr}}
}

// restError is a REST answer other than 200.
type restError struct {
	status int
	code   string // error.code of the JSON body, or the plain-text code
	body   string
}

func (e *restError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.status, e.code, strings.TrimSpace(e.body))
}

// get returns the body of a 200 answer, or a *restError.
func (r *restClient) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path, nil)
	if err != nil {
		return nil, err
	}
	status, body, err := nettest.Do(r.hc, req)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		e := &restError{status: status, body: string(body)}
		var j struct {
			Error struct{ Code string } `json:"error"`
		}
		if json.Unmarshal(body, &j) == nil && j.Error.Code != "" {
			e.code = j.Error.Code
		} else if code, _, ok := strings.Cut(string(body), ":"); ok {
			e.code = code
		}
		return nil, e
	}
	return body, nil
}

// ids calls GET /v1/ids?count=n.
func (r *restClient) ids(ctx context.Context, n int) ([]core.ID, error) {
	body, err := r.get(ctx, "/v1/ids?count="+strconv.Itoa(n))
	if err != nil {
		return nil, err
	}
	var out struct{ IDs []string }
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("/v1/ids: %w", err)
	}
	if len(out.IDs) != n {
		return nil, fmt.Errorf("/v1/ids: %d IDs for a count of %d", len(out.IDs), n)
	}
	ids := make([]core.ID, n)
	for i, s := range out.IDs {
		if ids[i], err = core.ParseID(s); err != nil {
			return nil, fmt.Errorf("/v1/ids: %w", err)
		}
	}
	return ids, increasing(ids)
}

// id calls GET /v1/id.
func (r *restClient) id(ctx context.Context) (core.ID, error) {
	body, err := r.get(ctx, "/v1/id")
	if err != nil {
		return 0, err
	}
	var out struct{ ID string }
	if err := json.Unmarshal(body, &out); err != nil {
		return 0, fmt.Errorf("/v1/id: %w", err)
	}
	return core.ParseID(out.ID)
}

// genid calls the Vesta-compatible GET /genid (plain text).
func (r *restClient) genid(ctx context.Context) (core.ID, error) {
	body, err := r.get(ctx, "/genid")
	if err != nil {
		return 0, err
	}
	return core.ParseID(strings.TrimSpace(string(body)))
}

// ready reports whether GET /readyz answers 200, and its error otherwise.
func (r *restClient) ready(ctx context.Context) error {
	_, err := r.get(ctx, "/readyz")
	return err
}

// isCode reports whether err is a server's answer with code, over RPC
// (through the Go client too) or REST.
func isCode(err error, code api.Code) bool {
	if errors.Is(err, &api.Error{Code: code}) {
		return true
	}
	var re *restError
	return errors.As(err, &re) && re.code == string(code)
}
