// Package conf is vesta's configuration: one Config struct covering every
// part (the ID layout, machine IDs, the time guard, the central and REST
// servers, the client and logging), its defaults and its validation.
//
// Load reads a Config from three sources, each overriding the one before:
// a YAML file, VESTA_* environment variables and command-line flags. The
// file is Options.File, else VESTA_CONFIG's (set and empty: none), else
// the first of Options.Search that exists (SearchPath: ./vesta.yaml,
// $XDG_CONFIG_HOME/vesta/vesta.yaml, /etc/vesta/vesta.yaml). Loaded
// keeps where each key's value came from (Source, Settings), and
// Attribute names it in the errors of later checks. A machine.id set
// above machine.providers (a flag over the file's providers) that those
// providers would not try first is refused: a file found on the search
// path must not silently replace the machine ID a user chose. Every
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
// (core.Layout, core.Type, core.MachineRange and Secret implement
// encoding.TextUnmarshaler), unknown keys are its ErrorUnused, and weak
// typing is off; decode.go adds only strict readings of durations,
// integers, the epoch and the environment's lists.
//
// Secrets (machine.redis.password, machine.etcd.password, rest.token,
// segment.dsn, segment.redis.password, mask.key) may come from files (each
// key's _file, as rest.token_file), which suits container secret mounts;
// the masking key has no flag, so that it is never on a command line.
// They are held as Secret values, which print and log as [redacted] (a
// DSN with its password masked), so a logged Config never shows them; the
// _file keys hold paths and print as they are.
//
// Each setting is declared once. conf is a mapping: Config turns into the
// Config of each package by one method each, named for what it configures
// and validating c first (CoreConfig, EmbedConfig, MachineIDConfig,
// CentralConfig, RESTConfig, ClientConfig, MetricsConfig, SegmentConfig;
// MaskCheck returns the masking check and Masks builds the maskers), so
// that only this package knows the file format, through the field tags of
// Config: a key's field tag names the package field it is read into
// (field:"machineid.Redis.LeaseTTL"), and the tables derived from them
// (packages.go) are the conversions and the defaults. A key of a table means
// what its field means, as the field's comment says, zero included; its
// default is the package's DefaultConfig value and its Go type the
// field's. The keys in no table are conf's own (ownKeys). A test walks every key of Config and checks
// it against the tables, vesta.example.yaml, README's key list and the
// environment.
//
// One zero rule holds for every key, in YAML, the environment, flags and
// Go alike: zero is the key's default (central.max_batch: 0 is 10000;
// segment.threshold: 0 is 0.1), and where a default that is on can be
// turned off, a negative value turns it off (client.retries: -1 retries
// none; segment.refresh_tags: -1s never re-reads). Every boolean defaults
// to false (client.no_fallback: false keeps the fallback on, as
// client.Config.NoFallback's zero does). The metrics listener's caps
// follow the rule too: conf owns their defaults (defaultMetrics), so
// metrics.max_conns: 0 is 100, and metrics.max_unsent_bytes: 0 is 8 MiB
// and -1 no bound, as connlimit reads them. The exceptions are
// settings whose zero is a value of its own and the safe one, kept so and
// said in their field's comment: id.max_borrow: 0 never runs ahead of the
// clock (1s by default; a lease's quarantine counts the borrow as given,
// so it must never be read two ways) and time_guard.max_startup_wait: 0
// never waits (10s by default). IDs and offsets are values, not limits:
// machine.id: 0 is machine 0 and machine.k8s_offset: 0 adds nothing.
//
// Validation is done once, by the package that owns each limit: Validate
// converts, calls each package's Validate and names a refused field by its
// YAML key. Packages report their first bad field; Validate still reports
// every bad key at once by checking each field alone against a valid
// Config of its package, then the whole Config for what only a combination
// breaks. conf itself checks only what no package sees: address syntax
// (listeners, client.servers; the stores' addresses are machineid's and
// redisstore's), listeners that
// collide, TLS files in pairs and a client CA only with a certificate,
// secrets given both inline and as a file, the log, the segment store's
// selection (its keys are mysqlstore's and redisstore's to judge, with
// that store only) and a preloaded tag listed twice, and the machine section in YAML
// terms (ranges, providers and the keys they need, fixed IDs within reach
// of Redis leases).
package conf
