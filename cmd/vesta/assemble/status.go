package assemble

import (
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/vesta-go/vesta/conf"
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

// listeners names the open listeners for /v1/status, as rest.Listener
// names them.
func (a *Assembled) listeners() []rest.Listener {
	var out []rest.Listener
	for _, l := range []struct {
		name string
		ln   net.Listener
	}{{"rpc", a.lnCentral}, {"http", a.lnREST}, {"metrics", a.lnMetrics}} {
		if l.ln != nil {
			out = append(out, rest.Listener{Name: l.name, Addr: l.ln.Addr().String()})
		}
	}
	return out
}

// storeInfo names the segment store and where it is, without its
// secrets: the DSN's address and database (never its user or password),
// Redis's addresses and key prefix.
func storeInfo(s conf.SegmentConfig) rest.StoreInfo {
	switch s.Store {
	case conf.SegmentStoreMySQL:
		addr := "(dsn not parsed)"
		if d, err := mysql.ParseDSN(s.DSN.Reveal()); err == nil {
			addr = d.Addr + "/" + d.DBName
			if s.Table != "" {
				addr += " table " + s.Table
			}
		}
		return rest.StoreInfo{Kind: s.Store, Addr: addr}
	case conf.SegmentStoreRedis:
		return rest.StoreInfo{Kind: s.Store, Addr: strings.Join(s.Redis.Addrs, ",") + " prefix " + s.Redis.KeyPrefix}
	}
	return rest.StoreInfo{Kind: s.Store}
}
