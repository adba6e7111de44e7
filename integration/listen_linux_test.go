package integration_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/netnstest"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"
)

// The attacks of the listener-policy review (package connlimit), each on a
// real `vesta serve` while well-behaved callers keep asking for IDs: the
// service must stay available, and what it holds bounded.

// TestIdleFloodLowNofile: under `ulimit -n 256`, 300 connections
// to each port (RPC, REST, metrics) that make one call and then stay idle
// must not exhaust the descriptors: the listeners together hold at most
// the budget the limit leaves after a reserve, shedding the idlest of any
// port for a newcomer, so a well-behaved caller is served on every port,
// /readyz answers, and the time guard keeps saving its mark.
func TestIdleFloodLowNofile(t *testing.T) {
	testkit.SkipShort(t, "about 10 s of flood")
	env := serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1012",
		"VESTA_REST_LISTEN", "127.0.0.1:0", "VESTA_METRICS_LISTEN", "127.0.0.1:0",
		"VESTA_TIME_GUARD_WINDOW", "1s")
	// The shell sets the soft and the hard limit, then becomes vesta.
	p := launchWrapped(t, "vesta", env, []string{"sh", "-c", `ulimit -n 256 && exec "$0" "$@"`})
	if err := p.waitServing(); err != nil {
		t.Fatal(err)
	}
	metrics := "http://" + serveAddr(t, p, "metrics")
	ports := []string{p.Central, p.REST, serveAddr(t, p, "metrics")}
	budget := metricValue(t, metrics, "", "vesta_connections_budget")
	before := sample(t, p, metrics, "", ports...)
	mark0 := metricValue(t, metrics, "", "vesta_generator_time_guard_mark_timestamp_seconds")
	t.Logf("before: %v; connection budget %v of RLIMIT_NOFILE 256", before, budget)
	if budget <= 0 || budget > 256-32 {
		t.Fatalf("vesta_connections_budget %v; want the limit less the descriptors open and a reserve", budget)
	}

	// The flood: each connection makes one call, reads its answer and
	// stays open, idle.
	const perPort = 300
	var mu sync.Mutex
	var conns []net.Conn
	holdAll(t, &conns, &mu)
	calls := []struct {
		addr string
		call func(net.Conn) error
	}{
		{p.Central, rpcServed},
		{p.REST, keepAliveGet("/healthz")},
		{ports[2], keepAliveGet("/metrics")},
	}
	t0 := time.Now()
	stopBy := t0.Add(10 * time.Second) // a server that stopped accepting must not hold the test
	var wg sync.WaitGroup
	var served atomic.Int64
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < perPort*len(calls) && time.Now().Before(stopBy); i += 32 {
				c := calls[i%len(calls)]
				d := fromLocal(fmt.Sprintf("127.0.0.%d", 2+i%3))
				d.Timeout = time.Second
				nc, err := d.Dial("tcp", c.addr)
				if err != nil {
					continue
				}
				if c.call(nc) == nil {
					served.Add(1)
				}
				mu.Lock()
				conns = append(conns, nc)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("flood: %d connections opened in %v, %d of them served once", len(conns), time.Since(t0).Round(time.Millisecond), served.Load())

	pr := startProbes(t, 100*time.Millisecond, map[string]func() error{
		"RPC Vesta.GenID": rpcCall(p.Central),
		"REST /v1/id":     restCall(p.REST, "/v1/id", "", nil),
		"REST /readyz":    restCall(p.REST, "/readyz", "", nil),
		"metrics":         restCall(ports[2], "/metrics", "", nil),
	})
	time.Sleep(3 * time.Second)
	during := sample(t, p, metrics, "", ports...)
	failed := pr.end("idle flood")
	t.Logf("during: %v", during)
	if failed > 0 {
		t.Errorf("%d well-behaved calls failed during the idle flood", failed)
	}
	if during.fds >= 256 {
		t.Errorf("%d descriptors open; want fewer than the limit of 256", during.fds)
	}
	open := metricValue(t, metrics, "", "vesta_connections_open")
	var shed float64
	for _, m := range []string{"vesta_rpc", "vesta_http", "vesta_metrics"} {
		shed += metricValue(t, metrics, "", m+`_connections_shed_total{reason="fd_budget"}`)
	}
	t.Logf("connections open %v of budget %v; shed for fd_budget %v", open, budget, shed)
	if open > budget || shed == 0 {
		t.Errorf("connections open %v, budget %v, shed for fd_budget %v; want at most the budget, and sheds counted", open, budget, shed)
	}
	time.Sleep(1100 * time.Millisecond) // a reservation of the 1s window further
	mark1 := metricValue(t, metrics, "", "vesta_generator_time_guard_mark_timestamp_seconds")
	guardFailed := metricValue(t, metrics, "", "vesta_generator_time_guard_failed")
	t.Logf("time guard mark %v -> %v, failed %v", mark0, mark1, guardFailed)
	if mark1 <= mark0 || guardFailed != 0 {
		t.Errorf("time guard mark %v -> %v, failed %v; want it saved on, never failing", mark0, mark1, guardFailed)
	}
	if strings.Contains(p.output(), "too many open files") {
		t.Errorf("the server ran out of descriptors:\n%s", grepLines(p.output(), "too many open files"))
	}
	stopAll(t, p)
}

