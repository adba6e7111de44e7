package redisstore

import (
	"strconv"

	"github.com/vesta-go/vesta/core"
)

// The keys of the lease protocol in Redis; package redislease exports and
// documents each (Keys, ShapeKey, ReleasedKey, InstanceKey, MemberKey,
// HoldsKey, HoldsOrderKey, StoreKey, FleetKey). Every key of one machine ID carries the hash tag
// {prefix:machine:id}.

func Keys(prefix string, id core.MachineID) (lease, mark string) {
	tag := keyTag(prefix, id)
	return tag + ":lease", tag + ":mark"
}

func ShapeKey(prefix string, id core.MachineID) string    { return keyTag(prefix, id) + ":shape" }
func ReleasedKey(prefix string, id core.MachineID) string { return keyTag(prefix, id) + ":released" }
func InstanceKey(prefix string, id core.MachineID) string { return keyTag(prefix, id) + ":instance" }
func MemberKey(prefix string, id core.MachineID) string   { return keyTag(prefix, id) + ":member" }
func StoreKey(prefix string) string                       { return prefix + ":store" }
func FleetKey(prefix string) string                       { return prefix + ":fleet" }

func keyTag(prefix string, id core.MachineID) string {
	return "{" + prefix + ":machine:" + strconv.Itoa(int(id)) + "}"
}

func HoldsKey(prefix string, id core.MachineID) string { return keyTag(prefix, id) + ":holds" }
func HoldsOrderKey(prefix string, id core.MachineID) string {
	return keyTag(prefix, id) + ":holds:order"
}
