package etcdstore

import (
	"strconv"

	"github.com/vesta-go/vesta/core"
)

// The keys of the lease protocol in etcd; package etcdlease exports and
// documents each (Keys, MemberKey, HoldsPrefix, FleetKey).

func Keys(prefix string, id core.MachineID) (lease, mark, shape string) {
	base := prefix + "/machine/" + strconv.Itoa(int(id))
	return base + "/lease", base + "/mark", base + "/shape"
}

func MemberKey(prefix string, id core.MachineID) string {
	return prefix + "/member/" + strconv.Itoa(int(id))
}
func FleetKey(prefix string) string { return prefix + "/fleet" }

func HoldsPrefix(prefix string, id core.MachineID) string {
	return prefix + "/holds/" + strconv.Itoa(int(id)) + "/"
}