// keepAliveGet makes a GET of path on nc, reads the answer and leaves the
// connection open (HTTP/1.1 keep-alive): idle from then on.
func keepAliveGet(path string) func(net.Conn) error {
	return func(nc net.Conn) error {
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		defer nc.SetDeadline(time.Time{})
		if _, err := io.WriteString(nc, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil
	}
}

// h2Attacker is a raw HTTP/2 connection that never reads: its SETTINGS
// give every stream a flow-control window of 0, so the server can send
// the headers of an answer but none of its body.
type h2Attacker struct {
	nc   net.Conn
	fr   *http2.Framer
	next uint32
}

func dialH2Attacker(addr, from string, roots *tls.Config) (*h2Attacker, error) {
	raw, err := fromLocal(from).Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	cfg := roots.Clone()
	cfg.NextProtos = []string{"h2"}
	tc := tls.Client(raw, cfg)
	tc.SetDeadline(time.Now().Add(rawTimeout))
	if err := tc.Handshake(); err != nil {
		raw.Close()
		return nil, err
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
		raw.Close()
		return nil, fmt.Errorf("negotiated %q; want h2", p)
	}
	if _, err := io.WriteString(tc, http2.ClientPreface); err != nil {
		raw.Close()
		return nil, err
	}
	a := &h2Attacker{nc: tc, fr: http2.NewFramer(tc, tc), next: 1}
	if err := a.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		raw.Close()
		return nil, err
	}
	return a, nil
}

// get opens a stream asking for path.
func (a *h2Attacker) get(path string) error {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", path}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	id := a.next
	a.next += 2
	return a.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
}

// closedByServer reports whether the server has closed nc: a read
// returns at once with EOF or a reset. Unread bytes from the server are
// skipped.
func closedByServer(nc net.Conn) bool {
	nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := io.Copy(io.Discard, nc)
	return err == nil || !isTimeout(err)
}

