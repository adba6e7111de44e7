package assemble

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/capacity"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/segment"
)

// openCapacity starts the capacity tracker of the generator, the lease's
// pools and the sequences, registers its metrics, and warns when the time
// field has less than capacity.WarnYears left.
func (a *Assembled) openCapacity(mcfg machineid.Config, log *slog.Logger, reg prometheus.Registerer) error {
	cfg := capacity.Config{Gen: a.gen, Pools: pools(a.lease, mcfg), Bound: segment.MaxNumber}
	if a.seq != nil {
		cfg.Sequences = tagCounters(a.seq.is)
	}
	a.capacity = capacity.New(cfg)
	if err := reg.Register(a.capacity.Collector()); err != nil {
		return fmt.Errorf("assemble: metrics: %w", err)
	}
	if end, left, warn := capacity.TimeLeft(a.gen.Codec(), a.gen.Type(), time.Now()); warn {
		log.Warn(fmt.Sprintf("the time field runs out in %.1f years: no ID is issued past %s; plan a new epoch or layout (see vesta capacity)",
			left.Hours()/capacity.Year.Hours(), end.UTC().Format(time.RFC3339)),
			"layout", a.gen.Layout().String(), "type", a.gen.Type().String(), "epoch", a.gen.Codec().Epoch().Format(time.RFC3339))
	}
	return nil
}

// pools reads the machine-ID pools of the lease ranges from the lease's
// member records: one record per live lease.
func pools(lease *machineid.Lease, mcfg machineid.Config) capacity.PoolsFunc {
	return func(ctx context.Context) (capacity.Machine, error) {
		m := capacity.Machine{Provider: lease.Provider()}
		switch lease.Provider() {
		case machineid.ProviderRedis, machineid.ProviderEtcd:
		default:
			m.Fixed, m.Note = true, fmt.Sprintf("fixed ID (%s): no pool hands it out", lease.Provider())
			return m, nil
		}
		fleet, err := lease.Fleet(ctx)
		own := lease.Range()
		for _, r := range []struct {
			name string
			rng  core.MachineRange
		}{{"server", mcfg.LeaseRange(core.Central)}, {"embedded", mcfg.LeaseRange(core.Embedded)}} {
			if r.rng.IsZero() {
				continue
			}
			p := capacity.Pool{Range: r.name, IDs: r.rng.String(), Total: int(r.rng.Count), Held: -1}
			if err == nil {
				held := map[core.MachineID]bool{}
				for _, x := range fleet.List {
					if r.rng.Contains(x.Machine) && x.State != machineid.StateNone.String() {
						held[x.Machine] = true
					}
				}
				p.Held = len(held)
			}
			if r.rng == own {
				p.Refused = lease.Status().RangeFull
			}
			m.Pools = append(m.Pools, p)
		}
		return m, err
	}
}

// tagCounters reads the tags' counters from the sequencer's buffers and
// stats, without a call to the store: max_id is one past the highest
// range the buffers fetched.
func tagCounters(is *segment.Sequencer) capacity.SequencesFunc {
	return func() []capacity.TagCounters {
		var out []capacity.TagCounters
		for _, b := range is.Buffers() {
			c := capacity.TagCounters{Tag: b.Tag, MaxID: max(b.Segments[0].Max, b.Segments[1].Max)}
			if st, ok := is.Stats(b.Tag); ok {
				c.Step, c.RangesFetched = st.Step, st.RangesFetched
			}
			out = append(out, c)
		}
		return out
	}
}
