package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/clienttest"
)

// hostileMaxConns is central.max_conns of TestHostileClients's server.
const hostileMaxConns = 48

// TestHostileClients runs well-behaved clients of both protocols (the Go
// client without fallback, so that nothing hides an error; a raw
// MessagePack-RPC caller asking for max_batch IDs; REST callers) beside
// hostile ones: garbage bytes, malformed and oversized frames, huge
// counts, writers that trickle a frame or stall halfway, a reader that
// never reads, a flood of connections past central.max_conns, and bad HTTP
// (malformed requests, huge query strings, bad JSON, wrong methods, big
// bodies). Every hostile request gets a coded error, a 4xx or a closed
// connection, as documented; the well-behaved callers see no error at all,
// and the server neither panics nor races.
func TestHostileClients(t *testing.T) {
	testkit.SkipShort(t, "about 30 s of hostile clients")
	p := serve(t, "vesta", serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1010",
		"VESTA_REST_LISTEN", "127.0.0.1:0", "VESTA_CENTRAL_MAX_CONNS", "48"))
	led := newLedger(core.MaxPeak)
	ld := newLoad(10 * time.Second)

	cfg := clienttest.Direct(p.Central)
	cfg.Retries = -1
	c := clienttest.Open(t, cfg)
	// Both of its connections open before the flood, as a running
	// service's would be.
	for range 4 {
		if _, err := c.NextID(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for w := range 2 {
		ld.singles(led.stream(fmt.Sprintf("client/NextID-%d", w+1), true, core.Central), c.NextID)
	}
	ld.batches(led.stream("client/NextIDs(1000)", true, core.Central), func(ctx context.Context) ([]core.ID, error) { return c.NextIDs(ctx, 1000) })
	raw := dialRaw(t, p.Central)
	greedy := led.stream("raw/GenIDs(10000)", true, core.Central)
	// Its first call before the flood too: until a connection's first
	// complete frame, a newcomer at central.max_conns may shed it.
	if _, err := batch(greedy, func() ([]core.ID, error) { return raw.genIDs(10000) }); err != nil {
		t.Fatal(err)
	}
	ld.batches(greedy, func(context.Context) ([]core.ID, error) { return raw.genIDs(10000) })
	rc := newREST(t, p.restEndpoint())
	ld.batches(led.stream("rest/v1/ids?count=100", true, core.REST), func(ctx context.Context) ([]core.ID, error) { return rc.ids(ctx, 100) })
	ld.singles(led.stream("rest/genid", true, core.REST), rc.genid)

	ctx, stop := context.WithCancel(context.Background())
	var hostile sync.WaitGroup
	hostile.Go(func() { garbage(ctx, t, p.Central) })
	hostile.Go(func() { garbage(ctx, t, p.Central) })
	trickled := make([]*stream, 4)
	var firstCalls sync.WaitGroup // the trickles' first calls, due before the flood
	for i := range trickled {
		trickled[i] = led.stream(fmt.Sprintf("trickle-%d", i+1), true, core.Central)
		firstCalls.Add(1)
		hostile.Go(func() { trickle(ctx, t, p.Central, trickled[i], firstCalls.Done) })
	}
	for range 4 {
		hostile.Go(func() { stall(ctx, t, p.Central) })
	}
	hostile.Go(func() { neverReads(ctx, t, p.Central) })

	badFrames(t, p.Central)
	badHTTP(t, p.REST)
	firstCalls.Wait() // each ends by the deadline of its connection
	flood(t, p.Central, p.REST)
	badFrames(t, p.Central) // the server is as before once the flood ended

	stop()
	hostile.Wait()
	ld.stop()
	ld.report(t, "beside hostile clients")
	ld.requireNoErrors(t)
	for _, s := range trickled {
		if len(s.ids) != 2 {
			t.Errorf("%s: %d answers; want two, the second to a frame sent a byte at a time", s.name, len(s.ids))
		}
	}
	led.check(t)
	if !p.running() {
		t.Fatal("the server exited")
	}
	stopAll(t, p)
}

// request is [0, 7, proc, params] with params written by hand.
func request(proc string, params ...byte) []byte {
	return append(append([]byte{0x94, 0x00, 0x07, 0xa0 | byte(len(proc))}, proc...), params...)
}

// badFrames sends frames the server must answer with invalid_argument (and
// go on serving the connection), or must answer by closing the connection.
func badFrames(t *testing.T, addr string) {
	t.Helper()
	count := func(b ...byte) []byte { // params [{"count": b...}]
		return append([]byte{0x91, 0x81, 0xa5, 'c', 'o', 'u', 'n', 't'}, b...)
	}
	for _, tc := range []struct {
		name   string
		frame  []byte
		answer bool // invalid_argument for msgid 7, else the connection closes
	}{
		{"count 10^9", request(wire.ProcGenIDs, count(0xce, 0x3b, 0x9a, 0xca, 0x00)...), true},
		{"count 2^64-1", request(wire.ProcGenIDs, count(0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)...), true},
		{"count max_batch+1", request(wire.ProcGenIDs, count(0xcd, 0x27, 0x11)...), true},
		{"count 0", request(wire.ProcGenIDs, count(0x00)...), true},
		{"count -1", request(wire.ProcGenIDs, count(0xff)...), true},
		{"count a word", request(wire.ProcGenIDs, count(0xa2, 'a', 'b')...), true},
		{"count a decimal string with a space", request(wire.ProcGenIDs, count(0xa3, ' ', '1', '0')...), true},
		{"count a float", request(wire.ProcGenIDs, count(0xcb, 0x40, 0x14, 0, 0, 0, 0, 0, 0)...), true},
		{"unknown method", request("Vesta.Nope", 0x90), true},
		{"params a map", request(wire.ProcGenIDs, 0x81, 0xa5, 'c', 'o', 'u', 'n', 't', 0x01), true},
		{"HTTP on the RPC port", []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"), false},
		{"msgid a string", []byte{0x94, 0x00, 0xa1, '7', 0xab, 'V', 'e', 's', 't', 'a', '.', 'G', 'e', 'n', 'I', 'D', 0x90}, false},
		{"a response", []byte{0x94, 0x01, 0x07, 0xc0, 0x05}, false},
		{"str32 claims 4 GiB", []byte{0x94, 0x00, 0x07, 0xdb, 0xff, 0xff, 0xff, 0xff}, false},
		{"array32 claims 4G elements", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, false},
		{"over max_request_bytes", append(append([]byte{0x94, 0x00, 0x07, 0xdb, 0x00, 0x01, 0x11, 0x70}, bytes.Repeat([]byte{'x'}, 70000)...), 0x90), false},
		{"nested 100 deep", append(bytes.Repeat([]byte{0x91}, 100), 0xc0), false},
		{"byte 0xc1", []byte{0x94, 0x00, 0x07, 0xc1}, false},
	} {
		nc, err := net.DialTimeout("tcp", addr, rawTimeout)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		nc.SetDeadline(time.Now().Add(rawTimeout))
		if _, err := nc.Write(tc.frame); err != nil && tc.answer {
			t.Errorf("%s: write: %v", tc.name, err)
		}
		rd := wire.NewReader(nc, wire.MaxResponseBytes(10000))
		frame, err := rd.Next()
		switch {
		case !tc.answer && err == nil:
			t.Errorf("%s: answered %x; want the connection closed", tc.name, frame)
		case !tc.answer:
			// Closed (EOF, or a reset when the server closed with our
			// bytes unread): what is expected.
		case err != nil:
			t.Errorf("%s: %v; want an invalid_argument answer", tc.name, err)
		default:
			resp, err := wire.DecodeResponse(frame)
			if err != nil || resp.MsgID != 7 || !errors.Is(resp.Error, &api.Error{Code: api.InvalidArgument}) {
				t.Errorf("%s: answered %+v (%v); want invalid_argument for msgid 7", tc.name, resp, err)
			}
		}
		nc.Close()
	}
}

// garbage sends random bytes on one connection after another until ctx
// ends; each must be answered (a garbage prefix may happen to be a valid
// request) or closed, never hang past the server's read timeout.
func garbage(ctx context.Context, t *testing.T, addr string) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	buf := make([]byte, 4096)
	for ctx.Err() == nil {
		nc, err := net.DialTimeout("tcp", addr, rawTimeout)
		if err != nil {
			t.Errorf("garbage: dial: %v", err)
			return
		}
		n := 1 + rng.IntN(len(buf))
		for i := range n {
			buf[i] = byte(rng.Uint32())
		}
		// Random bytes may start a frame they do not finish (a bin16 header
		// claiming more than follows): the server then waits for the rest
		// up to its 10s read timeout. Past that, it must have closed.
		nc.SetDeadline(time.Now().Add(15 * time.Second))
		interrupt := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
		nc.Write(buf[:n])
		if _, err := io.Copy(io.Discard, nc); err != nil && isTimeout(err) && ctx.Err() == nil {
			t.Errorf("garbage: the server kept a connection of %d random bytes open past its read timeout", n)
		}
		interrupt()
		nc.Close()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// genIDFrame is [0, 7, "Vesta.GenID", []].
var genIDFrame = request(wire.ProcGenID, 0x90)

// trickle sends one Vesta.GenID a byte at a time, 200ms apart (well within
// the server's 10s read timeout), and records the answer. It first makes
// one call at once, and calls firstDone once that call ended: a connection
// still sending its first frame counts as silent, and a newcomer at
// central.max_conns (the flood) may shed it.
func trickle(ctx context.Context, t *testing.T, addr string, s *stream, firstDone func()) {
	var once sync.Once
	defer once.Do(firstDone)
	nc := hostileConn(t, "trickle", addr)
	if nc == nil {
		return
	}
	defer nc.Close()
	first, err := wire.NewEncoder().AppendRequest(nil, 6, wire.ProcGenID, nil)
	if err == nil {
		nc.SetDeadline(time.Now().Add(rawTimeout))
		_, err = nc.Write(first)
	}
	var frame []byte
	if err == nil {
		frame, err = wire.NewReader(nc, 64).Next()
	}
	var id0 uint64
	if err == nil {
		var resp wire.Response
		if resp, err = wire.DecodeResponse(frame); err == nil && resp.Error == nil {
			err = wire.DecodeResult(resp.Result, &id0)
		} else if err == nil {
			err = resp.Error
		}
	}
	if err != nil {
		t.Errorf("trickle: first call: %v", err)
		return
	}
	s.add(core.ID(id0))
	once.Do(firstDone)
	nc.SetDeadline(time.Time{})
	for _, b := range genIDFrame {
		if _, err := nc.Write([]byte{b}); err != nil {
			t.Errorf("trickle: %v", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	nc.SetReadDeadline(time.Now().Add(rawTimeout))
	frame, err = wire.NewReader(nc, 64).Next()
	if err != nil {
		t.Errorf("trickle: %v", err)
		return
	}
	resp, err := wire.DecodeResponse(frame)
	var id uint64
	if err == nil && resp.Error == nil {
		err = wire.DecodeResult(resp.Result, &id)
	}
	if err != nil || resp.Error != nil || resp.MsgID != 7 {
		t.Errorf("trickle: answer %+v, %v", resp, err)
		return
	}
	s.add(core.ID(id))
}

// hostileConn dials addr for a hostile goroutine, which reports a failure
// with Errorf (not Fatal) and returns nil.
func hostileConn(t *testing.T, who, addr string) net.Conn {
	nc, err := net.DialTimeout("tcp", addr, rawTimeout)
	if err != nil {
		t.Errorf("%s: %v", who, err)
		return nil
	}
	return nc
}

// stall sends half a frame and then nothing until ctx ends.
func stall(ctx context.Context, t *testing.T, addr string) {
	nc := hostileConn(t, "stall", addr)
	if nc == nil {
		return
	}
	defer nc.Close()
	nc.Write(genIDFrame[:len(genIDFrame)/2])
	<-ctx.Done()
}

// neverReads pipelines calls for max_batch IDs and reads no answer, so the
// server's writes to it block.
func neverReads(ctx context.Context, t *testing.T, addr string) {
	nc := hostileConn(t, "neverReads", addr)
	if nc == nil {
		return
	}
	defer nc.Close()
	req := request(wire.ProcGenIDs, 0x91, 0x81, 0xa5, 'c', 'o', 'u', 'n', 't', 0xcd, 0x27, 0x10)
	nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
	for range 200 {
		if _, err := nc.Write(req); err != nil {
			break // the server stopped reading once its writes blocked
		}
	}
	<-ctx.Done()
}

// flood opens central.max_conns and more connections to the RPC port, and
// as many idle ones to the REST port, holds them for two seconds and closes
// them. The server must close the RPC connections past its limit at once;
// well-behaved callers on connections they opened before are unaffected.
func flood(t *testing.T, rpcAddr, restAddr string) {
	t.Helper()
	var conns []net.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	const n = hostileMaxConns + 16
	for range n {
		for _, addr := range []string{rpcAddr, restAddr} {
			nc, err := net.DialTimeout("tcp", addr, rawTimeout)
			if err != nil {
				t.Fatalf("flood: %v", err)
			}
			conns = append(conns, nc)
		}
	}
	var refused, held atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < len(conns); i += 2 {
		nc := conns[i] // the RPC ones
		wg.Go(func() {
			nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err := nc.Read(make([]byte, 1))
			if isTimeout(err) {
				held.Add(1)
			} else {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("flood: %d RPC connections past max_conns %d closed at once, %d held", refused.Load(), hostileMaxConns, held.Load())
	if refused.Load() < n-hostileMaxConns || held.Load() > hostileMaxConns {
		t.Errorf("flood of %d connections: %d closed at once, %d held; want at least %d closed with max_conns %d",
			n, refused.Load(), held.Load(), n-hostileMaxConns, hostileMaxConns)
	}
}

// badHTTP sends malformed and hostile requests to the REST port; each gets
// the status the REST server documents, never a 5xx.
func badHTTP(t *testing.T, addr string) {
	t.Helper()
	get := func(target string) string { return "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n" }
	post := func(ctype, body string) string {
		return "POST /v1/make HTTP/1.1\r\nHost: localhost\r\nContent-Type: " + ctype + "\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	for _, tc := range []struct {
		name   string
		req    string
		status int
	}{
		{"garbage request line", "GARBAGE\r\n\r\n", 400},
		{"HTTP/9.9", "GET /v1/id HTTP/9.9\r\nHost: localhost\r\n\r\n", 505},
		{"no Host", "GET /v1/id HTTP/1.1\r\n\r\n", 400},
		{"NUL in a header", "GET /v1/id HTTP/1.1\r\nHost: localhost\r\nX: a\x00b\r\n\r\n", 400},
		{"negative Content-Length", "GET /v1/id HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n", 400},
		{"bad chunk", "POST /v1/make HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 400},
		{"40 KB path", get("/" + strings.Repeat("a", 40000)), 431},
		{"100 KB query", get("/v1/ids?count=1&x=" + strings.Repeat("a", 100000)), 431},
		{"count abc", get("/v1/ids?count=abc"), 400},
		{"count 0", get("/v1/ids?count=0"), 400},
		{"count max_batch+1", get("/v1/ids?count=10001"), 400},
		{"count 10^20", get("/v1/ids?count=100000000000000000000"), 400},
		{"count -5", get("/v1/ids?count=-5"), 400},
		{"count twice", get("/v1/ids?count=1&count=2"), 400},
		{"explain a word", get("/v1/ids/notanumber"), 400},
		{"explain 2^64+", get("/v1/ids/99999999999999999999999"), 400},
		{"expid -1", get("/expid?id=-1"), 400},
		{"makeid without seq", get("/makeid?time=1"), 400},
		{"transtime a word", get("/transtime?time=x"), 400},
		{"no such route", get("/nonexistent"), 404},
		{"DELETE", "DELETE /v1/id HTTP/1.1\r\nHost: localhost\r\n\r\n", 405},
		{"truncated JSON", post("application/json", `{"time":`), 400},
		{"time a word", post("application/json", `{"time":"abc","seq":1}`), 400},
		{"unknown field", post("application/json", `{"time":1,"seq":1,"x":1}`), 400},
		{"text/plain", post("text/plain", `{"time":1,"seq":1}`), 415},
		{"1 MB body", post("application/json", `{"time":"`+strings.Repeat("1", 1<<20)+`","seq":1}`), 413},
		{"nested 100000 deep", post("application/json", strings.Repeat("[", 100000)+strings.Repeat("]", 100000)), 413}, // by its Content-Length
		{"nested 30000 deep", post("application/json", strings.Repeat("[", 30000)+strings.Repeat("]", 30000)), 400},
	} {
		nc, err := net.DialTimeout("tcp", addr, rawTimeout)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		nc.SetDeadline(time.Now().Add(rawTimeout))
		// The server may answer and close before reading a large request
		// whole; the answer counts, not the write.
		go nc.Write([]byte(tc.req))
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		switch {
		case err != nil:
			t.Errorf("%s: %v; want HTTP %d", tc.name, err, tc.status)
		case resp.StatusCode != tc.status:
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			t.Errorf("%s: HTTP %d %s; want %d", tc.name, resp.StatusCode, body, tc.status)
		}
		nc.Close()
	}
}
