package machineid

import (
	"fmt"

	"github.com/vesta-go/vesta/core"
)

// The default ranges: embedded issuers (and the client's fallback) take IDs
// from 0-923, central and REST servers from 924-1023.
var (
	DefaultEmbeddedRange = core.MachineRange{First: 0, Count: 924}
	DefaultServerRange   = core.MachineRange{First: 924, Count: 100}
)

// EffectiveLeaseRange is the rule for the IDs of a range (whole) that Redis
// leases hand out: explicit when set; else the whole range when the redis
// provider is used (leasing); else none (the zero Range).
func EffectiveLeaseRange(explicit, whole core.MachineRange, leasing bool) core.MachineRange {
	switch {
	case !explicit.IsZero():
		return explicit
	case leasing:
		return whole
	}
	return core.MachineRange{}
}

// InLease returns "" when the fixed ID id (a static, IP-table or k8s ID)
// lies outside lease, the effective lease range of its range; else a
// message saying why that is refused and how to fix it, naming the lease
// range's setting (leaseName), whether it was set (explicit) or defaulted
// to the whole range (wholeName). conf passes YAML keys, Config its fields.
func InLease(id core.MachineID, lease core.MachineRange, explicit bool, leaseName, wholeName string) string {
	if !lease.Contains(id) {
		return ""
	}
	how := fmt.Sprintf("%s %s", leaseName, lease)
	if !explicit {
		how += fmt.Sprintf(", all of %s by default with the redis provider", wholeName)
	}
	fix := "take the fixed ID from outside it"
	switch {
	case id > lease.First:
		fix = fmt.Sprintf("narrow %s (e.g. %s) and take fixed IDs from the rest", leaseName, core.MachineRange{First: lease.First, Count: uint16(id - lease.First)})
	case id < lease.Last():
		fix = fmt.Sprintf("narrow %s (e.g. %s) and take fixed IDs from the rest", leaseName, core.MachineRange{First: id + 1, Count: uint16(lease.Last() - id)})
	}
	return fmt.Sprintf("%d lies in the IDs leases hand out (%s), so a leasing host could take it while this one holds it; %s", id, how, fix)
}
