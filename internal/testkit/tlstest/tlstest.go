package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a CA with one server and one client certificate.
type PKI struct {
	Pool   *x509.CertPool // holds the CA: for RootCAs and ClientCAs
	Server tls.Certificate
	Client tls.Certificate

	caDER []byte
}

// New makes a PKI; it fails tb on error.
func New(tb testing.TB) *PKI {
	tb.Helper()
	now := time.Now()
	caKey := newKey(tb)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vesta test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, ca := sign(tb, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	leaf := func(serial int64, usage x509.ExtKeyUsage) tls.Certificate {
		k := newKey(tb)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "vesta test"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, parsed := sign(tb, tmpl, ca, &k.PublicKey, caKey)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k, Leaf: parsed}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &PKI{Pool: pool, Server: leaf(2, x509.ExtKeyUsageServerAuth),
		Client: leaf(3, x509.ExtKeyUsageClientAuth), caDER: caDER}
}

// sign makes tmpl's certificate for pub, signed by parent's key signer,
// and parses it back.
func sign(tb testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) ([]byte, *x509.Certificate) {
	tb.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return der, cert
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// Files are the PEM files WriteFiles wrote.
type Files struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// WriteFiles writes the PKI as PEM files into dir, for configurations that
// take file names.
func (p *PKI) WriteFiles(tb testing.TB, dir string) Files {
	tb.Helper()
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			tb.Fatal(err)
		}
		return path
	}
	key := func(c tls.Certificate) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
		if err != nil {
			tb.Fatal(err)
		}
		return der
	}
	return Files{
		CA:         write("ca.pem", "CERTIFICATE", p.caDER),
		ServerCert: write("server.pem", "CERTIFICATE", p.Server.Certificate[0]),
		ServerKey:  write("server-key.pem", "PRIVATE KEY", key(p.Server)),
		ClientCert: write("client.pem", "CERTIFICATE", p.Client.Certificate[0]),
		ClientKey:  write("client-key.pem", "PRIVATE KEY", key(p.Client)),
	}
}
