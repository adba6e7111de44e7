package integration_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"
)

// Half-sent requests: connections that always hold part of a request, so
// that the server waits on them mid-request (a frame's rest, a promised
// body) and, without the owed time of package connlimit, counts them as
// busy and never sheds them. Each attacker redials what the server closes.

// halfSentRPC keeps one RPC connection from from to addr mid-frame until
// ctx ends: a Vesta.GenID frame and the first byte of the next, that frame
// completed every every with the first byte of the next, and so on; a
// connection the server closes is redialled at once (within 100 ms), so
// that the flood takes back what is shed. held counts the connections
// open.
func halfSentRPC(ctx context.Context, addr, from string, every time.Duration, held *atomic.Int64) {
	enc := wire.NewEncoder()
	frame, err := enc.AppendRequest(nil, 1, wire.ProcGenID, nil)
	if err != nil {
		panic(err)
	}
	for ctx.Err() == nil {
		nc, err := fromLocal(from).DialContext(ctx, "tcp", addr)
		if err != nil {
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		held.Add(1)
		r := wire.NewReader(nc, 1024)
		stop := context.AfterFunc(ctx, func() { nc.Close() })
		out := append(append([]byte(nil), frame...), frame[0])
		for ctx.Err() == nil {
			nc.SetDeadline(time.Now().Add(every + rawTimeout))
			if _, err := nc.Write(out); err != nil {
				break
			}
			if _, err := r.Next(); err != nil {
				break
			}
			if !waitOpen(ctx, nc, every) {
				break
			}
			out = append(append(out[:0], frame[1:]...), frame[0]) // the rest, and the next's first byte
		}
		stop()
		nc.Close()
		held.Add(-1)
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// halfSentREST keeps one keep-alive HTTP/1.1 connection from from to addr
// (TLS with tlsCfg) mid-request until ctx ends: GET /healthz with
// Content-Length: 1, its byte every later with the next such request;
// redialled at once when the server closes it.
func halfSentREST(ctx context.Context, addr, from string, tlsCfg *tls.Config, every time.Duration, held *atomic.Int64) {
	const req = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n\r\n"
	for ctx.Err() == nil {
		nc, err := fromLocal(from).DialContext(ctx, "tcp", addr)
		if err != nil {
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		if tlsCfg != nil {
			nc = tls.Client(nc, tlsCfg)
		}
		held.Add(1)
		stop := context.AfterFunc(ctx, func() { nc.Close() })
		br := bufio.NewReader(nc)
		out := req
		for first := true; ctx.Err() == nil; first = false {
			nc.SetDeadline(time.Now().Add(every + rawTimeout))
			if _, err := io.WriteString(nc, out); err != nil {
				break
			}
			if !first { // the previous request's answer follows its body
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					break
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			// Nothing comes before the body's byte: a read that ends
			// sooner than every is the server closing.
			nc.SetReadDeadline(time.Now().Add(every))
			if _, err := br.Peek(1); !isTimeout(err) || ctx.Err() != nil {
				break
			}
			out = "x" + req
		}
		stop()
		nc.Close()
		held.Add(-1)
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// waitOpen waits d on nc, which the server should leave silent: it
// reports false when the server closes nc first (or ctx ends).
func waitOpen(ctx context.Context, nc net.Conn, d time.Duration) bool {
	nc.SetReadDeadline(time.Now().Add(d))
	_, err := nc.Read(make([]byte, 1))
	return isTimeout(err) && ctx.Err() == nil
}

// sleepCtx sleeps d, or less if ctx ends first; it reports whether ctx
// is still going.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// halfSentFlood runs n attackers of one kind spread over the addresses
// 127.0.0.2 to 127.0.0.(1+peers), and returns its stop.
func halfSentFlood(n, peers int, attacker func(ctx context.Context, from string, held *atomic.Int64)) (held *atomic.Int64, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	held = new(atomic.Int64)
	var wg sync.WaitGroup
	for i := range n {
		from := fmt.Sprintf("127.0.0.%d", 2+i%peers)
		wg.Go(func() { attacker(ctx, from, held) })
	}
	return held, func() { cancel(); wg.Wait() }
}

// probeFlood runs the probes for d every 100 ms and fails t when fewer
// than 90% of any probe's calls were answered.
func probeFlood(t *testing.T, phase string, d time.Duration, calls map[string]func() error) {
	t.Helper()
	pr := startProbes(t, 100*time.Millisecond, calls)
	time.Sleep(d)
	pr.end(phase)
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for name := range calls {
		ok, failed := len(pr.lat[name]), len(pr.errs[name])
		if ok+failed == 0 || float64(ok) < 0.9*float64(ok+failed) {
			t.Errorf("%s: %s answered %d of %d fresh probes; want at least 90%%", phase, name, ok, ok+failed)
		}
	}
}

// TestHalfSentFloodLowNofile: under `ulimit -n 256` (a budget of some 180
// connections), 200 RPC connections from five addresses that each hold
// half a frame (a frame completed every 8 s, the next begun at once),
// then 180 keep-alive HTTPS connections that each promise a one-byte body
// and send it 4 s later with the next such request (rest.token set, no
// token sent), lock out no one: fresh probes on REST /v1/id (with the
// token), RPC, /readyz and the metrics listener are answered, at least 9
// of 10 each, throughout each flood.
func TestHalfSentFloodLowNofile(t *testing.T) {
	testkit.SkipShort(t, "about 40 s of floods")
	const token = "half-sent-flood-token-0123456789"
	pki := tlstest.New(t)
	files := pki.WriteFiles(t, t.TempDir())
	env := serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1017",
		"VESTA_REST_LISTEN", "127.0.0.1:0", "VESTA_METRICS_LISTEN", "127.0.0.1:0",
		"VESTA_REST_TLS_CERT", files.ServerCert, "VESTA_REST_TLS_KEY", files.ServerKey,
		"VESTA_REST_TOKEN", token)
	p := launchWrapped(t, "vesta", env, []string{"sh", "-c", `ulimit -n 256 && exec "$0" "$@"`})
	if err := p.waitServing(); err != nil {
		t.Fatal(err)
	}
	metricsAddr := serveAddr(t, p, "metrics")
	metrics := "http://" + metricsAddr
	roots := &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}}
	t.Logf("connection budget %v of RLIMIT_NOFILE 256", metricValue(t, metrics, "", "vesta_connections_budget"))
	calls := map[string]func() error{
		"REST /v1/id":  restCall(p.REST, "/v1/id", token, roots),
		"RPC GenID":    rpcCall(p.Central),
		"REST /readyz": restCall(p.REST, "/readyz", "", roots),
		"metrics":      restCall(metricsAddr, "/metrics", "", nil),
	}

	held, stop := halfSentFlood(200, 5, func(ctx context.Context, from string, held *atomic.Int64) {
		halfSentRPC(ctx, p.Central, from, 8*time.Second, held)
	})
	time.Sleep(3 * time.Second) // every connection in, and owing a second
	t.Logf("RPC flood: %d connections holding half a frame", held.Load())
	probeFlood(t, "half-frame flood", 10*time.Second, calls)
	stop()
	logSheds(t, metrics, "vesta_rpc")

	held, stop = halfSentFlood(180, 5, func(ctx context.Context, from string, held *atomic.Int64) {
		halfSentREST(ctx, p.REST, from, roots, 4*time.Second, held)
	})
	time.Sleep(3 * time.Second)
	t.Logf("REST flood: %d connections awaiting their bodies", held.Load())
	probeFlood(t, "awaited-body flood", 10*time.Second, calls)
	stop()
	logSheds(t, metrics, "vesta_http")
	if during := sample(t, p, metrics, "", p.Central, p.REST); during.fds >= 256 {
		t.Errorf("%d descriptors open; want fewer than the limit of 256", during.fds)
	}
	stopAll(t, p)
}

// TestHalfSentFloodAtCaps: at a normal descriptor limit each listener's
// own cap is the limit: with central and rest max_conns 500 and
// max_conns_per_peer 100, five addresses × 100 connections holding half a
// frame on RPC and five × 100 awaiting their bodies on REST, at once,
// lock out no one: fresh probes on REST /v1/id, RPC and /readyz are
// answered, at least 9 of 10 each.
func TestHalfSentFloodAtCaps(t *testing.T) {
	testkit.SkipShort(t, "about 15 s of floods")
	env := serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1018",
		"VESTA_REST_LISTEN", "127.0.0.1:0", "VESTA_METRICS_LISTEN", "127.0.0.1:0",
		"VESTA_CENTRAL_MAX_CONNS", "500", "VESTA_CENTRAL_MAX_CONNS_PER_PEER", "100",
		"VESTA_REST_MAX_CONNS", "500", "VESTA_REST_MAX_CONNS_PER_PEER", "100")
	p := serve(t, "vesta", env)
	metrics := "http://" + serveAddr(t, p, "metrics")
	rpcHeld, stopRPC := halfSentFlood(500, 5, func(ctx context.Context, from string, held *atomic.Int64) {
		halfSentRPC(ctx, p.Central, from, 8*time.Second, held)
	})
	restHeld, stopREST := halfSentFlood(500, 5, func(ctx context.Context, from string, held *atomic.Int64) {
		halfSentREST(ctx, p.REST, from, nil, 4*time.Second, held)
	})
	time.Sleep(4 * time.Second)
	t.Logf("%d RPC connections holding half a frame, %d REST ones awaiting their bodies; the server counts %v RPC and %v in all",
		rpcHeld.Load(), restHeld.Load(), metricValue(t, metrics, "", "vesta_rpc_connections"), metricValue(t, metrics, "", "vesta_connections_open"))
	probeFlood(t, "half-sent floods at the caps", 10*time.Second, map[string]func() error{
		"REST /v1/id":  restCall(p.REST, "/v1/id", "", nil),
		"RPC GenID":    rpcCall(p.Central),
		"REST /readyz": restCall(p.REST, "/readyz", "", nil),
	})
	stopRPC()
	stopREST()
	logSheds(t, metrics, "vesta_rpc")
	logSheds(t, metrics, "vesta_http")
	stopAll(t, p)
}

// logSheds logs a listener's connections shed and refused by reason.
func logSheds(t *testing.T, metrics, prefix string) {
	t.Helper()
	for _, kind := range []string{"shed", "rejected"} {
		var line string
		for _, r := range []string{"max_conns", "max_conns_per_peer", "fd_budget"} {
			line += fmt.Sprintf(" %s %v", r, metricValue(t, metrics, "", fmt.Sprintf(`%s_connections_%s_total{reason="%s"}`, prefix, kind, r)))
		}
		t.Logf("%s connections %s:%s", prefix, kind, line)
	}
}
