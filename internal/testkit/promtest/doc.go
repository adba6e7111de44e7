// Package promtest reads metrics back out of a Prometheus registry in tests,
// so that tests of the client, the lease and the servers check the numbers
// operators will see. It is the one place tests walk a Gather(): Value (a
// counter's or gauge's value, a histogram's count), Histogram (count and
// sum) and Series (every series of a name) pick series by label pairs,
// which prometheus/testutil does not (its ToFloat64 reads one collector,
// GatherAndCompare a whole metric's exposition; use those where they fit).
package promtest
