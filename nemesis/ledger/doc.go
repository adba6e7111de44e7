// Package ledger is the nemesis's record of every ID and every sequence
// number handed to any caller, and the checker that finds any of them
// handed out twice.
//
// Writers append fixed-size records to the ledger's directory as they go
// (one Writer per goroutine, buffered, so recording costs the workload
// little); Check reads them back shard by shard, so that repeats among
// hundreds of millions of values are found within a bounded amount of
// memory, and reports each repeated value with every entry that carried
// it: which source got it, and when.
//
// A value lives in a space: IDs share one space (Space 0), each segment
// tag's numbers have their own, since the same number under two tags is
// no repeat.
package ledger
