package machineid

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// Acquire asks the providers of cfg, in order, for a machine ID of the
// range of publish method m (see Config.Range): the embedded range for
// core.Embedded, the server range for core.Central and core.REST. A provider that is not available here (ErrUnavailable) passes to
// the next; any other error stops the chain. When every provider is
// unavailable the error wraps ErrNoProvider and each provider's reason.
//
// A Redis lease is renewed from the moment Acquire returns; see Lease for
// what the caller does next. Every Lease must be closed.
func Acquire(ctx context.Context, cfg Config, m core.Method) (*Lease, error) {
	c, rng, leaseRng, err := cfg.resolveFor(m)
	if err != nil {
		return nil, err
	}
	base := newLeaseBase(c, m, rng)
	var reasons []error
	for _, p := range c.Providers {
		l, err := acquireWith(ctx, base, leaseRng, p)
		if err == nil {
			if len(reasons) > 0 {
				base.log.Warn("machineid: earlier providers unavailable; using a later one",
					"provider", p, "machine", l.ID(), "unavailable", errors.Join(reasons...).Error())
			}
			return l, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("machineid: %s provider: %w", p, ctx.Err())
		}
		if !errors.Is(err, ErrUnavailable) {
			return nil, fmt.Errorf("%s provider: %w", p, err)
		}
		base.log.Info("machineid: provider unavailable", "provider", p, "err", err)
		reasons = append(reasons, providerError{p, err})
	}
	return nil, chainError(reasons)
}

// acquireWith asks one provider. A Redis lease is claimed from leaseRng
// (the effective lease range) only; a fixed ID (static, iptable, k8s)
// must lie in the method's range and outside leaseRng, checked here
// again because the k8s ordinal and the host's addresses are known only
// now.
func acquireWith(ctx context.Context, base leaseBase, leaseRng core.MachineRange, provider string) (*Lease, error) {
	var id core.MachineID
	var err error
	switch provider {
	case ProviderStatic:
		if base.cfg.Static == nil {
			return nil, fmt.Errorf("%w: Static: %w", ErrConfig, ErrNoMachineID)
		}
		id = *base.cfg.Static
	case ProviderIPTable:
		id, err = iptableID(base.cfg)
	case ProviderK8s:
		id, err = k8sID(base.cfg)
	case ProviderRedis, ProviderEtcd:
		b := base
		b.rng = leaseRng // the lease claims, and re-claims, from here only
		return acquireStore(ctx, b, provider)
	}
	if err != nil {
		return nil, err
	}
	if err := base.rng.Check(id, rangeName(base.method)); err != nil {
		return nil, err
	}
	if msg := base.cfg.inLease(base.method, id); msg != "" {
		return nil, fmt.Errorf("%w: %s provider: %s", ErrRange, provider, msg)
	}
	return newFixedLease(base, provider, id), nil
}

// acquireStore claims a lease of b's range in the provider's store, opened
// by the store package the program linked (see linkImport).
func acquireStore(ctx context.Context, b leaseBase, provider string) (*Lease, error) {
	p, ok := leasestore.Lookup(provider)
	if !ok { // Validate refused it already
		return nil, fmt.Errorf("%w: Providers: %s", ErrConfig, notLinked(provider))
	}
	st, err := p.Open(ctx, b.storeBase())
	if err != nil {
		return nil, err
	}
	ttl, margin := b.cfg.Redis.LeaseTTL, b.cfg.Redis.SafetyMargin
	if provider == ProviderEtcd {
		ttl, margin = b.cfg.Etcd.LeaseTTL, b.cfg.Etcd.SafetyMargin
	}
	return acquireLeased(ctx, b, provider, st, ttl, margin)
}

// providerError is one provider's reason in a chain's error.
type providerError struct {
	provider string
	err      error
}

func (e providerError) Error() string { return e.provider + ": " + e.err.Error() }
func (e providerError) Unwrap() error { return e.err }

// chainError lists why every provider of a chain was unavailable.
type chainError []error

func (e chainError) Error() string {
	parts := make([]string, len(e))
	for i, r := range e {
		parts[i] = r.Error()
	}
	return ErrNoProvider.Error() + ": " + strings.Join(parts, "; ")
}

func (e chainError) Unwrap() []error { return append([]error{ErrNoProvider}, e...) }

// iptableID matches every address of the host against the table. Several
// addresses may match as long as they agree on the ID.
func iptableID(c Config) (core.MachineID, error) {
	table, _ := parseIPTable(c.IPTable) // validated
	addrs := c.HostAddrs
	if addrs == nil {
		var err error
		if addrs, err = hostAddrs(); err != nil {
			return 0, fmt.Errorf("%w: reading the host's addresses: %v", ErrUnavailable, err)
		}
	}
	norm := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		norm = append(norm, a.Unmap().WithZone(""))
	}
	slices.SortFunc(norm, netip.Addr.Compare)
	norm = slices.Compact(norm)
	var matched []string
	found, first := false, core.MachineID(0)
	ambiguous := false
	for _, a := range norm {
		id, ok := table[a]
		if !ok {
			continue
		}
		matched = append(matched, fmt.Sprintf("%s -> %d", a, id))
		if found && id != first {
			ambiguous = true
		}
		if !found {
			found, first = true, id
		}
	}
	switch {
	case ambiguous:
		return 0, fmt.Errorf("%w: this host's addresses match %s; give them one ID or remove all but one",
			ErrAmbiguous, strings.Join(matched, ", "))
	case !found:
		return 0, fmt.Errorf("%w: none of this host's addresses %v is in the IP table", ErrUnavailable, norm)
	}
	return first, nil
}

// hostAddrs lists the addresses of every interface of the host.
func hostAddrs() ([]netip.Addr, error) {
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range ifAddrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, addr)
		}
	}
	return out, nil
}

// k8sID is the ordinal of a StatefulSet pod's hostname ("vesta-3", or
// "vesta-3.vesta.ns.svc") plus the offset.
func k8sID(c Config) (core.MachineID, error) {
	host := c.Hostname
	if host == "" {
		var err error
		if host, err = os.Hostname(); err != nil {
			return 0, fmt.Errorf("%w: reading the hostname: %v", ErrUnavailable, err)
		}
	}
	label, _, _ := strings.Cut(host, ".")
	i := strings.LastIndexByte(label, '-')
	digits := label[i+1:]
	if i < 0 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, fmt.Errorf("%w: hostname %q has no StatefulSet ordinal (a -N suffix)", ErrUnavailable, host)
	}
	n, err := strconv.ParseUint(digits, 10, 16)
	if err != nil || n+uint64(c.K8sOffset) > uint64(core.MaxMachine) {
		sum := digits + "+" + strconv.Itoa(c.K8sOffset)
		if err == nil {
			sum = strconv.FormatUint(n+uint64(c.K8sOffset), 10)
		}
		return 0, fmt.Errorf("%w: hostname %q: ordinal %s plus offset %d is %s, past machine ID %d",
			ErrRange, host, digits, c.K8sOffset, sum, core.MaxMachine)
	}
	return core.MachineID(n) + core.MachineID(c.K8sOffset), nil
}
