package assemble

import (
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/rest"
)

// leaseStatus feeds the REST server's /v1/status (and so the operator's
// page) from the lease: the durations are measured on the lease's own
// clock, as its deadline is.
func leaseStatus(lease *machineid.Lease) func() rest.LeaseStatus {
	return func() rest.LeaseStatus {
		st := lease.Status()
		ls := rest.LeaseStatus{Provider: st.Provider, State: st.State.String(),
			Fences: st.Fences, RenewFailures: st.RenewFailures}
		if !st.Deadline.IsZero() {
			ls.HasDeadline = true
			ls.UntilDeadline = st.Deadline.Sub(st.At)
			ls.UntilRenewal = max(st.RenewAt.Sub(st.At), 0)
		}
		if !st.QuarantineUntil.IsZero() {
			ls.Quarantine = max(st.QuarantineUntil.Sub(st.At), 0)
		}
		if st.Err != nil {
			ls.Err = st.Err.Error()
		}
		return ls
	}
}
