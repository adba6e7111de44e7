// Package promtest reads metrics back out of a Prometheus registry in tests,
// so that tests of the client, the lease and the servers check the numbers
// operators will see.
package promtest
