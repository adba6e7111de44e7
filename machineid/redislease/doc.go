// Package redislease links the redis provider of package machineid into a
// program: machine-ID leases in one Redis, or in the master a majority of
// Redis Sentinels names (Redis Cluster is refused). Import it for its
// effect, beside a Config that lists the provider:
//
//	import _ "github.com/vesta-go/vesta/machineid/redislease"
//
//	cfg.Machine.Providers = []string{machineid.ProviderRedis}
//	cfg.Machine.Redis.Addrs = []string{"redis.internal:6379"}
//
// machineid.Config.Redis configures it; machineid holds the lease
// schedule, the quarantine after a Redis data loss (MaxRedisReach) and the
// fleet record. machineid itself links no Redis client, so a program on a
// fixed machine ID (static, iptable, k8s) does not pay for one; a Config
// listing redis in a program without this import is refused, naming it.
//
// The functions below name the provider's keys in Redis, for operators
// and tests: every key of one machine ID carries the hash tag
// {prefix:machine:id}.
package redislease
