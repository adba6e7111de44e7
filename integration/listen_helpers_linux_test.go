package integration_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The helpers of the listener-policy attacks (listen_linux_test.go): what
// a server holds, read from /proc and its metrics, and well-behaved
// callers that time their answers while an attack runs.

// usage is what a server holds at one moment.
type usage struct {
	rssMB      float64 // resident memory (VmRSS)
	heapMB     float64 // the Go heap's spans in use (go_memstats_heap_inuse_bytes)
	fds        int     // open descriptors (/proc/PID/fd)
	goroutines int     // go_goroutines of its metrics
	sendQMB    float64 // bytes in its sockets' send queues (tx_queue), on its ports
}

func (u usage) String() string {
	return fmt.Sprintf("RSS %.1f MB, heap in use %.1f MB, %d fds, %d goroutines, send queues %.2f MB",
		u.rssMB, u.heapMB, u.fds, u.goroutines, u.sendQMB)
}

// sample reads p's usage; metrics is the base URL of a /metrics to read
// go_goroutines from (the metrics listener, so that the REST caps under
// attack do not stand in the way), token its bearer token or "".
func sample(t testing.TB, p *proc, metrics, token string, ports ...string) usage {
	t.Helper()
	pid := p.run.Pid()
	var u usage
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for l := range strings.Lines(string(b)) {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				u.rssMB = kb / 1024
			}
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		u.fds = len(fds)
	}
	u.goroutines = int(metricValue(t, metrics, token, "go_goroutines"))
	u.heapMB = metricValue(t, metrics, token, "go_memstats_heap_inuse_bytes") / (1 << 20)
	u.sendQMB = float64(sendQueue(ports...)) / (1 << 20)
	return u
}

// metricValue returns the value of the first series named name (with its
// labels, if given) of the /metrics at base; -1 when it cannot be read.
func metricValue(t testing.TB, base, token, series string) float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// sendQueue sums the send queues (tx_queue: bytes not yet acknowledged)
// of the sockets bound to the given host:port addresses, from /proc/net.
func sendQueue(addrs ...string) int64 {
	ports := map[string]bool{}
	for _, a := range addrs {
		if _, port, err := net.SplitHostPort(a); err == nil {
			p, _ := strconv.Atoi(port)
			ports[fmt.Sprintf("%04X", p)] = true
		}
	}
	var total int64
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for l := range strings.Lines(string(b)) {
			fs := strings.Fields(l)
			if len(fs) < 5 || fs[0] == "sl" {
				continue
			}
			local := fs[1]
			if !ports[local[strings.LastIndexByte(local, ':')+1:]] {
				continue
			}
			tx, _, _ := strings.Cut(fs[4], ":")
			n, _ := strconv.ParseInt(tx, 16, 64)
			total += n
		}
	}
	return total
}

// probes are well-behaved callers, each making one call at a time on a
// new connection every interval until stop, timing the answers.
type probes struct {
	t    testing.TB
	stop chan struct{}
	wg   sync.WaitGroup

	mu   sync.Mutex
	lat  map[string][]time.Duration
	errs map[string][]string
}

// startProbes runs each call of calls every interval.
func startProbes(t testing.TB, interval time.Duration, calls map[string]func() error) *probes {
	p := &probes{t: t, stop: make(chan struct{}), lat: map[string][]time.Duration{}, errs: map[string][]string{}}
	for name, call := range calls {
		p.wg.Go(func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				t0 := time.Now()
				err := call()
				d := time.Since(t0)
				p.mu.Lock()
				if err != nil {
					p.errs[name] = append(p.errs[name], fmt.Sprintf("%v after %v", err, d.Round(time.Millisecond)))
				} else {
					p.lat[name] = append(p.lat[name], d)
				}
				p.mu.Unlock()
				select {
				case <-p.stop:
					return
				case <-tick.C:
				}
			}
		})
	}
	return p
}

// end stops the probes, logs their latencies and returns the failures.
func (p *probes) end(phase string) int {
	p.t.Helper()
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	failed := 0
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for n := range p.lat {
			seen[n] = true
		}
		for n := range p.errs {
			seen[n] = true
		}
		for n := range seen {
			if !yield(n) {
				return
			}
		}
	}) {
		lat := slices.Clone(p.lat[name])
		slices.Sort(lat)
		q := func(f float64) time.Duration {
			if len(lat) == 0 {
				return 0
			}
			return lat[min(len(lat)-1, int(f*float64(len(lat))))].Round(10 * time.Microsecond)
		}
		p.t.Logf("%s: well-behaved %s: %d answered (p50 %v, p99 %v, max %v), %d failed",
			phase, name, len(lat), q(0.5), q(0.99), q(1), len(p.errs[name]))
		for _, e := range p.errs[name][:min(3, len(p.errs[name]))] {
			p.t.Logf("%s: %s failed: %s", phase, name, e)
		}
		failed += len(p.errs[name])
	}
	return failed
}

// fromLocal dials from IP from (127/8 serves as many peers as a test
// needs on Linux loopback).
func fromLocal(from string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: rawTimeout}
}

// restCall is GET path with token on a new connection to addr, which must
// answer 200.
func restCall(addr, path, token string, tlsCfg *tls.Config) func() error {
	return func() error {
		nc, err := fromLocal("127.0.0.1").Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer nc.Close()
		if tlsCfg != nil {
			nc = tls.Client(nc, tlsCfg)
		}
		nc.SetDeadline(time.Now().Add(rawTimeout))
		req := "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
		if token != "" {
			req += "Authorization: Bearer " + token + "\r\n"
		}
		if _, err := io.WriteString(nc, req+"\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
}

// rpcCall is a Vesta.GenID on a new connection to addr.
func rpcCall(addr string) func() error {
	return func() error {
		nc, err := fromLocal("127.0.0.1").Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer nc.Close()
		return rpcServed(nc)
	}
}

// smallRcvBuf makes a dialled socket's receive buffer as small as the
// kernel allows, so that a peer that does not read is seen at once: the
// server's answers stay in the server.
func smallRcvBuf(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	})
	if err != nil {
		return err
	}
	return serr
}

// serveAddr returns an address of p's "serving" record ("metrics").
func serveAddr(t testing.TB, p *proc, key string) string {
	t.Helper()
	r, err := p.waitRecord(time.Second, msgIs("serving"))
	if err != nil {
		t.Fatal(err)
	}
	return r.str(key)
}

// holdAll keeps conns until the test ends.
func holdAll(t testing.TB, conns *[]net.Conn, mu *sync.Mutex) {
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range *conns {
			nc.Close()
		}
	})
}

// withTimeout is a context ended after d, cancelled with the test.
func withTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
