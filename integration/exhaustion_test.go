package integration_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/internal/testkit"
)

// attackConns is the audit's attack: this many TCP connections that send
// nothing, opened as fast as the machine allows (0.5 s in the audit).
// They come from 11 loopback addresses, below the per-peer cap each, so
// that the server-wide cap (10000) is what they hit; the well-behaved
// client dials from 127.0.0.1, which none of them uses.
const attackConns = 10050

// TestConnectionExhaustion: after 10,050 silent connections to each port
// of a real `vesta serve` (default caps), a new well-behaved client is
// served at once, on RPC and on REST: the server sheds the oldest silent
// connection to admit it. The client's latency is logged and asserted
// loosely (a hang, not a speed: the machine is shared); the audit's goal
// is one second.
func TestConnectionExhaustion(t *testing.T) {
	testkit.SkipShort(t, "20,100 descriptors and about a minute")
	need := uint64(attackConns + 200)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < need && lim.Max >= need {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	if lim.Cur < need {
		t.Skipf("RLIMIT_NOFILE %d (hard %d): the attack needs %d descriptors in this process and in the server", lim.Cur, lim.Max, need)
	}
	p := serve(t, "vesta", serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1011", "VESTA_REST_LISTEN", "127.0.0.1:0"))

	for _, port := range []struct {
		name, addr string
		served     func(nc net.Conn) error
	}{
		{"rpc", p.Central, rpcServed},
		{"rest", p.REST, restServed},
	} {
		t.Run(port.name, func(t *testing.T) {
			conns, took := attack(t, port.addr)
			defer func() {
				for _, nc := range conns {
					nc.Close()
				}
			}()
			t.Logf("%s: %d silent connections opened in %v", port.name, len(conns), took.Round(time.Millisecond))
			t0 := time.Now()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, Timeout: rawTimeout}
			nc, err := d.Dial("tcp", port.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if err := port.served(nc); err != nil {
				t.Fatalf("%s: the well-behaved client was not served after the attack: %v", port.name, err)
			}
			lat := time.Since(t0)
			t.Logf("%s: well-behaved client served in %v (goal: 1s)", port.name, lat.Round(time.Microsecond))
			if lat > 10*time.Second {
				t.Errorf("%s: served after %v; want about a second at most", port.name, lat)
			}
		})
	}
	_, metrics, err := getBody(http.DefaultClient, "http://"+p.REST+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		`vesta_rpc_connections_shed_total{reason="max_conns"}`,
		`vesta_http_connections_shed_total{reason="max_conns"}`,
	} {
		if !strings.Contains(metrics, name+" ") || strings.Contains(metrics, name+" 0\n") {
			t.Errorf("%s: not counted; /metrics:\n%s", name, grepLines(metrics, "connections"))
		}
	}
	stopAll(t, p)
}

// attack opens attackConns connections to addr from 127.0.0.2-12 and
// returns them.
func attack(t *testing.T, addr string) ([]net.Conn, time.Duration) {
	t.Helper()
	const workers = 64
	conns := make([]net.Conn, attackConns)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	t0 := time.Now()
	for w := range workers {
		wg.Go(func() {
			for i := w; i < attackConns; i += workers {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%11))}, Timeout: rawTimeout}
				nc, err := d.Dial("tcp", addr)
				if err != nil {
					errs <- fmt.Errorf("attack connection %d: %w", i, err)
					return
				}
				conns[i] = nc
			}
		})
	}
	wg.Wait()
	took := time.Since(t0)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var open []net.Conn
	for _, nc := range conns {
		if nc != nil {
			open = append(open, nc)
		}
	}
	return open, took
}

// rpcServed makes one Vesta.GenID call on nc.
func rpcServed(nc net.Conn) error {
	nc.SetDeadline(time.Now().Add(rawTimeout))
	req, err := wire.NewEncoder().AppendRequest(nil, 1, wire.ProcGenID, nil)
	if err != nil {
		return err
	}
	if _, err := nc.Write(req); err != nil {
		return err
	}
	frame, err := wire.NewReader(nc, 1024).Next()
	if err != nil {
		return err
	}
	resp, err := wire.DecodeResponse(frame)
	if err != nil {
		return err
	}
	if resp.Error != nil {
		return resp.Error
	}
	return nil
}

// restServed makes one GET /v1/id on nc.
func restServed(nc net.Conn) error {
	nc.SetDeadline(time.Now().Add(rawTimeout))
	if _, err := io.WriteString(nc, "GET /v1/id HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
