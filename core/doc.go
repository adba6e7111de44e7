// Package core is the heart of vesta: the 64-bit ID layouts and the
// generator that issues IDs from them.
//
// An ID packs six unsigned fields: version (1 bit), type (1 bit), method
// (2 bits), machine (10 bits), time (30 or 40 bits) and seq (20 or 10 bits).
// Type 0 (max-peak) counts seconds with a 20-bit sequence; type 1
// (min-granularity) counts milliseconds with a 10-bit sequence. Two layouts
// place the fields: Sorted (the default; time above everything but type and
// version, so IDs sort by time across machines and publish methods) and Vesta
// (bit-compatible with the Java Vesta issuer). A third, Leaf, is Leaf's and
// Twitter's snowflake: 41 bits of milliseconds since Leaf's epoch, 10 of
// machine, 12 of seq, and no type, version or method bits. A Codec turns
// fields into IDs and back for one layout and epoch.
//
// A Generator issues IDs for one machine ID. Its state is one atomic word
// holding the last (time unit, seq) pair, so IDs from one generator strictly
// increase and a unit whose sequence ran out carries into the next unit
// instead of repeating it. Its clock is read once from the wall and then
// advanced by the monotonic clock, so wall-clock steps while running change
// nothing; an optional time guard (a GuardStore) keeps a durable high-water
// mark so that a restart with the clock behind cannot re-issue old IDs.
// What only a machine-ID lease (package machineid) does to a generator —
// fence it, move it to another machine ID — goes through its Control
// handle, so the Generator's own methods are those an embedding user needs.
//
// The packages embed, central and rest publish a Generator in-process, over
// MessagePack-RPC and over HTTP; this package imports nothing outside the
// standard library.
package core
