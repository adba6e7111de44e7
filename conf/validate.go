package conf

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// The limits of the numeric keys are their packages' (see packages.go).

var knownProviders = machineid.Providers()

// checker collects every bad key, so a user sees them all at once.
type checker struct{ errs []error }

func (c *checker) add(key, format string, args ...any) {
	c.errs = append(c.errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// addErr reports err, a package's Validate refusing the field read from
// key, unless key is reported already; the KeyError matches err too.
func (c *checker) addErr(key string, err error) {
	for _, e := range c.errs {
		if ke, ok := e.(*KeyError); ok && ke.Key == key {
			return
		}
	}
	c.errs = append(c.errs, &KeyError{Key: key, Msg: err.Error(), err: err})
}

// Validate checks every key and returns all the bad ones joined: each a
// *KeyError naming the key by its YAML path and the allowed values (see
// KeyErrors); the result matches ErrConfig. conf's own checks come first,
// then each package's Validate on its conversion (packages.go), whose
// errors keep the package's message (and match its sentinel), e.g.
// "conf: central.max_batch: central: invalid config: MaxBatch: 2000000;
// want 0 (meaning 10000) to 1000000". It does not touch the files
// the config names (TLS certificates, the data dir): their users report
// those when they open them.
func (c Config) Validate() error {
	var ck checker
	c.ID.validate(&ck)
	c.Machine.validate(&ck)
	c.Central.validate(&ck)
	c.REST.validate(&ck, c.Central.Listen)
	c.Client.validate(&ck)
	c.Segment.validate(&ck)
	c.validateMask(&ck)
	c.Metrics.validate(&ck, c.Central.Listen, c.REST.Listen)
	c.Log.validate(&ck)
	c.validateReach(&ck)
	c.validatePackages(&ck)
	return errors.Join(ck.errs...)
}

// validate names the leaf layout's type here, as Load defaults it and the
// fix is to leave it unset; core checks the rest (coreKeys).
func (c IDConfig) validate(ck *checker) {
	if c.Layout == core.Leaf && c.Type != core.MinGranularity {
		ck.add("id.type", "%s; the leaf layout (id.layout) counts milliseconds only: want min-granularity, or leave id.type unset", c.Type)
	}
}

func (m MachineConfig) validate(ck *checker) {
	if len(m.Providers) == 0 {
		ck.add("machine.providers", "empty; want one or more of %s", strings.Join(knownProviders, ", "))
	}
	seen := map[string]bool{}
	for _, p := range m.Providers {
		switch {
		case !slices.Contains(knownProviders, p):
			ck.add("machine.providers", "%q; want %s", clip(p), orList(knownProviders))
		case seen[p]:
			ck.add("machine.providers", "%q listed twice", p)
		}
		seen[p] = true
	}

	// The ranges first: the IDs below are checked against them.
	rangesOK := true
	for _, r := range []struct {
		key string
		r   core.MachineRange
	}{{"machine.embedded_range", m.EmbeddedRange}, {"machine.server_range", m.ServerRange}} {
		if r.r.IsZero() || int(r.r.First)+int(r.r.Count)-1 > int(core.MaxMachine) {
			ck.add(r.key, "%s; want first-last within 0-%d, e.g. 0-923", r.r, core.MaxMachine)
			rangesOK = false
		}
	}
	if rangesOK && m.EmbeddedRange.Overlaps(m.ServerRange) {
		ck.add("machine.embedded_range", "%q overlaps machine.server_range %q", m.EmbeddedRange, m.ServerRange)
		rangesOK = false
	}
	// inRanges reports an ID no publish method could use.
	inRanges := func(id int) string {
		if !rangesOK || m.EmbeddedRange.Contains(core.MachineID(id)) || m.ServerRange.Contains(core.MachineID(id)) {
			return ""
		}
		return fmt.Sprintf("; want an ID in machine.embedded_range %s or machine.server_range %s", m.EmbeddedRange, m.ServerRange)
	}

	if m.ID != nil {
		if id := *m.ID; id < 0 || id > int(core.MaxMachine) {
			ck.add("machine.id", "%d; want 0-%d", id, core.MaxMachine)
		} else if msg := inRanges(id); msg != "" {
			ck.add("machine.id", "%d lies in no range%s", id, msg)
		}
	}

	if len(m.IPTable) == 0 && m.Uses(machineid.ProviderIPTable) {
		ck.add("machine.ip_table", "empty; the iptable provider (machine.providers) needs at least one entry")
	}
	addrs := map[netip.Addr]string{}
	for _, ip := range slices.Sorted(maps.Keys(m.IPTable)) {
		id := m.IPTable[ip]
		a, err := netip.ParseAddr(ip)
		if err != nil {
			ck.add("machine.ip_table", "key %q; want an IP address", clip(ip))
		} else if other, dup := addrs[a.Unmap()]; dup {
			ck.add("machine.ip_table", "%q and %q are the same address", other, ip)
		} else {
			addrs[a.Unmap()] = ip
		}
		if id < 0 || id > int(core.MaxMachine) {
			ck.add("machine.ip_table", "%q: %d; want 0-%d", clip(ip), id, core.MaxMachine)
		} else if msg := inRanges(id); msg != "" {
			ck.add("machine.ip_table", "%q: %d lies in no range%s", clip(ip), id, msg)
		}
	}

	if m.Uses(machineid.ProviderRedis) && m.Uses(machineid.ProviderEtcd) {
		ck.add("machine.providers", "lists both redis and etcd; two stores cannot keep one machine ID exclusive: list one (a fleet moving from one to the other gives each its own lease range)")
	}
	m.Etcd.validate(ck)
	if rangesOK {
		m.validateLeaseRanges(ck)
	}
}

// validateLeaseRanges checks machine.redis.embedded_range and server_range,
// then that no fixed ID of a listed provider (machine.id, the ip_table
// values, the k8s ID of ordinal 0) lies in the IDs leases hand out:
// a host on a fixed ID that a lease can reach would share it with the
// leasing host. Later k8s ordinals are checked when the ID is acquired.
func (m MachineConfig) validateLeaseRanges(ck *checker) {
	ok := true
	for _, r := range []struct {
		key, modeKey string
		lease, mode  core.MachineRange
	}{
		{"machine.redis.embedded_range", "machine.embedded_range", m.Redis.EmbeddedRange, m.EmbeddedRange},
		{"machine.redis.server_range", "machine.server_range", m.Redis.ServerRange, m.ServerRange},
		{"machine.etcd.embedded_range", "machine.embedded_range", m.Etcd.EmbeddedRange, m.EmbeddedRange},
		{"machine.etcd.server_range", "machine.server_range", m.Etcd.ServerRange, m.ServerRange},
	} {
		if !r.lease.IsZero() && !r.mode.Covers(r.lease) {
			ck.add(r.key, "%s; want a part of %s %s, or \"\" for all of it", r.lease, r.modeKey, r.mode)
			ok = false
		}
	}
	if !ok {
		return
	}
	// The lease ranges of the store listed (redis's when none is).
	store, embedded, server := "machine.redis", m.Redis.EmbeddedRange, m.Redis.ServerRange
	if m.Uses(machineid.ProviderEtcd) {
		store, embedded, server = "machine.etcd", m.Etcd.EmbeddedRange, m.Etcd.ServerRange
	}
	fixed := func(key string, id int) {
		if id < 0 || id > int(core.MaxMachine) {
			return // reported above
		}
		for _, r := range []struct {
			method          core.Method // one of the range's methods
			leaseKey, whole string
			explicit        core.MachineRange
		}{
			{core.Embedded, store + ".embedded_range", "machine.embedded_range", embedded},
			{core.Central, store + ".server_range", "machine.server_range", server},
		} {
			if msg := machineid.InLease(core.MachineID(id), m.LeaseRange(r.method), !r.explicit.IsZero(), r.leaseKey, r.whole); msg != "" {
				ck.add(key, "%s", msg)
			}
		}
	}
	if m.Uses(machineid.ProviderStatic) && m.ID != nil {
		fixed("machine.id", *m.ID)
	}
	if m.Uses(machineid.ProviderIPTable) {
		for _, ip := range slices.Sorted(maps.Keys(m.IPTable)) {
			fixed(fmt.Sprintf("machine.ip_table[%q]", clip(ip)), m.IPTable[ip])
		}
	}
	if m.Uses(machineid.ProviderK8s) {
		fixed("machine.k8s_offset", m.K8sOffset)
	}
}

// validateReach holds a host leasing from Redis to machineid.MaxRedisReach:
// lease_ttl + max_clock_skew + id.max_borrow, how far past a lost lease its
// IDs can reach, is what every claimant after a Redis data loss waits for,
// whatever its own settings (docs/design/redis-data-loss.md#takeover-quarantine).
func (c Config) validateReach(ck *checker) {
	r := c.Machine.Redis
	if !c.Machine.Uses(machineid.ProviderRedis) || r.LeaseTTL < 0 || r.MaxClockSkew < 0 || c.ID.MaxBorrow < 0 {
		return // the keys' own checks report the rest
	}
	ttl := cmp.Or(r.LeaseTTL, machineid.DefaultConfig().Redis.LeaseTTL)
	if reach := ttl + r.MaxClockSkew + c.ID.MaxBorrow; reach > machineid.MaxRedisReach {
		ck.add("machine.redis.lease_ttl", "%s + machine.redis.max_clock_skew %s + id.max_borrow %s = %s; want at most %s in all: after Redis loses data, a new holder waits that bound, not the settings of the holder before it, so no host may reach further (shorten one of the three)",
			ttl, r.MaxClockSkew, c.ID.MaxBorrow, reach, machineid.MaxRedisReach)
	}
}

// The Redis and etcd keys are machineid's to judge (machineKeys), the
// addresses included; conf checks only the etcd TLS files in pairs.
func (e EtcdConfig) validate(ck *checker) {
	checkPair(ck, "machine.etcd.tls", e.TLS.Cert, e.TLS.Key)
	if e.TLS.Cert != "" && e.TLS.CA == "" {
		ck.add("machine.etcd.tls.ca", `""; a client certificate (machine.etcd.tls.cert) needs the CA of etcd's members`)
	}
}

func (c CentralConfig) validate(ck *checker) {
	if c.Listen != "" {
		if msg := checkHostPort(c.Listen, 0); msg != "" {
			ck.add("central.listen", `%s, or "" for off`, msg)
		}
	}
	checkServerTLS(ck, "central.tls", c.TLS.Cert, c.TLS.Key, c.TLS.ClientCA)
}

func (r RESTConfig) validate(ck *checker, centralListen string) {
	if r.Listen != "" {
		if msg := checkHostPort(r.Listen, 0); msg != "" {
			ck.add("rest.listen", `%s, or "" for off`, msg)
		} else if r.Listen == centralListen && !strings.HasSuffix(r.Listen, ":0") {
			ck.add("rest.listen", "%q is also central.listen; want another port", r.Listen)
		}
	}
	checkServerTLS(ck, "rest.tls", r.TLS.Cert, r.TLS.Key, r.TLS.ClientCA)
}

func (m MetricsConfig) validate(ck *checker, others ...string) {
	checkServerTLS(ck, "metrics.tls", m.TLS.Cert, m.TLS.Key, m.TLS.ClientCA)
	if m.Listen == "" {
		return
	}
	if msg := checkHostPort(m.Listen, 0); msg != "" {
		ck.add("metrics.listen", `%s, or "" for off`, msg)
		return
	}
	if slices.Contains(others, m.Listen) && !strings.HasSuffix(m.Listen, ":0") {
		ck.add("metrics.listen", "%q is also central.listen or rest.listen; want another port", m.Listen)
	}
}

func (c ClientConfig) validate(ck *checker) {
	seen := map[string]bool{}
	for _, s := range c.Servers {
		if msg := checkHostPort(s, 1); msg != "" {
			ck.add("client.servers", "%s", msg)
		} else if seen[s] {
			ck.add("client.servers", "%q listed twice", s)
		}
		seen[s] = true
	}
}

func (l LogConfig) validate(ck *checker) {
	if _, ok := parseLevel(l.Level); !ok {
		ck.add("log.level", "%q; want debug, info, warn or error", clip(l.Level))
	}
	if f := strings.ToLower(l.Format); f != "text" && f != "json" {
		ck.add("log.format", "%q; want text or json", clip(l.Format))
	}
}

// checkHostPort returns "" for host:port with a numeric port from
// minPort to 65535 (0 asks the system for a free port when listening),
// and otherwise what is wrong with s.
func checkHostPort(s string, minPort int) string {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		if p, perr := strconv.Atoi(port); perr == nil && p >= minPort && p <= 65535 {
			return ""
		}
	}
	return fmt.Sprintf("%q; want host:port with a port %d-65535", clip(s), minPort)
}

// checkServerTLS checks a listener's TLS under prefix: cert and key
// together, and client CAs only with them.
func checkServerTLS(ck *checker, prefix, cert, key, clientCA string) {
	checkPair(ck, prefix, cert, key)
	if clientCA != "" && cert == "" {
		ck.add(prefix+".client_ca", "set without %s.cert; client certificates need the server's own cert and key", prefix)
	}
}

// checkPair checks that a TLS cert and key are given together.
func checkPair(ck *checker, prefix, cert, key string) {
	switch {
	case cert != "" && key == "":
		ck.add(prefix+".key", `""; want the key file of %s.cert (both or neither)`, prefix)
	case cert == "" && key != "":
		ck.add(prefix+".cert", `""; want the cert file of %s.key (both or neither)`, prefix)
	}
}

// orList is "a, b, c or d".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
