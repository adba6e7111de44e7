package report

import "time"

// Bucket is what the callers of one kind saw in one interval of the run.
type Bucket struct {
	// At is the interval's start; every bucket of a Run spans Run.Step.
	At time.Time
	// Kind is the callers' kind: "client", "embedded", "seq-mariadb",
	// "seq-redis" for callers over several servers or none, and kinds of
	// one server's callers with its name as suffix ("rest-A", "rpc-A",
	// "seq-mariadb-A"); Group strips the suffix.
	Kind string
	// OK and Err count calls answered and calls that failed.
	OK, Err int64
	// Values counts the IDs or numbers the answered calls carried.
	Values int64
}

// Fault is one injected fault.
type Fault struct {
	// Kind is the fault's kind ("kill", "pause", "partition", ...), Target
	// what it hit ("server A", "etcd leader", ...), Detail anything else.
	Kind, Target, Detail string
	// Start is when it was injected, End when it was healed (equal for
	// an instant fault such as kill -9 with an immediate restart).
	Start, End time.Time
	// Kinds are the caller kinds it may affect; empty is all.
	Kinds []string
}

// Repeat is a value issued twice, as the checker found it.
type Repeat struct {
	Space, Value string
	Entries      []string // "source at time"
}

// Run is one nemesis run: one provider's fleet under one seed.
type Run struct {
	Name     string // "etcd", "redis-sentinel", "sabotage"
	Seed     int64
	Start    time.Time
	End      time.Time
	Step     time.Duration // bucket width
	Buckets  []Bucket
	Faults   []Fault
	IDs      int64
	Numbers  int64
	Repeats  []Repeat
	Repeated int64 // all repeats, Repeats may be fewer
	// Notes are lines the runner wants in the report (configuration, etc.).
	Notes []string
	// Picture, when set, is the name of this run's SVG (as SVG wrote it)
	// relative to the report, which then embeds it.
	Picture string
}
