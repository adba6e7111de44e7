package conf_test

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/rest"
)

// TestPackagesJudge: a key's limits are its package's. A value the
// package refuses is reported under the key and matches the package's
// sentinel as well as ErrConfig; a value the package takes (0 for its
// default) passes.
func TestPackagesJudge(t *testing.T) {
	bad := []struct {
		key  string
		set  func(*conf.Config)
		want error
	}{
		{"central.max_batch", func(c *conf.Config) { c.Central.MaxBatch = 1_000_001 }, central.ErrConfig},
		{"central.read_timeout", func(c *conf.Config) { c.Central.ReadTimeout = 25 * time.Hour }, central.ErrConfig},
		{"rest.token", func(c *conf.Config) { c.REST.Token = "é" }, rest.ErrConfig},
		{"rest.allowed_hosts", func(c *conf.Config) { c.REST.AllowedHosts = []string{"*"} }, rest.ErrConfig},
		{"client.retries", func(c *conf.Config) { c.Client.Retries = 11 }, client.ErrConfig},
		{"machine.redis.key_prefix", func(c *conf.Config) { c.Machine.Redis.KeyPrefix = "a{b}" }, machineid.ErrConfig},
		{"machine.redis.lease_ttl", func(c *conf.Config) { c.Machine.Redis.LeaseTTL = time.Millisecond }, machineid.ErrConfig},
		{"id.max_borrow", func(c *conf.Config) { c.ID.MaxBorrow = 25 * time.Hour }, core.ErrConfig},
	}
	for _, tc := range bad {
		c := conf.DefaultConfig()
		tc.set(&c)
		err := c.Validate()
		kes := conf.KeyErrors(err)
		if len(kes) != 1 || kes[0].Key != tc.key || !errors.Is(err, conf.ErrConfig) || !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate = %v; want one error naming it, matching ErrConfig and %v", tc.key, err, tc.want)
		}
	}

	c := conf.DefaultConfig()
	c.Central.MaxBatch, c.Central.MaxConns, c.Central.IdleTimeout = 0, 0, 0
	c.REST.MaxWaitingIDs, c.Client.Timeout, c.TimeGuard.GuardWindow, c.Machine.Redis.LeaseTTL = 0, 0, 0, 0
	if err := c.Validate(); err != nil {
		t.Errorf("zeros (each package's default): %v", err)
	}
	c.Machine.Redis.LeaseTTL = 100 * time.Millisecond // machineid's floor
	if err := c.Validate(); err != nil {
		t.Errorf("lease_ttl 100ms: %v", err)
	}
}

