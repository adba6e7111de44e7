// Package embed is the embedded issuer: a Go application imports it and
// issues IDs in-process, with no server to call. IDs carry method 0
// (embedded) and a machine ID from the embedded range (default 0-923), so
// they can never collide with IDs from central or REST servers. There is no
// default machine ID: Open refuses (machineid.ErrNoMachineID) until the
// configuration chooses one unique to the instance — a static ID, a Redis
// lease, the Kubernetes ordinal or the IP table (package machineid).
//
// An Issuer owns a core.Generator and, when DataDir is set, a file time
// guard in that directory: a durable high-water mark that keeps a restart
// with the clock set back from re-issuing IDs, and a lock that keeps two
// processes on one host from sharing a machine ID through the same
// directory. Issuer implements vesta.Issuer, as does the central client, so
// an application switches between publish methods (embedded, central) by
// configuration alone.
package embed
