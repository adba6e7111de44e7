// Package redisstore is the redis provider's store (leasestore.Store): a
// lease per machine ID in one Redis, or in the master a majority of Redis
// Sentinels names, with the time guard's mark beside it. Its Lua scripts,
// its keys (keys.go) and its reading of Redis's replies are the lease
// protocol on Redis; the schedule that calls it is machineid's.
//
// Programs link it with machineid/redislease, which registers Open;
// machineid's lease simulation opens it with New and a Hook of its own.
package redisstore