// TestCentralAndRESTConfig: the conversions copy every key, give REST
// central.max_batch, read the TLS files, and refuse an invalid Config.
func TestCentralAndRESTConfig(t *testing.T) {
	c := conf.DefaultConfig()
	c.Central.MaxBatch, c.Central.MaxRequestBytes, c.Central.MaxConns = 500, 4096, 7
	c.Central.MaxWaitingIDs, c.Central.MaxWaitingCalls = 11, 13
	c.Central.IdleTimeout, c.Central.ReadTimeout = time.Minute, time.Second
	c.REST.Token, c.REST.MaxWaitingIDs, c.REST.MaxWaitingCalls = "tok-tok-tok-tok-tok", 17, 19
	c.REST.AllowedHosts = []string{"*"} // valid with the token
	cc, err := c.CentralConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cc.MaxBatch != 500 || cc.MaxRequestBytes != 4096 || cc.MaxConns != 7 || cc.MaxWaitingIDs != 11 ||
		cc.MaxWaitingCalls != 13 || cc.IdleTimeout != time.Minute || cc.ReadTimeout != time.Second || cc.TLS != nil {
		t.Errorf("CentralConfig = %+v", cc)
	}
	rc, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.MaxBatch != 500 || rc.Token != "tok-tok-tok-tok-tok" || rc.MaxWaitingIDs != 17 || rc.MaxWaitingCalls != 19 || rc.TLS != nil ||
		!slices.Equal(rc.AllowedHosts, []string{"*"}) {
		t.Errorf("RESTConfig = %+v", rc)
	}
	if err := errors.Join(cc.Validate(), rc.Validate()); err != nil {
		t.Error(err)
	}

	files := tlstest.New(t).WriteFiles(t, t.TempDir())
	c.Central.TLS.Cert, c.Central.TLS.Key, c.Central.TLS.ClientCA = files.ServerCert, files.ServerKey, files.CA
	c.REST.TLS.Cert, c.REST.TLS.Key = files.ServerCert, files.ServerKey
	if cc, err = c.CentralConfig(); err != nil || cc.TLS == nil || cc.TLS.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("CentralConfig with TLS: %v, %+v", err, cc.TLS)
	}
	if rc, err = c.RESTConfig(); err != nil || rc.TLS == nil || len(rc.TLS.Certificates) != 1 {
		t.Errorf("RESTConfig with TLS: %v", err)
	}

	// rest.tls.client_ca requires a client certificate from its CAs, as
	// central.tls.client_ca does; a file it cannot use is an error naming
	// the key.
	c.REST.TLS.ClientCA = files.CA
	if rc, err = c.RESTConfig(); err != nil || rc.TLS == nil || rc.TLS.ClientAuth != tls.RequireAndVerifyClientCert ||
		rc.TLS.ClientCAs == nil || !rc.TLS.ClientCAs.Equal(cc.TLS.ClientCAs) {
		t.Errorf("RESTConfig with rest.tls.client_ca: %v; want client certificates of the CA required", err)
	}
	for name, path := range map[string]string{"missing": files.CA + ".missing", "no PEM certificate": files.ServerKey} {
		c.REST.TLS.ClientCA = path
		if _, err := c.RESTConfig(); !errtest.Wraps(err, conf.ErrConfig, "rest.tls.client_ca") {
			t.Errorf("RESTConfig with a %s client_ca file: %v; want ErrConfig naming rest.tls.client_ca", name, err)
		}
	}
	c.REST.TLS.ClientCA = ""

	c.REST.TLS.Key = c.REST.TLS.Cert // not a key
	if _, err := c.RESTConfig(); !errors.Is(err, conf.ErrConfig) {
		t.Errorf("RESTConfig with a bad key file: %v; want ErrConfig", err)
	}

	// metrics.tls is read as rest.tls is; off, it is nil.
	if mt, err := c.Metrics.TLS.Load(); mt != nil || err != nil {
		t.Errorf("metrics.tls off: %v, %v; want nil, nil", mt, err)
	}
	c.Metrics.TLS = conf.MetricsTLS{Cert: files.ServerCert, Key: files.ServerKey, ClientCA: files.CA}
	if mt, err := c.Metrics.TLS.Load(); err != nil || mt == nil || len(mt.Certificates) != 1 || mt.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("metrics.tls with a client CA: %v; want the certificate, client certificates required", err)
	}
	c.Metrics.TLS.Key = c.Metrics.TLS.Cert
	if _, err := c.Metrics.TLS.Load(); !errtest.Wraps(err, conf.ErrConfig, "metrics.tls.cert") {
		t.Errorf("metrics.tls with a bad key file: %v; want ErrConfig naming metrics.tls", err)
	}
	c = conf.DefaultConfig()
	c.Central.MaxBatch = -1
	if _, err := c.CentralConfig(); !errors.Is(err, conf.ErrConfig) {
		t.Errorf("CentralConfig of an invalid config: %v", err)
	}
	if _, err := c.RESTConfig(); !errors.Is(err, conf.ErrConfig) {
		t.Errorf("RESTConfig of an invalid config: %v", err)
	}
}

// TestMetricsZeroRule: the metrics listener's caps read zero as their
// default and a negative max_unsent_bytes as no bound, in YAML as in Go
// (connlimit reads -1 as no bound too, and its zero as 8 MiB).
func TestMetricsZeroRule(t *testing.T) {
	for _, tc := range []struct {
		yaml           string
		conns, perPeer int
		unsent, prefix int64
	}{
		{"metrics: {max_conns: 0, max_conns_per_peer: 0, max_unsent_bytes: 0}", 100, 10, 0, 64}, // connlimit's 0 is 8 MiB
		{"metrics: {max_conns: 3, max_conns_per_peer: 2, max_unsent_bytes: -1}", 3, 2, -1, 64},
		{"metrics: {max_unsent_bytes: 4096, peer_ipv6_prefix: 48}", 100, 10, 4096, 48},
	} {
		file := filepath.Join(t.TempDir(), "vesta.yaml")
		if err := os.WriteFile(file, []byte(tc.yaml+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := conf.Load(conf.Options{File: file, Env: []string{}})
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		lc, err := l.Config.MetricsConfig()
		if err != nil || lc.MaxConns != tc.conns || lc.MaxConnsPerPeer != tc.perPeer || lc.MaxUnsentBytes != tc.unsent || int64(lc.PeerPrefixV6) != tc.prefix {
			t.Errorf("%s: %+v, %v; want %d, %d, %d bytes, /%d", tc.yaml, lc, err, tc.conns, tc.perPeer, tc.unsent, tc.prefix)
		}
	}
}
