// Package machineid decides which machine ID an issuer uses, and keeps two
// issuers from ever using the same one at the same time.
//
// The 1024 machine IDs are split into two disjoint ranges: embedded issuers
// (and the client's fallback) take IDs from the embedded range, central and
// REST servers from the server range. A Range says which IDs a mode may use;
// providers (static, IP table, Redis lease, Kubernetes ordinal) pick one.
package machineid
