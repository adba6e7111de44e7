// Package latency records durations in fixed buckets, without a metrics
// library: the histograms of what vesta's packages measure (a lease's
// renewals in machineid, the waits at the sequence's ceiling in client),
// which a program reads as a Snapshot from their Stats, or exports with
// package prommetrics. Standard library only.
package latency
