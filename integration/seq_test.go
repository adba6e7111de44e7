package integration_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
	"github.com/vesta-go/vesta/internal/testkit/mariadbtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/redisstore"
)

// seqLedger holds every number issued per tag; a number seen twice is the
// one failure these tests exist for.
type seqLedger struct {
	mu    sync.Mutex
	seen  map[string]map[int64]string // tag -> number -> who issued it
	total int
	dups  []string
}

func newSeqLedger() *seqLedger { return &seqLedger{seen: map[string]map[int64]string{}} }

func (l *seqLedger) add(who, tag string, vs ...int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.seen[tag]
	if m == nil {
		m = map[int64]string{}
		l.seen[tag] = m
	}
	for _, v := range vs {
		if first, dup := m[v]; dup {
			if len(l.dups) < 20 {
				l.dups = append(l.dups, fmt.Sprintf("%s %d: by %s and by %s", tag, v, first, who))
			}
			continue
		}
		m[v] = who
		l.total++
	}
}

func (l *seqLedger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.dups) > 0 {
		t.Fatalf("numbers issued twice (first %d):\n%v", len(l.dups), l.dups)
	}
	t.Logf("ledger: %d numbers over %d tags, none twice", l.total, len(l.seen))
}

// httpClient is a client whose connections are closed when the test ends.
func httpClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func getBody(hc *http.Client, url string) (int, string, error) {
	code, b, err := nettest.Get(hc, url)
	return code, string(b), err
}

