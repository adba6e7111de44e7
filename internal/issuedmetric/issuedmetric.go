package issuedmetric

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/promreg"
)

// Name is the metric's name; alert rules and the dashboard query it.
const Name = "vesta_ids_issued_total"

// methods is how many publish methods a generator issues: embedded,
// central and rest, core.Method 0-2.
const methods = int(core.REST) + 1

// Counter is vesta_ids_issued_total of one registry. A method's series is
// exported once some issuer of it counts (Of) or is read (Read), so a
// server shows central and rest, an application embedded alone.
type Counter struct {
	desc *prometheus.Desc

	counted [methods]struct {
		n atomic.Uint64
		_ [56]byte // two servers counting do not share a cache line
	}

	mu      sync.Mutex
	used    [methods]bool
	done    [methods]uint64 // the last reads of sources that stopped
	sources map[*source]struct{}
}

type source struct {
	m    core.Method
	read func() uint64
}

// New registers the counter in reg, or returns the one registered there
// already. A nil reg returns a counter registered nowhere, which counts
// all the same.
func New(reg prometheus.Registerer) (*Counter, error) {
	c := &Counter{
		desc: prometheus.NewDesc(Name, "IDs issued by this process, by publish method (embedded, central, rest).",
			[]string{"method"}, nil),
		sources: map[*source]struct{}{},
	}
	if reg == nil {
		return c, nil
	}
	c, err := promreg.Register(reg, c)
	if err != nil {
		return nil, fmt.Errorf("issuedmetric: %w", err)
	}
	return c, nil
}

// Of returns the count of method m for its issuer to add to (one atomic
// add per call, however many IDs it answers). m must be a method a
// generator issues (embedded, central or rest).
func (c *Counter) Of(m core.Method) *atomic.Uint64 {
	c.mu.Lock()
	c.used[m] = true
	c.mu.Unlock()
	return &c.counted[m].n
}

// Read adds what read returns, when scraped, to the count of method m:
// for an issuer that counts already (core.Generator.Stats). stop takes
// the last reading and ends the reads, so the count never goes down when
// an issuer closes; it is idempotent.
func (c *Counter) Read(m core.Method, read func() uint64) (stop func()) {
	s := &source{m: m, read: read}
	c.mu.Lock()
	c.used[m] = true
	c.sources[s] = struct{}{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.sources[s]; ok {
			delete(c.sources, s)
			c.done[m] += read()
		}
	}
}

// Describe implements prometheus.Collector.
func (c *Counter) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *Counter) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum [methods]uint64
	for s := range c.sources {
		sum[s.m] += s.read()
	}
	for m := range methods {
		if c.used[m] {
			v := c.counted[m].n.Load() + c.done[m] + sum[m]
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(v), core.Method(m).String())
		}
	}
}