// TestHTTP2SlowStreams: with rest.tls, 4 source addresses holding 5
// HTTP/2 connections each (rest.max_conns 20, max_conns_per_peer 5), each
// opening 32 streams on /metrics whose answers it never reads, hold no
// more than the caps: at most 16 streams a connection (MaxConcurrentStreams),
// those beyond the first each taking a place (503 past the caps), and
// connections whose answers wait for their peer are shed for a newcomer
// and closed within 1.5 request timeouts. A newcomer gets in once a
// connection's answers have waited a second; from then on well-behaved
// HTTP/1.1 and HTTP/2 callers are served throughout; goroutines and
// memory stay bounded.
func TestHTTP2SlowStreams(t *testing.T) {
	testkit.SkipShort(t, "about 10 s of slow streams")
	pki := tlstest.New(t)
	files := pki.WriteFiles(t, t.TempDir())
	env := serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1013",
		"VESTA_REST_LISTEN", "127.0.0.1:0", "VESTA_METRICS_LISTEN", "127.0.0.1:0",
		"VESTA_REST_TLS_CERT", files.ServerCert, "VESTA_REST_TLS_KEY", files.ServerKey,
		"VESTA_REST_MAX_CONNS", "20", "VESTA_REST_MAX_CONNS_PER_PEER", "5")
	p := serve(t, "vesta", env)
	metrics := "http://" + serveAddr(t, p, "metrics")
	roots := &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}}
	before := sample(t, p, metrics, "", p.REST)
	t.Logf("before: %v", before)

	var mu sync.Mutex
	var conns []net.Conn
	holdAll(t, &conns, &mu)
	// Every connection first, then their streams: each connection's
	// first stream takes its place, the others are refused past the caps.
	t0 := time.Now()
	var attackers []*h2Attacker
	for peer := range 4 {
		for range 5 {
			a, err := dialH2Attacker(p.REST, fmt.Sprintf("127.0.0.%d", 2+peer), roots)
			if err != nil {
				t.Fatalf("attacker: %v", err)
			}
			attackers = append(attackers, a)
			mu.Lock()
			conns = append(conns, a.nc)
			mu.Unlock()
		}
	}
	for _, a := range attackers {
		for range 32 {
			if err := a.get("/metrics"); err != nil {
				t.Fatalf("attacker: %v", err)
			}
		}
	}
	time.Sleep(300 * time.Millisecond)
	peak := sample(t, p, metrics, "", p.REST)
	t.Logf("%d HTTP/2 connections x 32 streams on /metrics, never read, opened in %v: %v",
		len(attackers), time.Since(t0).Round(time.Millisecond), peak)

	h2client := &http.Client{Timeout: rawTimeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pki.Pool}, ForceAttemptHTTP2: true, DisableKeepAlives: true,
		DialContext: fromLocal("127.0.0.1").DialContext,
	}}
	defer h2client.CloseIdleConnections()
	h2call := func() error {
		resp, err := h2client.Get("https://" + p.REST + "/v1/id")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
			return fmt.Errorf("HTTP/%d %d", resp.ProtoMajor, resp.StatusCode)
		}
		return nil
	}
	// A newcomer gets in as soon as a connection's answers have waited
	// for its peer past a second: time the first.
	first := time.Now()
	for restCall(p.REST, "/v1/id", "", roots)() != nil {
		if time.Since(first) > 10*time.Second {
			t.Fatal("no newcomer served within 10s of the attack")
		}
		time.Sleep(20 * time.Millisecond)
	}
	lockout := time.Since(first)
	t.Logf("first newcomer served %v after the attack was in place", lockout.Round(time.Millisecond))
	if lockout > 3*time.Second {
		t.Errorf("newcomers locked out for %v; want about a second (a connection stalled)", lockout.Round(time.Millisecond))
	}
	// Connections stall (a second of answers unread) one after another, as
	// their first streams were answered; from then on every newcomer finds
	// one to shed.
	time.Sleep(time.Second)

	pr := startProbes(t, 100*time.Millisecond, map[string]func() error{
		"HTTP/1.1 /v1/id": restCall(p.REST, "/v1/id", "", roots),
		"HTTP/2 /v1/id":   h2call,
	})
	// The attackers keep their connections full of unread streams.
	stopRefill := make(chan struct{})
	var refill sync.WaitGroup
	refill.Go(func() {
		for {
			select {
			case <-stopRefill:
				return
			case <-time.After(200 * time.Millisecond):
			}
			for _, a := range attackers {
				a.get("/metrics")
			}
		}
	})
	time.Sleep(4 * time.Second)
	during := sample(t, p, metrics, "", p.REST)
	close(stopRefill)
	refill.Wait()
	failed := pr.end("HTTP/2 slow streams")
	t.Logf("during: %v", during)
	if failed > 0 {
		t.Errorf("%d well-behaved calls failed beside the slow HTTP/2 streams", failed)
	}
	shed := metricValue(t, metrics, "", `vesta_http_connections_shed_total{reason="max_conns"}`) +
		metricValue(t, metrics, "", `vesta_http_connections_shed_total{reason="max_conns_per_peer"}`)
	streams := metricValue(t, metrics, "", `vesta_http_streams_rejected_total{reason="max_conns"}`) +
		metricValue(t, metrics, "", `vesta_http_streams_rejected_total{reason="max_conns_per_peer"}`)
	t.Logf("connections shed %v, streams refused past the caps %v", shed, streams)
	if shed == 0 || streams == 0 {
		t.Errorf("shed %v, streams refused %v; want both counted", shed, streams)
	}
	// 20 connections x 16 streams at most, and the server's own.
	if limit := before.goroutines + 20*(16+4); peak.goroutines > limit || during.goroutines > limit {
		t.Errorf("goroutines %d at the attack's peak, %d during; want at most %d", peak.goroutines, during.goroutines, limit)
	}
	// The heap, not RSS: a race-enabled server's shadow memory is RSS too.
	if grown := max(peak.heapMB, during.heapMB) - before.heapMB; grown > 50 {
		t.Errorf("the heap grew by %.0f MB; want a bounded growth (under 50 MB)", grown)
	}
	// Every connection left unread is closed within 1.5 request timeouts
	// (7.5s) of its first stream, whatever it opens next.
	time.Sleep(4 * time.Second)
	closed := 0
	for _, a := range attackers {
		if closedByServer(a.nc) {
			closed++
		}
	}
	t.Logf("%d of %d attacking connections closed by the server %v after they began", closed, len(attackers), time.Since(t0).Round(time.Second))
	if closed != len(attackers) {
		t.Errorf("%d of %d unread HTTP/2 connections still open after %v; want all closed", len(attackers)-closed, len(attackers), time.Since(t0).Round(time.Second))
	}
	stopAll(t, p)
}