// seqEnv is the environment of a server issuing sequences from store.
func seqEnv(t testing.TB, machine int, kv ...string) map[string]string {
	env := map[string]string{
		"VESTA_CENTRAL_LISTEN":          "127.0.0.1:0",
		"VESTA_REST_LISTEN":             "127.0.0.1:0",
		"VESTA_TIME_GUARD_DIR":          t.TempDir(),
		"VESTA_MACHINE_ID":              strconv.Itoa(machine),
		"VESTA_SEGMENT_REFRESH_TAGS":    "1s",
		"VESTA_SEGMENT_TARGET_DURATION": "1s", // ranges last briefly here: keep steps small, many fetches
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

// TestSeqFleet: two vesta serve processes and an embedded issuer in this
// process share one Redis store; Go clients (with per-tag prefetch), REST
// callers and the embedded issuer take numbers of many tags at once. One
// server is killed with SIGKILL mid-run and restarted on its address. No
// number is issued twice, and the client's calls never fail (the other
// server answers while one is down).
func TestSeqFleet(t *testing.T) {
	rds := redistest.Start(t)
	ctx := context.Background()
	store, err := redisstore.Open(redisstore.Config{Addrs: []string{rds.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tags := make([]string, 24)
	for i := range tags {
		tags[i] = fmt.Sprintf("fleet.tag-%02d", i)
		// Small steps: ranges run out often, so the store is asked often.
		if err := store.Create(ctx, segment.TagInfo{Tag: tags[i], MaxID: 1, Step: int64(50 + 10*i)}); err != nil {
			t.Fatal(err)
		}
	}
	env := func(machine int) map[string]string {
		return seqEnv(t, machine, "VESTA_SEGMENT_STORE", "redis", "VESTA_SEGMENT_REDIS_ADDRS", rds.Addr(),
			"VESTA_SEGMENT_PRELOAD", tags[0]+","+tags[1])
	}
	servers := []*proc{launch(t, "seq-1", env(1000)), launch(t, "seq-2", env(1001))}
	addrs := waitAll(t, servers...)

	cfg := segment.DefaultConfig()
	cfg.TargetDuration = time.Second
	embedded, err := segment.Open(ctx, store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { embedded.Close() })

	var clients []*client.Client
	for i := range 2 {
		ccfg := client.DefaultConfig(addrs...)
		ccfg.NoFallback = true
		ccfg.Timeout, ccfg.Retries = 2*time.Second, 1
		ccfg.BreakerFailures, ccfg.BreakerTimeout = 2, 250*time.Millisecond
		if i == 1 {
			ccfg.SeqPrefetch, ccfg.SeqMaxTags = 200, 8 // fewer buffers than tags: some are dropped
		}
		clients = append(clients, clienttest.Open(t, ccfg))
	}

	led := newSeqLedger()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var clientCalls, restCalls, restFailed atomic.Int64
	fail := make(chan error, 64)
	report := func(err error) {
		select {
		case fail <- err:
		default:
		}
	}
	for ci, c := range clients {
		for w := range 4 {
			who := fmt.Sprintf("client-%d/%d", ci, w)
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				untilStop(stop, func(i int) bool {
					tag := tags[(w*7+i)%len(tags)]
					if i%4 == 3 {
						vs, err := c.NextSeqs(cctx, tag, 25)
						if err != nil {
							report(fmt.Errorf("%s NextSeqs(%s): %w", who, tag, err))
							return false
						}
						led.add(who, tag, vs...)
					} else {
						v, err := c.NextSeq(cctx, tag)
						if err != nil {
							report(fmt.Errorf("%s NextSeq(%s): %w", who, tag, err))
							return false
						}
						led.add(who, tag, v)
					}
					clientCalls.Add(1)
					return true
				})
			})
		}
	}
	for w := range 3 {
		who := fmt.Sprintf("embedded/%d", w)
		// Paced: unpaced, the embedded issuer takes every core and starves
		// the servers' callers, which this test is about as much.
		pace := newPacer(100_000)
		wg.Go(func() {
			untilStop(stop, func(i int) bool {
				tag := tags[(w*5+i)%len(tags)]
				vs, err := embedded.NextN(ctx, tag, 10)
				if err != nil {
					report(fmt.Errorf("%s: %w", who, err))
					return false
				}
				led.add(who, tag, vs...)
				pace.took(len(vs))
				return true
			})
		})
	}
	hc := httpClient(t)
	for si := range servers {
		who := fmt.Sprintf("rest-%d", si)
		base := servers[si].restEndpoint() // the restarted server takes the same address
		wg.Go(func() {
			untilStop(stop, func(i int) bool {
				tag := tags[(si*3+i)%len(tags)]
				code, body, err := getBody(hc, base+"/v1/seq/"+tag+"?count=5")
				if err != nil || code != http.StatusOK {
					// This server may be the one killed: its callers fail
					// until it is back, as any HTTP caller's would.
					restFailed.Add(1)
					time.Sleep(10 * time.Millisecond)
					return true
				}
				var r struct{ IDs []string }
				if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.IDs) != 5 {
					report(fmt.Errorf("%s: %q: %v", who, body, err))
					return false
				}
				for _, s := range r.IDs {
					v, err := strconv.ParseInt(s, 10, 64)
					if err != nil {
						report(fmt.Errorf("%s: %q", who, s))
						return false
					}
					led.add(who, tag, v)
				}
				restCalls.Add(1)
				return true
			})
		})
	}

	time.Sleep(3 * time.Second)
	servers[0].kill()
	t.Logf("killed %s", servers[0].name)
	time.Sleep(1500 * time.Millisecond)
	servers[0] = servers[0].again(t, "seq-1-again")
	t.Logf("restarted %s", servers[0].name)
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	select {
	case err := <-fail:
		t.Fatal(err)
	default:
	}
	led.check(t)
	t.Logf("client calls %d, REST calls %d (%d failed against the killed server)", clientCalls.Load(), restCalls.Load(), restFailed.Load())
	if clientCalls.Load() == 0 || restCalls.Load() == 0 {
		t.Fatal("a kind of caller issued nothing")
	}
	// The restarted server serves, from ranges above everything before.
	code, body, err := getBody(hc, servers[0].restEndpoint()+"/v1/seq/"+tags[0])
	if err != nil || code != 200 {
		t.Fatalf("restarted server: %d %s %v", code, body, err)
	}
	stopAll(t, servers...)
}

// Leaf's DDL, as in its README (vesta's mysqlstore reads the same columns).
const leafDDL = "CREATE TABLE `leaf_alloc` (\n" +
	"  `biz_tag` varchar(128) NOT NULL DEFAULT '',\n" +
	"  `max_id` bigint(20) NOT NULL DEFAULT '1',\n" +
	"  `step` int(11) NOT NULL,\n" +
	"  `description` varchar(256) DEFAULT NULL,\n" +
	"  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n" +
	"  PRIMARY KEY (`biz_tag`)\n" +
	") ENGINE=InnoDB"

// TestSeqLeafTable: an existing Leaf deployment's table, with rows Leaf
// has used, served by vesta serve as is. Leaf's HTTP API answers what
// Leaf answers: the first number of a row is its max_id (Leaf's
// [max_id-step, max_id-1] after the advance), then counting up; an
// unknown key is Leaf's 500 with Result{id=-2, status=EXCEPTION}. A server
// killed with SIGKILL and restarted continues above every number issued.
func TestSeqLeafTable(t *testing.T) {
	db := mariadbtest.Start(t)
	admin, err := sql.Open("mysql", db.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	ctx := context.Background()
	for _, q := range []string{
		"CREATE DATABASE leaf",
		"USE leaf",
		leafDDL,
		// Leaf's README example, and a row Leaf has issued from for a while.
		"INSERT INTO leaf_alloc(biz_tag, max_id, step, description) VALUES('leaf-segment-test', 1, 2000, 'Test leaf Segment Mode Get Id')",
		"INSERT INTO leaf_alloc(biz_tag, max_id, step, description) VALUES('order', 73001, 1000, 'orders, used by Leaf')",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	env := seqEnv(t, 1000, "VESTA_SEGMENT_STORE", "mysql", "VESTA_SEGMENT_DSN", db.DSN("leaf"))
	srv := serve(t, "leaf-1", env)
	hc := httpClient(t)
	leafGet := func(p *proc, key string) (int, string) {
		t.Helper()
		code, body, err := getBody(hc, p.restEndpoint()+"/api/segment/get/"+key)
		if err != nil {
			t.Fatal(err)
		}
		return code, body
	}
	for _, tc := range []struct {
		key   string
		first int64
	}{{"leaf-segment-test", 1}, {"order", 73001}} {
		for i := range int64(3) {
			if code, body := leafGet(srv, tc.key); code != 200 || body != strconv.FormatInt(tc.first+i, 10) {
				t.Fatalf("%s: %d %q; want %d as Leaf answers", tc.key, code, body, tc.first+i)
			}
		}
	}
	code, body := leafGet(srv, "no-such-key")
	var spring struct {
		Status  int
		Message string
	}
	if code != 500 || json.Unmarshal([]byte(body), &spring) != nil || spring.Message != "Result{id=-2, status=EXCEPTION}" {
		t.Fatalf("unknown key: %d %s; want Leaf's 500 Result{id=-2, status=EXCEPTION}", code, body)
	}
	// The table says what Leaf's would: max_id advanced by one step.
	var maxID int64
	if err := admin.QueryRowContext(ctx, "SELECT max_id FROM leaf_alloc WHERE biz_tag='order'").Scan(&maxID); err != nil || maxID < 74001 {
		t.Fatalf("order's max_id %d, %v; want at least 74001", maxID, err)
	}

	// Over RPC too, then a crash: the restarted server starts above.
	rc := dialRaw(t, srv.Central)
	var seen []int64
	for range 100 {
		var v int64
		if err := rc.call(wire.ProcNextSeq, wire.NextSeqParams{Tag: "order"}, &v); err != nil {
			t.Fatalf("Vesta.NextSeq: %v", err)
		}
		seen = append(seen, v)
	}
	rc.close()
	srv.kill()
	again := srv.again(t, "leaf-1-again")
	code, body = leafGet(again, "order")
	after, err := strconv.ParseInt(body, 10, 64)
	if code != 200 || err != nil || after <= seen[len(seen)-1] {
		t.Fatalf("after kill -9 and restart: %d %q; want above %d", code, body, seen[len(seen)-1])
	}
	stopAll(t, again)
}

// untilStop calls call with 0, 1, 2, ... until stop is closed or call
// returns false: a worker's loop under load.
func untilStop(stop <-chan struct{}, call func(i int) bool) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		if !call(i) {
			return
		}
	}
}
