// Package conf is vesta's configuration: one Config struct covering every
// part (the ID layout, machine IDs, the time guard, the central and REST
// servers, the client and logging), its defaults and its validation.
//
// Load reads a Config from three sources, each overriding the one before:
// a YAML file, VESTA_* environment variables and command-line flags. Every
// key has an environment variable: the key path in upper case joined by
// "_" (machine.redis.lease_ttl is VESTA_MACHINE_REDIS_LEASE_TTL); lists
// are comma-separated (VESTA_MACHINE_PROVIDERS=redis,static) and the IP
// table is IP=ID pairs (VESTA_MACHINE_IP_TABLE=10.1.2.3=924,10.1.2.4=925).
// Only a few keys have flags; Flags lists them and AddFlags registers them
// on the binary's flag set.
//
// Nothing is silently ignored: an unknown key in the file or an unknown
// VESTA_* variable is an error, and so is every invalid value. Load and
// Validate report all the bad keys at once, each by its YAML path with
// the values it allows, so a typo costs one restart, not one per key.
//
// Decoding is mapstructure's: the domain types read their own text
// (core.Layout, core.Type, machineid.Range and Secret implement
// encoding.TextUnmarshaler), unknown keys are its ErrorUnused, and weak
// typing is off; decode.go adds only strict readings of durations,
// integers, the epoch and the environment's lists.
//
// Secrets (the Redis password and the REST token) may come from files
// (machine.redis.password_file, rest.token_file), which suits container
// secret mounts. They are held as Secret values, which print and log
// masked, so a logged Config never shows them.
//
// Validation is done once, by the package that owns each limit. conf is a
// mapping: Config turns into the Config of each package (Core, Embed,
// MachineID, CentralConfig, RESTConfig, ClientConfig, SegmentIssuer), so
// that only this package knows the file format, and Validate converts,
// calls each package's Validate and names a refused field by its YAML key
// through one table per conversion (packages.go: Go field -> key). A key
// means what its field means: 0 is the package's default where the
// package says so (central.max_batch: 0 is 10000). Packages report their
// first bad field; Validate still reports every bad key at once by
// checking each field alone against a valid Config of its package, then
// the whole Config for what only a combination breaks. conf itself checks
// only what no package sees: address syntax, colliding listeners, TLS
// files in pairs, the log, the segment store, and the machine section in
// YAML terms (ranges, providers and the keys they need, fixed IDs within
// reach of Redis leases).
package conf
