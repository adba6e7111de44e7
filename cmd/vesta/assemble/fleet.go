package assemble

import (
	"context"

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
