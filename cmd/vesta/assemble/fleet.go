package assemble

import (
	"context"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/rest"
)

// fleetView feeds the REST server's /v1/fleet (and so the page's fleet)
// from the lease's member records: display only.
func fleetView(lease *machineid.Lease) rest.FleetFunc {
	return func(ctx context.Context) (rest.FleetView, error) {
		m, err := lease.Fleet(ctx)
		v := rest.FleetView{Store: m.Store, Prefix: m.Prefix, Skipped: m.Skipped, Members: make([]rest.FleetMember, 0, len(m.List))}
		for _, x := range m.List {
			v.Members = append(v.Members, rest.FleetMember{Machine: uint16(x.Machine), Self: x.Self, State: x.State,
				Provider: x.Provider, Range: x.Range, Version: x.Version, Host: x.Host, PID: x.PID, RPC: x.RPC, HTTP: x.HTTP,
				Started: x.Started, Renewed: x.Renewed, Expires: x.Expires})
		}
		return v, err
	}
}

// advertise puts the listeners' addresses in the lease's member record,
// once they are open. A failed write is the lease's to log (it is
// information only, and written again at the next renewal).
func (a *Assembled) advertise(ctx context.Context) {
	listening := func(s string) string {
		if s == "off" {
			return ""
		}
		return s
	}
	_ = a.lease.Advertise(ctx, machineid.Listeners{RPC: listening(a.CentralAddr()), HTTP: listening(a.RESTAddr())})
}

// holdersView feeds GET /v1/ids/{id}?holder=true from the lease's hold
// history: display and detection only.
func holdersView(lease *machineid.Lease) api.HoldersFunc {
	return func(ctx context.Context, machine uint16) (api.HoldHistory, error) {
		h, err := lease.History(ctx, core.MachineID(machine))
		if err != nil {
			return api.HoldHistory{}, err
		}
		return api.HoldHistory{Store: h.Store, Skipped: h.Skipped, Match: func(t, now time.Time) api.HolderMatch {
			m := h.At(t, now)
			out := api.HolderMatch{Conflict: m.Conflict, Inferred: m.Inferred, Reason: m.Reason}
			for _, e := range m.Holds {
				x := api.Hold{Hold: e.Hold, Lease: e.Lease, Self: e.Self, Provider: e.Provider, Range: e.Range, Host: e.Host,
					Pod: e.Pod, PID: e.PID, Version: e.Version, Started: e.Started, From: e.From, Renewed: e.Renewed,
					Mark: e.Mark, Ended: e.Ended, End: e.End, EndKnown: e.EndKnown, Note: e.Note, TTL: e.TTL, MaxBorrow: e.MaxBorrow}
				if e.HasShape {
					x.Layout = e.Shape.String()
				}
				out.Holds = append(out.Holds, x)
			}
			return out
		}}, nil
	}
}
