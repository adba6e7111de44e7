package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"
)

func TestMutualTLS(t *testing.T) {
	pki := tlstest.New(t)
	f := startFakeOn(t, "127.0.0.1:0", core.Config{Machine: 1000}, 100, &tls.Config{
		Certificates: []tls.Certificate{pki.Server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pki.Pool,
	})
	tests := []struct {
		name string
		tls  *tls.Config
		ok   bool
	}{
		{"client certificate", &tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pki.Client}}, true},
		{"no client certificate", &tls.Config{RootCAs: pki.Pool}, false},
		{"unknown server CA", &tls.Config{Certificates: []tls.Certificate{pki.Client}}, false},
		{"plain TCP", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, f.addr)
			cfg.NoFallback = true
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