// TestSlowReadFlood: connections that ask for large answers and never
// read them (a receive buffer of 4 KiB) cannot make the server hold more
// than rest.max_unsent_bytes, nor a peer more than its share of it:
// 2 addresses x 600 connections asking for /metrics (open) and one with
// 600 asking for /v1/ids?count=10000 (with the token). The kernel holds
// little (TCP_NOTSENT_LOWAT), the server closes the connections whose
// answers waited longest, and a well-behaved caller is served throughout.
func TestSlowReadFlood(t *testing.T) {
	testkit.SkipShort(t, "about 15 s of flood")
	const token = "slow-read-flood-token-0123456789"
	env := serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1014",
		"VESTA_REST_LISTEN", "127.0.0.1:0", "VESTA_METRICS_LISTEN", "127.0.0.1:0", "VESTA_REST_TOKEN", token)
	p := serve(t, "vesta", env)
	metrics := "http://" + serveAddr(t, p, "metrics")
	before := sample(t, p, metrics, "", p.REST)
	t.Logf("before: %v", before)

	var mu sync.Mutex
	var conns []net.Conn
	holdAll(t, &conns, &mu)
	d := fromLocal("")
	d.Control = smallRcvBuf
	flood := []struct {
		from, req string
	}{
		{"127.0.0.2", "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"},
		{"127.0.0.3", "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"},
		{"127.0.0.4", "GET /v1/ids?count=10000 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token + "\r\n\r\n"},
	}
	pr := startProbes(t, 100*time.Millisecond, map[string]func() error{
		"REST /v1/ids?count=100": restCall(p.REST, "/v1/ids?count=100", token, nil),
	})
	t0 := time.Now()
	var peak usage
	var peakUnsent float64
	var wg sync.WaitGroup
	for _, f := range flood {
		for range 8 {
			wg.Go(func() {
				dd := *d
				dd.LocalAddr = &net.TCPAddr{IP: net.ParseIP(f.from)}
				for range 600 / 8 {
					nc, err := dd.Dial("tcp", p.REST)
					if err != nil {
						continue
					}
					io.WriteString(nc, f.req)
					mu.Lock()
					conns = append(conns, nc)
					mu.Unlock()
				}
			})
		}
	}
	sampler := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		for {
			u := sample(t, p, metrics, "", p.REST)
			peak.rssMB = max(peak.rssMB, u.rssMB)
			peak.heapMB = max(peak.heapMB, u.heapMB)
			peak.sendQMB = max(peak.sendQMB, u.sendQMB)
			peak.goroutines = max(peak.goroutines, u.goroutines)
			peak.fds = max(peak.fds, u.fds)
			peakUnsent = max(peakUnsent, metricValue(t, metrics, "", "vesta_http_unsent_bytes"))
			select {
			case <-sampler:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	wg.Wait()
	t.Logf("flood: %d connections asking for large answers, never read, opened in %v", len(conns), time.Since(t0).Round(time.Millisecond))
	time.Sleep(4 * time.Second)
	close(sampler)
	sampling.Wait()
	failed := pr.end("slow-read flood")
	unsent := metricValue(t, metrics, "", `vesta_http_connections_shed_total{reason="max_unsent_bytes_per_peer"}`)
	open := metricValue(t, metrics, "", "vesta_connections_open")
	t.Logf("peak: %v, answers held unread %.1f MB; connections shed past a peer's share of max_unsent_bytes %v, open after %v",
		peak, peakUnsent/(1<<20), unsent, open)
	if failed > 0 {
		t.Errorf("%d well-behaved calls failed during the slow-read flood", failed)
	}
	if unsent == 0 {
		t.Error("no connection shed past a peer's share of max_unsent_bytes")
	}
	// Three peers' shares (6.4 MiB each, one answer beyond), the kernel's
	// 16 KiB unsent per open connection, and the 1,800 connections
	// themselves (some 40 KB each) with the answers being rendered: the
	// review measured 120 MB of send queues and 230 MB of heap for 2,000.
	if peakUnsent > 3*(6.4*(1<<20)+256<<10) {
		t.Errorf("answers held unread peaked at %.1f MB; want at most three peers' shares of max_unsent_bytes", peakUnsent/(1<<20))
	}
	if peak.sendQMB > 40 {
		t.Errorf("send queues peaked at %.1f MB; want under 40", peak.sendQMB)
	}
	// The heap, not RSS: a race-enabled server's shadow memory is RSS too.
	if grown := peak.heapMB - before.heapMB; grown > 160 {
		t.Errorf("the heap grew by %.0f MB; want under 160", grown)
	}
	stopAll(t, p)
}

// TestMetricsPortAuth: with rest.metrics_auth, metrics.listen requires the
// token as REST's /metrics does: 401 with the JSON error without it.
func TestMetricsPortAuth(t *testing.T) {
	const token = "metrics-port-token-0123456789"
	p := serve(t, "vesta", tokenEnv(t, "1015", token, "VESTA_REST_LISTEN", "", "VESTA_METRICS_LISTEN", "127.0.0.1:0"))
	addr := serveAddr(t, p, "metrics")
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer " + token, http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("metrics port, Authorization %q: %d", tc.auth, resp.StatusCode)
		if resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: %d; want %d", tc.auth, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusUnauthorized && (!strings.Contains(string(b), `"unauthenticated"`) || strings.Contains(string(b), "vesta_")) {
			t.Errorf("401 body %q; want the JSON error and no metric", b[:min(len(b), 200)])
		}
	}
	http.DefaultClient.CloseIdleConnections()
	stopAll(t, p)
}

