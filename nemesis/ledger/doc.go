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
// A ledger is a directory: shard files of 24-byte records (space uint32,
// value uint64, source uint32, unix nanoseconds int64; little endian), a
// value's shard fixed by a hash of its space and value so that every copy
// of it lands in the same one, and names.json, which Close writes with the
// names of the sources and spaces. Reopen reads such a directory, so that
// a ledger can be checked by another process than the one that wrote it.
//
// A value lives in a space: IDs share one space (Space 0), each segment
// tag's numbers have their own, since the same number under two tags is
// no repeat.
package ledger
