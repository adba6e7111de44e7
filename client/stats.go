package client

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/sony/gobreaker/v2"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/latency"
	"github.com/vesta-go/vesta/machineid"
)

// Stats is what a client measured, for monitoring: package prommetrics
// exports it as the vesta_client_* series (see the package documentation).
// Reading it costs each call nothing: the counters are the ones calls
// add to anyway, the rest is read now.
type Stats struct {
	// Servers are Config.Servers', in that order.
	Servers []ServerStats
	// Method is the publish method of the IDs handed out last:
	// core.Central (from the servers), or core.Embedded (the fallback).
	Method core.Method
	// Buffered is the prefetched central IDs ready to hand out.
	Buffered int
	// CeilingWaits are the calls that waited because every server was
	// busy (at its sequence's ceiling), and how long each waited.
	CeilingWaits latency.Snapshot
	// Fallback is FallbackState (zero with NoFallback); FallbackIssued
	// the IDs the fallback issued.
	Fallback       FallbackState
	FallbackIssued uint64
	// Closed: Close was called.
	Closed bool
}

// ServerStats are the calls to one server.
type ServerStats struct {
	Addr string
	// Calls counts the calls by result: ok, busy (fewer IDs than asked:
	// the server's ceiling), a wire error code (invalid_argument,
	// unavailable, lease_lost, clock, internal, ...), timeout, network,
	// protocol, rejected (the breaker was open), canceled, shape (refused:
	// ErrServerShape). Results with no call are left out.
	Calls map[string]uint64
	// Breaker is the circuit breaker's state since its last change: 0
	// closed, 1 half-open, 2 open.
	Breaker int
}

// Results of a call besides the wire error codes: ok, timeout (the
// attempt's deadline passed), network (dial, TLS or a broken connection),
// rejected (the breaker was open), protocol (a malformed reply), busy
// (Vesta.TakeIDs gave fewer IDs than asked: the server's sequence is at
// its ceiling; a success for the breaker), shape (the server's IDs are
// shaped unlike the first server's: refused, ErrServerShape).
const (
	resultOK       = "ok"
	resultBusy     = "busy"
	resultTimeout  = "timeout"
	resultNetwork  = "network"
	resultRejected = "rejected"
	resultProtocol = "protocol"
	resultCanceled = "canceled"
	resultShape    = "shape"
)

// calls counts one server's calls by result: the two a working server
// answers with, ok and busy, each an atomic add; the rest (failures) in a
// map.
type calls struct {
	ok, busy atomic.Uint64
	breaker  atomic.Int32 // breakerValue of the last state change

	mu    sync.Mutex
	other map[string]uint64
}

func (c *calls) add(result string) {
	c.mu.Lock()
	if c.other == nil {
		c.other = map[string]uint64{}
	}
	c.other[result]++
	c.mu.Unlock()
}

func (c *calls) read() map[string]uint64 {
	c.mu.Lock()
	out := maps.Clone(c.other)
	c.mu.Unlock()
	if out == nil {
		out = map[string]uint64{}
	}
	for r, n := range map[string]uint64{resultOK: c.ok.Load(), resultBusy: c.busy.Load()} {
		if n > 0 {
			out[r] = n
		}
	}
	return out
}

// breakerValue maps gobreaker's states to ServerStats.Breaker's documented
// values (they coincide today, but the contract must not depend on that).
func breakerValue(s gobreaker.State) int32 {
	switch s {
	case gobreaker.StateHalfOpen:
		return 1
	case gobreaker.StateOpen:
		return 2
	default:
		return 0
	}
}

// Stats returns what the client measured.
func (c *Client) Stats() Stats {
	st := Stats{Method: core.Central, CeilingWaits: c.ceiling.Snapshot(), Closed: c.bg.Err() != nil}
	if c.fallback.Load() {
		st.Method = core.Embedded
	}
	for _, s := range c.servers {
		st.Servers = append(st.Servers, ServerStats{Addr: s.addr, Calls: s.calls.read(), Breaker: int(s.calls.breaker.Load())})
	}
	if c.pf != nil {
		st.Buffered = c.pf.buffered()
	}
	if c.fb != nil {
		st.Fallback = c.FallbackState()
		st.FallbackIssued = c.fb.issued()
	}
	return st
}

// FallbackLease returns the fallback's machine-ID lease, for its Stats;
// nil with NoFallback.
func (c *Client) FallbackLease() *machineid.Lease {
	if c.fb == nil {
		return nil
	}
	return c.fb.lease
}
