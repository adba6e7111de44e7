package machineid

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// minimize shrinks a failing plan for its report: it cuts the horizon to
// just past the failure, then drops one store event, failover, fault,
// later process or host at a time, keeping each drop after which the plan
// still fails the same way, until none can go or budget runs are spent.
// The plan it returns keeps the seed (the network's draws), so it is not
// the seed's schedule: the report gives both.
func minimize(t *testing.T, p *simPlan, plant leasestore.PlantedBugs, kind failKind, at time.Duration, budget int) (*simPlan, int) {
	runs := 0
	fails := func(q *simPlan) bool {
		runs++
		var c *simCheck
		synctest.Test(t, func(*testing.T) { c = simulate(q, plant, false) })
		return c.kind == kind
	}
	if q := p.clone(); at+time.Second < q.horizon {
		q.horizon = at + time.Second
		if fails(q) {
			p = q
		}
	}
	for shrunk := true; shrunk && runs < budget; {
		shrunk = false
		for _, q := range shrinks(p) {
			if runs >= budget {
				break
			}
			if fails(q) {
				p, shrunk = q, true
				break
			}
		}
	}
	return p, runs
}

// shrinks are p with one thing less each.
func shrinks(p *simPlan) []*simPlan {
	var out []*simPlan
	each := func(n int, drop func(q *simPlan, i int)) {
		for i := range n {
			q := p.clone()
			drop(q, i)
			out = append(out, q)
		}
	}
	each(len(p.store), func(q *simPlan, i int) { q.store = slices.Delete(q.store, i, i+1) })
	if p.sentinel != nil {
		each(len(p.sentinel.failovers), func(q *simPlan, i int) {
			q.sentinel.failovers = slices.Delete(q.sentinel.failovers, i, i+1)
		})
	}
	for hi, h := range p.hosts {
		each(len(h.partitions), func(q *simPlan, i int) { q.hosts[hi].partitions = slices.Delete(q.hosts[hi].partitions, i, i+1) })
		each(len(h.pauses), func(q *simPlan, i int) { q.hosts[hi].pauses = slices.Delete(q.hosts[hi].pauses, i, i+1) })
		each(len(h.slow), func(q *simPlan, i int) { q.hosts[hi].slow = slices.Delete(q.hosts[hi].slow, i, i+1) })
		each(len(h.steps), func(q *simPlan, i int) { q.hosts[hi].steps = slices.Delete(q.hosts[hi].steps, i, i+1) })
		if len(h.procs) > 1 {
			each(1, func(q *simPlan, _ int) { q.hosts[hi].procs = q.hosts[hi].procs[:len(q.hosts[hi].procs)-1] })
		}
		if h.drop > 0 {
			each(1, func(q *simPlan, _ int) { q.hosts[hi].drop = 0 })
		}
	}
	if len(p.hosts) > 2 {
		each(len(p.hosts), func(q *simPlan, i int) {
			q.hosts = slices.Delete(q.hosts, i, i+1)
			if q.sentinel == nil {
				return
			}
			for f := range q.sentinel.failovers {
				var side []int
				for _, h := range q.sentinel.failovers[f].side {
					switch {
					case h < i:
						side = append(side, h)
					case h > i:
						side = append(side, h-1)
					}
				}
				q.sentinel.failovers[f].side = side
			}
		})
	}
	return out
}

// clone is a deep copy of p.
func (p *simPlan) clone() *simPlan {
	q := *p
	q.store = slices.Clone(p.store)
	q.hosts = make([]*hostPlan, len(p.hosts))
	for i, h := range p.hosts {
		c := *h
		c.steps, c.partitions, c.slow, c.pauses, c.procs = slices.Clone(h.steps), slices.Clone(h.partitions), slices.Clone(h.slow), slices.Clone(h.pauses), slices.Clone(h.procs)
		q.hosts[i] = &c
	}
	if p.sentinel != nil {
		s := *p.sentinel
		s.redis, s.sentinels, s.failovers = slices.Clone(s.redis), slices.Clone(s.sentinels), slices.Clone(s.failovers)
		for i := range s.failovers {
			s.failovers[i].side = slices.Clone(s.failovers[i].side)
		}
		q.sentinel = &s
	}
	return &q
}
