package integration_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/tlstest"
)

// The locks of the listeners, tried from outside against a real `vesta
// serve`: the token limiter, RPC beside a locked REST, the metrics
// listener's Host check and TLS, and net/http's own 431.

// httpGet is one request on a new connection from from to addr (TLS with
// tlsCfg), with the given Host and Authorization ("" for none).
func httpGet(t *testing.T, addr, from, host, path, auth string, tlsCfg *tls.Config) (*http.Response, string) {
	t.Helper()
	nc, err := fromLocal(from).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if tlsCfg != nil {
		nc = tls.Client(nc, tlsCfg)
	}
	nc.SetDeadline(time.Now().Add(rawTimeout))
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
	if auth != "" {
		req += "Authorization: " + auth + "\r\n"
	}
	if _, err := io.WriteString(nc, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// tokenEnv is the environment of a server on machine ID machine whose
// REST token is token, required on the metrics listener too
// (rest.metrics_auth), then kv.
func tokenEnv(t testing.TB, machine, token string, kv ...string) map[string]string {
	return serverEnv(t, nil, "", 0, append([]string{"VESTA_MACHINE_ID", machine,
		"VESTA_REST_TOKEN", token, "VESTA_REST_METRICS_AUTH", "true"}, kv...)...)
}

// TestWrongTokensSpareTheRightOne: behind one address (a proxy, a NAT),
// a client sending wrong tokens gets 401, then 429 past the burst; a
// client with the right token from the same address is served every
// time, on REST and on the metrics listener alike.
func TestWrongTokensSpareTheRightOne(t *testing.T) {
	const token = "shared-address-token-0123456789"
	p := serve(t, "vesta", tokenEnv(t, "1019", token,
		"VESTA_REST_LISTEN", "127.0.0.1:0", "VESTA_METRICS_LISTEN", "127.0.0.1:0"))
	for _, port := range []struct{ name, addr, path string }{
		{"REST", p.REST, "/v1/id"},
		{"metrics", serveAddr(t, p, "metrics"), "/metrics"},
	} {
		codes := map[int]int{}
		for range 12 {
			resp, _ := httpGet(t, port.addr, "127.0.0.2", "localhost", port.path, "Bearer wrong-wrong-wrong-wrong", nil)
			codes[resp.StatusCode]++
		}
		t.Logf("%s: 12 wrong tokens from 127.0.0.2: %v", port.name, codes)
		if codes[http.StatusTooManyRequests] == 0 {
			t.Errorf("%s: 12 wrong tokens: %v; want 429 past the burst", port.name, codes)
		}
		for i := range 6 {
			if resp, body := httpGet(t, port.addr, "127.0.0.2", "localhost", port.path, "Bearer "+token, nil); resp.StatusCode != http.StatusOK {
				t.Errorf("%s: the right token from the same address, try %d: %d %.100s; want 200", port.name, i, resp.StatusCode, body)
			}
		}
		if resp, _ := httpGet(t, port.addr, "127.0.0.2", "localhost", port.path, "Bearer wrong-wrong-wrong-wrong", nil); resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("%s: a wrong token after them: %d; want 429 still", port.name, resp.StatusCode)
		}
	}
	stopAll(t, p)
}

// TestLockedRESTWarnsOfOpenRPC: the RPC protocol has no token; with REST
// locked by rest.token and RPC on the network without mutual TLS, an
// anonymous RPC caller issues IDs, and vesta says so at start. With
// central.tls.client_ca (RPC's credential) the anonymous caller is
// refused and there is no warning; on loopback there is none either.
func TestLockedRESTWarnsOfOpenRPC(t *testing.T) {
	const token = "locked-rest-token-0123456789"
	const warning = "central.listen issues IDs to anyone who reaches it"
	files := tlstest.New(t).WriteFiles(t, t.TempDir())
	for _, tc := range []struct {
		name    string
		env     []string
		warns   bool
		callsOK bool
	}{
		{"RPC on the network, plain", []string{"VESTA_CENTRAL_LISTEN", "0.0.0.0:0"}, true, true},
		{"RPC on the network, mutual TLS", []string{"VESTA_CENTRAL_LISTEN", "0.0.0.0:0",
			"VESTA_CENTRAL_TLS_CERT", files.ServerCert, "VESTA_CENTRAL_TLS_KEY", files.ServerKey, "VESTA_CENTRAL_TLS_CLIENT_CA", files.CA}, false, false},
		{"RPC on loopback", []string{"VESTA_CENTRAL_LISTEN", "127.0.0.1:0"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := serverEnv(t, nil, "", 0, append([]string{"VESTA_MACHINE_ID", "1020",
				"VESTA_REST_LISTEN", "127.0.0.1:0", "VESTA_REST_TOKEN", token}, tc.env...)...)
			p := serve(t, "vesta", env)
			_, port, _ := net.SplitHostPort(p.Central)
			err := rpcCall(net.JoinHostPort("127.0.0.1", port))()
			warned := strings.Contains(p.output(), warning)
			t.Logf("anonymous RPC call: %v; warned at start: %v", err, warned)
			if (err == nil) != tc.callsOK {
				t.Errorf("anonymous RPC call: %v; want served %v", err, tc.callsOK)
			}
			if warned != tc.warns {
				t.Errorf("warned %v; want %v:\n%s", warned, tc.warns, p.tail(10))
			}
			stopAll(t, p)
		})
	}
}

// TestMetricsListenerLocks: the metrics listener answers only the Host
// names REST does (a DNS-rebinding page reads no series: 421 with REST's
// JSON error), speaks HTTPS with metrics.tls, and warns at start when
// rest.metrics_auth would send the token in clear to it on the network.
func TestMetricsListenerLocks(t *testing.T) {
	const token = "metrics-tls-token-0123456789"
	pki := tlstest.New(t)
	files := pki.WriteFiles(t, t.TempDir())
	const warning = "each scrape sends rest.token in clear"

	p := serve(t, "vesta", serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1021", "VESTA_METRICS_LISTEN", "127.0.0.1:0"))
	addr := serveAddr(t, p, "metrics")
	for _, tc := range []struct {
		host string
		want int
	}{{"evil.example", http.StatusMisdirectedRequest}, {"evil.example:80", http.StatusMisdirectedRequest}, {"localhost", http.StatusOK}, {"127.0.0.1:1", http.StatusOK}} {
		resp, body := httpGet(t, addr, "127.0.0.1", tc.host, "/metrics", "", nil)
		t.Logf("metrics listener, Host %s: %d", tc.host, resp.StatusCode)
		if resp.StatusCode != tc.want {
			t.Errorf("Host %s: %d; want %d", tc.host, resp.StatusCode, tc.want)
		}
		if tc.want != http.StatusOK && (strings.Contains(body, "vesta_") || !strings.Contains(body, `"misdirected_request"`)) {
			t.Errorf("Host %s: body %.200s; want REST's JSON error and no series", tc.host, body)
		}
	}
	stopAll(t, p)

	p = serve(t, "vesta", tokenEnv(t, "1021", token, "VESTA_METRICS_LISTEN", "0.0.0.0:0"))
	if !strings.Contains(p.output(), warning) {
		t.Errorf("metrics_auth with metrics.listen plain on the network: no warning:\n%s", p.tail(10))
	}
	stopAll(t, p)

	p = serve(t, "vesta", tokenEnv(t, "1021", token, "VESTA_METRICS_LISTEN", "0.0.0.0:0",
		"VESTA_METRICS_TLS_CERT", files.ServerCert, "VESTA_METRICS_TLS_KEY", files.ServerKey))
	if strings.Contains(p.output(), warning) {
		t.Errorf("metrics.tls set: warned of a token in clear:\n%s", p.tail(10))
	}
	_, port, _ := net.SplitHostPort(serveAddr(t, p, "metrics"))
	addr = net.JoinHostPort("127.0.0.1", port)
	roots := &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1"}
	if resp, body := httpGet(t, addr, "127.0.0.1", "localhost", "/metrics", "Bearer "+token, roots); resp.StatusCode != http.StatusOK || !strings.Contains(body, "vesta_build_info") {
		t.Errorf("an HTTPS scrape with the token: %d %.100s; want 200 and the series", resp.StatusCode, body)
	}
	if resp, _ := httpGet(t, addr, "127.0.0.1", "localhost", "/metrics", "", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP to metrics.tls: %d; want net/http's 400", resp.StatusCode)
	}
	stopAll(t, p)
}

// TestHeaderTooLargeIsJSON: headers past what net/http reads get 431 in
// REST's JSON error shape, not net/http's plain text, on the REST port and
// on the metrics listener (plain HTTP/1.1).
func TestHeaderTooLargeIsJSON(t *testing.T) {
	p := serve(t, "vesta", serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1022",
		"VESTA_REST_LISTEN", "127.0.0.1:0", "VESTA_METRICS_LISTEN", "127.0.0.1:0"))
	for _, port := range []struct{ name, addr, path string }{
		{"REST", p.REST, "/v1/id"},
		{"metrics", serveAddr(t, p, "metrics"), "/metrics"},
	} {
		nc, err := net.DialTimeout("tcp", port.addr, rawTimeout)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(rawTimeout))
		go io.WriteString(nc, "GET "+port.path+" HTTP/1.1\r\nHost: localhost\r\nCookie: "+strings.Repeat("a", 40<<10)+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			t.Fatalf("%s: %v", port.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		nc.Close()
		var e struct {
			Error struct{ Code, Message string }
		}
		t.Logf("%s, 40 KiB of headers: %d %s %s", port.name, resp.StatusCode, resp.Header.Get("Content-Type"), strings.TrimSpace(string(b)))
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != "application/json" ||
			json.Unmarshal(b, &e) != nil || e.Error.Code != "invalid_argument" || !strings.Contains(e.Error.Message, "headers") {
			t.Errorf("%s: %d %q %q; want 431 with the JSON error body", port.name, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	stopAll(t, p)
}