// TestIPv6PeerPrefix: connections from many addresses of one IPv6 /64
// count as one peer under central.max_conns_per_peer, so one host cannot
// be countless peers by its addresses; another /64 is another peer. The
// server runs on a test host (package netnstest) whose loopback takes the
// whole of 2001:db8::/32 as local addresses.
func TestIPv6PeerPrefix(t *testing.T) {
	n := netnstest.New(t)
	h := n.Host("v6")
	for _, args := range [][]string{
		{"ip", "-6", "addr", "add", "2001:db8:76::1/128", "dev", "lo", "nodad"},
		{"ip", "-6", "route", "add", "local", "2001:db8::/32", "dev", "lo"},
		{"sysctl", "-q", "-w", "net.ipv6.ip_nonlocal_bind=1"},
	} {
		if out, err := h.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	env := serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1016",
		"VESTA_CENTRAL_LISTEN", "[2001:db8:76::1]:0", "VESTA_METRICS_LISTEN", "[2001:db8:76::1]:0",
		"VESTA_CENTRAL_MAX_CONNS_PER_PEER", "4")
	p := launchWrapped(t, "vesta", env, h.Wrap())
	if err := p.waitServing(); err != nil {
		t.Fatal(err)
	}
	ctx := withTimeout(t, time.Minute)
	from := func(s string) net.Conn {
		nc, err := h.DialFrom(ctx, netip.MustParseAddr(s), "tcp", p.Central)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc
	}
	// 12 silent connections, each from another address of 2001:db8:76::/64.
	var silent []net.Conn
	for i := range 12 {
		silent = append(silent, from(fmt.Sprintf("2001:db8:76:0:%x::%x", i*4099, i+2)))
		time.Sleep(5 * time.Millisecond) // accepted in this order
	}
	time.Sleep(100 * time.Millisecond)
	var shedNow []int
	for i, nc := range silent {
		if closedByServer(nc) {
			shedNow = append(shedNow, i)
		}
	}
	t.Logf("12 addresses of one /64, max_conns_per_peer 4: connections %v closed by the server", shedNow)
	if len(shedNow) != 8 || shedNow[0] != 0 || shedNow[7] != 7 {
		t.Errorf("closed %v; want the 8 oldest: the /64 is one peer", shedNow)
	}
	// Another /64 is another peer: served, and sheds none of the first's.
	if err := rpcServed(from("2001:db8:77::5")); err != nil {
		t.Fatalf("a caller of another /64: %v", err)
	}
	for i, nc := range silent[8:] {
		if closedByServer(nc) {
			t.Errorf("connection %d of the first /64 closed by a caller of another", 8+i)
		}
	}
	hc := &http.Client{Timeout: rawTimeout, Transport: &http.Transport{DialContext: h.Dial, DisableKeepAlives: true}}
	defer hc.CloseIdleConnections()
	_, metrics, err := getBody(hc, "http://"+serveAddr(t, p, "metrics")+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	const series = `vesta_rpc_connections_shed_total{reason="max_conns_per_peer"} `
	if !strings.Contains(metrics, series+"8\n") {
		t.Errorf("want %s8; /metrics:\n%s", series, grepLines(metrics, "vesta_rpc_connections"))
	}
	stopAll(t, p)
}
