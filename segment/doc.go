// Package segment issues dense, increasing numbers per business tag from
// ranges reserved in a shared store, as Meituan's Leaf does in its segment
// mode (号段模式): order, invoice or ticket numbers that depend on no clock
// and survive a store outage for as long as the buffered ranges last.
//
// A Store holds one row per tag (Leaf's leaf_alloc: biz_tag, max_id, step).
// Next advances max_id by a step in one atomic operation and answers the
// range [max_id-step, max_id-1], exactly Leaf's, so Leaf and vesta can share
// one table without repeating a number. Stores live in subpackages
// (segment/mysqlstore on Leaf's own table, segment/redisstore); MemStore
// here is for tests.
//
// An Sequencer keeps per tag Leaf's double buffer: the current range, and the
// next one fetched in the background once Threshold (Leaf: 10%) of the
// current one is issued, so no caller waits on the store in the steady
// state. The step is dynamic as in Leaf: when two fetches come less than
// TargetDuration (15 min) apart, the next range is twice as long, up to
// MaxStep (1,000,000); more than twice TargetDuration apart, half as long,
// never below the stored step.
//
// Guarantees:
//   - A number is never issued twice by any number of issuers sharing a
//     store, across restarts and crashes, as long as the store keeps what
//     it acknowledged (see the stores' durability notes). Numbers of a range
//     not issued before a restart are skipped, as in Leaf.
//   - Within one issuer a tag's numbers increase; across issuers they are
//     unique but not ordered (each issuer works through its own ranges).
//   - A store that fails is felt only when a tag's buffers run out: calls
//     then fail at once with ErrUnavailable (never a stale or repeated
//     number) and issuing resumes by itself once the store answers; the
//     issuer retries every RetryBackoff in the background.
//   - A range not above one the issuer fetched before (a store that lost
//     writes) is refused with ErrBadRange, not issued.
//
// Tags are names of 1-128 characters of [A-Za-z0-9_.:-] (Leaf's biz_tag is
// varchar(128)); the list is re-read from the store every RefreshTags and
// on a request for a tag not yet known (at most once a second).
package segment
