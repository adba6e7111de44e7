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
	// Kinds are the caller kinds it may affect; empty is all (but the
	// Run's Spare kinds).
	Kinds []string
	// Failed, when set, says why the injection failed: such a fault is
	// not counted as injected, and is listed apart (Run.Failed).
	Failed string
}

// Handover is a machine ID claimed by a new holder while the process of
// the previous holder was still alive (paused, cut off, slow): the case
// where fencing and the quarantine decide whether IDs repeat.
type Handover struct {
	At      time.Time
	Machine int
	// From and To name the previous holder and the new one.
	From, To string
	// Fault is the kind of the fault that made it (the latest one held or
	// just healed that touched the previous holder or the whole lease
	// store); "" when none did.
	Fault string
}

// NotSurvived is a class of repeats that come from a case vesta does not
// survive by design (docs/design/not-survived.md, docs/guarantees.md): the run shows the
// case and its cost instead of counting its repeats as failures.
type NotSurvived struct {
	// Class names the case as docs/design/not-survived.md does
	// ("guard-dir-restored").
	Class string
	// Faults counts the faults of the case, Repeats the values repeated
	// because of them.
	Faults  int
	Repeats int64
	// Examples are a few of those repeats.
	Examples []Repeat
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
	// Failed are the faults whose injection failed, apart from Faults.
	Failed []Fault
	// Handovers are every handover of the run, in time order.
	Handovers []Handover
	// FenceChecked counts the IDs checked against the holds and fences of
	// their issuers' logs; AfterFence those issued outside them (after the
	// issuer was fenced), AfterFenceList describes the first.
	FenceChecked   int64
	AfterFence     int64
	AfterFenceList []string
	// NotSurvived are the repeats of cases not survived by design, by
	// class; they are not in Repeats nor Repeated.
	NotSurvived []NotSurvived
	// Spare are caller kinds no fault's figures wait on, even a fault
	// that names them: those of standby servers, which serve only while
	// they hold a machine ID.
	Spare []string
	// Notes are lines the runner wants in the report (configuration, etc.).
	Notes []string
	// Picture, when set, is the name of this run's SVG (as SVG wrote it)
	// relative to the report, which then embeds it.
	Picture string
}
