package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
)

// testPKI is a CA with one server certificate (for 127.0.0.1) and one
// client certificate.
type testPKI struct {
	pool           *x509.CertPool
	server, client tls.Certificate
}

func newPKI(t testing.TB) testPKI {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, usage x509.ExtKeyUsage) tls.Certificate {
		k := key()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return testPKI{pool: pool, server: leaf(2, x509.ExtKeyUsageServerAuth), client: leaf(3, x509.ExtKeyUsageClientAuth)}
}

func TestMutualTLS(t *testing.T) {
	pki := newPKI(t)
	f := startFakeOn(t, "127.0.0.1:0", 1000, 100, &tls.Config{
		Certificates: []tls.Certificate{pki.server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pki.pool,
	})
	tests := []struct {
		name string
		tls  *tls.Config
		ok   bool
	}{
		{"client certificate", &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}}, true},
		{"no client certificate", &tls.Config{RootCAs: pki.pool}, false},
		{"unknown server CA", &tls.Config{Certificates: []tls.Certificate{pki.client}}, false},
		{"plain TCP", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := testConfig(t, f.addr)
			cfg.Fallback = false
			cfg.Timeout = 500 * time.Millisecond
			cfg.TLS = tt.tls
			c := newClient(t, cfg)
			id, err := c.NextID(context.Background())
			if tt.ok {
				if err != nil || c.Explain(id).Machine != 1000 {
					t.Fatalf("NextID over mTLS = %d, %v", id, err)
				}
				return
			}
			if !errors.Is(err, client.ErrUnavailable) {
				t.Fatalf("NextID = %v; want ErrUnavailable", err)
			}
		})
	}
}
