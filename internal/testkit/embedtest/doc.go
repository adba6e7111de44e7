// Package embedtest opens embedded issuers (package embed) for tests and
// benchmarks, closed when the test ends: Open for a configuration of the
// test's own, Static for an issuer on a static machine ID with its data in
// a temporary directory. Like gentest it imports product packages (embed,
// core); no product package's internal tests may import it.
package embedtest
