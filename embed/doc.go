// Package embed is the embedded issuer: a Go application imports it and
// issues IDs in-process, with no server to call. IDs carry method 0
// (embedded) and a machine ID from the embedded range (default 0-923), so
// they can never collide with IDs from central or REST servers. There is no
// default machine ID: Open refuses (machineid.ErrNoMachineID) until the
// configuration chooses one unique to the instance — a static ID, a Redis
// lease, the Kubernetes ordinal or the IP table (package machineid).
//
// A program pays for what it uses: on a static, IP-table or Kubernetes ID
// the package links no Redis, etcd or Prometheus client. A lease in Redis
// or etcd needs its provider linked, one import beside the Config that
// lists it (import _ "github.com/vesta-go/vesta/machineid/redislease", or
// machineid/etcdlease; Open refuses a listed provider not linked, naming
// the import), and the issuer's metrics come from package prommetrics
// (RegisterIssuer), which reads the generator's and the lease's Stats.
//
// An Issuer owns a core.Generator and, when DataDir is set, a file time
// guard in that directory: a durable high-water mark that keeps a restart
// with the clock set back from re-issuing IDs, and a lock that keeps two
// processes on one host from sharing a machine ID through the same
// directory. Issuer implements vesta.Issuer, as does the central client, so
// an application switches between publish methods (embedded, central) by
// configuration alone.
//
// Issuer.Masker masks IDs into public texts that hide their time,
// machine and count, and unmasks them (package mask), refusing the texts
// of IDs no issuer of its configuration writes before any lookup
// (Issuer.MaskCheck); the key is the caller's, from mask.ReadKeyFile.
//
// Open does everything before it returns, which may include waiting: a
// fresh Redis lease issues only after its takeover quarantine (lease TTL +
// 2*max_clock_skew, package machineid), a clock behind the mark for up to
// MaxStartupWait. Acquire and Claim.Open split it: Acquire holds the
// machine ID (and the time guard's lock) at once, refusing what Open would
// refuse before waiting; Claim.Open then waits, within its ctx, and starts
// the Issuer. The Go client opens its fallback so.
//
// # Beside the standard library's embed
//
// The package keeps the name of its folder, embed/, one of the
// repository's fixed top-level folders, although it shares that name with
// the standard library's embed. The two rarely meet: a //go:embed
// directive needs only import _ "embed", which binds no name. A file that
// uses embed.FS and this package as well imports this one under an alias,
// the one vesta's own code would use:
//
//	import (
//		"embed"
//
//		vembed "github.com/vesta-go/vesta/embed"
//	)
//
//	//go:embed page
//	var page embed.FS
//
//	iss, err := vembed.Open(ctx, cfg)
package embed
