package conf_test

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"
)

// TestListenerTLSSuites: every TLS listener (central.tls, rest.tls)
// refuses a TLS 1.2 client that offers only CBC suites and takes one that
// offers an AEAD suite; TLS 1.3 is untouched.
func TestListenerTLSSuites(t *testing.T) {
	pki := tlstest.New(t)
	files := pki.WriteFiles(t, t.TempDir())
	c := conf.DefaultConfig()
	c.Central.TLS.Cert, c.Central.TLS.Key = files.ServerCert, files.ServerKey
	c.REST.TLS.Cert, c.REST.TLS.Key = files.ServerCert, files.ServerKey
	cc, err := c.CentralConfig()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	for name, srv := range map[string]*tls.Config{"central.tls": cc.TLS, "rest.tls": rc.TLS} {
		for _, tc := range []struct {
			name    string
			version uint16 // the client's highest
			suite   uint16 // the only one it offers; 0: its defaults
			ok      bool
		}{
			{"CBC SHA-1", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, false},
			{"CBC SHA-1 256", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, false},
			{"CBC SHA-256", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, false},
			{"AES-GCM", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, true},
			{"ChaCha20-Poly1305", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, true},
			{"TLS 1.3", tls.VersionTLS13, 0, true},
		} {
			client := &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1", MaxVersion: tc.version}
			if tc.suite != 0 {
				client.CipherSuites = []uint16{tc.suite}
			}
			state, err := handshake(srv, client)
			switch {
			case tc.ok && err != nil:
				t.Errorf("%s, client offering %s: %v; want served", name, tc.name, err)
			case !tc.ok && err == nil:
				t.Errorf("%s, client offering %s: served with %s; want refused", name, tc.name, tls.CipherSuiteName(state.CipherSuite))
			case tc.ok && state.Version != tc.version:
				t.Errorf("%s, client offering %s: version %x; want %x", name, tc.name, state.Version, tc.version)
			}
		}
	}
}

// handshake runs a TLS handshake between server and client configurations
// over a pipe and returns the client's view of it.
func handshake(server, client *tls.Config) (tls.ConnectionState, error) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, server)
		done <- s.Handshake()
		a.Close() // a refused client learns it here too
	}()
	c := tls.Client(b, client)
	err := c.Handshake()
	<-done
	return c.ConnectionState(), err
}
