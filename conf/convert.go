package conf

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// MachineIDConfig returns the machine-ID configuration: the provider
// chain, the static ID (nil when machine.id is unset), the IP table, the
// k8s offset, the ranges, the lease ranges, the Redis and etcd leases and
// the etcd TLS configuration read from machine.etcd.tls (nil when off). It
// is the same for every publish method: machineid.Acquire takes the method
// and picks the range. Hostname, host addresses, Clock and Logger are left
// for the caller. It validates c first (not RequireMachine: the lease
// providers need no machine.id); errors name the key.
func (c Config) MachineIDConfig() (machineid.Config, error) {
	if err := c.Validate(); err != nil {
		return machineid.Config{}, err
	}
	return c.leaseConfig()
}

// leaseConfig is MachineIDConfig without the checks: the etcd TLS files
// read.
func (c Config) leaseConfig() (machineid.Config, error) {
	m := c.Machine.machineID()
	tc, err := c.Machine.Etcd.TLS.Load()
	if tc != nil { // nil stays an untyped nil: plain TCP
		m.Etcd.TLS = tc
	}
	return m, err
}

func (m MachineConfig) machineID() machineid.Config {
	leaseEmbedded, leaseServer := m.Redis.EmbeddedRange, m.Redis.ServerRange
	if m.Uses(machineid.ProviderEtcd) {
		leaseEmbedded, leaseServer = m.Etcd.EmbeddedRange, m.Etcd.ServerRange
	}
	table := make(map[string]core.MachineID, len(m.IPTable))
	for ip, id := range m.IPTable {
		table[ip] = core.MachineID(id)
	}
	mc := machineid.Config{
		Providers:          append([]string(nil), m.Providers...),
		Static:             m.Static(),
		IPTable:            table,
		EmbeddedRange:      m.EmbeddedRange,
		ServerRange:        m.ServerRange,
		EmbeddedLeaseRange: leaseEmbedded,
		ServerLeaseRange:   leaseServer,
		Redis:              machineid.RedisConfig{MasterName: m.Redis.MasterName, Password: m.Redis.Password.Reveal()},
		Etcd:               machineid.EtcdConfig{Username: m.Etcd.Username, Password: m.Etcd.Password.Reveal()},
	}
	fromKeys(Config{Machine: m}, &mc, machineKeys)
	return mc
}

// loadCAs reads the PEM certificates of path, read from key, into a pool.
func loadCAs(key, path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: %s: %s holds no PEM certificate", ErrConfig, key, path)
	}
	return pool, nil
}

// Load reads the CA and the client certificate; nil when TLS is off.
func (t EtcdTLS) Load() (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	pool, err := loadCAs("machine.etcd.tls.ca", t.CA)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: machine.etcd.tls.cert, machine.etcd.tls.key: %w", ErrConfig, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Load reads the certificate, key and client CAs; nil when TLS is off.
// Errors name the key.
func (t CentralTLS) Load() (*tls.Config, error) { return ListenerTLS(t).load("central.tls") }

// Load reads the certificate, key and client CAs; nil when TLS is off.
// Errors name the key.
func (t RESTTLS) Load() (*tls.Config, error) { return ListenerTLS(t).load("rest.tls") }

// Load reads the certificate, key and client CAs; nil when TLS is off.
// Errors name the key.
func (t MetricsTLS) Load() (*tls.Config, error) { return ListenerTLS(t).load("metrics.tls") }

// load reads the certificate, key and client CAs of the listener under
// key (central.tls, rest.tls, metrics.tls); nil when TLS is off.
func (t ListenerTLS) load(key string) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	return serverTLS(key, t.Cert, t.Key, t.ClientCA)
}

// serverCipherSuites are the TLS 1.2 suites a listener accepts: forward
// secret and AEAD only. Go's defaults still take the CBC suites with
// SHA-1 MACs, which nothing vesta talks to needs. TLS 1.3 has its own
// suites, all AEAD, which this list does not touch.
var serverCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// serverTLS is a listener's TLS under key (central.tls, rest.tls,
// metrics.tls): the
// certificate and key, TLS 1.2 or later with AEAD suites only, and with
// clientCA a client certificate from one of its CAs required.
func serverTLS(key, cert, priv, clientCA string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(cert, priv)
	if err != nil {
		return nil, fmt.Errorf("%w: %s.cert/%s.key: %w", ErrConfig, key, key, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
		CipherSuites: slices.Clone(serverCipherSuites)}
	if clientCA == "" {
		return cfg, nil
	}
	pool, err := loadCAs(key+".client_ca", clientCA)
	if err != nil {
		return nil, err
	}
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return cfg, nil
}

// ClientConfig returns the Go client's configuration: client.servers, timeout,
// retries, prefetch and no_fallback, with the embedded fallback of EmbedConfig (the
// embedded range, time_guard.dir). Logger and Registerer are left for the
// caller. It validates c first, and unless client.no_fallback RequireMachine.
func (c Config) ClientConfig() (client.Config, error) {
	fallback := c.embedConfig()
	var err error
	if !c.Client.NoFallback {
		fallback, err = c.EmbedConfig()
	} else {
		err = c.Validate()
	}
	if err != nil {
		return client.Config{}, err
	}
	cc := c.clientConfig()
	cc.FallbackConfig = fallback
	return cc, nil
}
