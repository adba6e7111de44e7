// Package redisstore is a segment.Store on Redis with go-redis: one hash per
// tag (max_id, step, description, updated, run), advanced by a Lua script
// with the tag's step (INCRBY semantics, in one atomic script), so ranges
// from any number of issuers never overlap.
//
// # Durability
//
// Redis acknowledges a write before it is on disk unless the server runs
// with AOF and appendfsync always. A Redis that restarts empty, restarts
// from an older RDB/AOF, or fails over to a replica that lagged, forgets
// reservations it acknowledged; handing out the same ranges again would
// repeat numbers. With appendfsync always (CheckDurability tells) acked
// reservations survive a restart of the server; otherwise, and by default
// in any case, the store keeps a loss floor so that numbers jump but never
// repeat after a loss:
//
//   - The line: line(t) = 1000 × the Redis server's clock in Unix
//     milliseconds (about 1.8e15 today). A range is only handed out if its
//     end stays below line(now) + Ahead (Ahead = 1e9): a tag may run ahead
//     of the line by a billion numbers, far more than any real tag consumes
//     (the line itself grows by a million a second).
//   - Loss detection: every hash records the run_id of the Redis process
//     that last advanced it. A restart or failover changes run_id, so a
//     hash whose run differs may have lost writes (it is the state of an
//     older process); a hash that is gone while a client of this store
//     knew the tag (from a range or the tag list) was lost outright.
//   - The jump: on a detected loss, max_id moves to at least line(now) +
//     Ahead and to at least the highest max_id this client saw, then the
//     range is taken as usual. Every range handed out before the loss ended
//     below line(then) + Ahead <= line(now) + Ahead, so nothing repeats as
//     long as the server's clock did not go back across the restart. The
//     first range after a jump ends just above the line; the store waits
//     (step/1000 ms, bounded by the context) until the line passes it.
//
// The jump costs density (numbers leap to ~1.8e15 after a loss), never
// uniqueness. NoLossFloor turns it off for a Redis that runs appendfsync
// always and never fails over to a lagging replica; it is on by default.
// All numbers stay below 2^53 - 2^32, exact in Redis's Lua (whose numbers
// are doubles) and in JavaScript.
//
// Keys share one hash slot ({prefix}), so the store works on Redis Cluster
// (on one node). Tags missing from the hash that no client knew are
// segment.ErrUnknownTag; recreating such a tag by hand with a start below
// numbers already issued can repeat them, as with any store.
package redisstore
