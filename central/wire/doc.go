// Package wire is the MessagePack-RPC frame format of the central server,
// shared by the server (package central) and the Go client (package client):
// frames only; the error codes and parameter rules it carries are package
// api's.
//
// # Frames
//
// Every frame is one MessagePack array, as in the MessagePack-RPC spec:
//
//	request       [0, msgid, method, params]
//	response      [1, msgid, error, result]
//	notification  [2, method, params]
//
// msgid is an unsigned integer below 2^32 chosen by the caller; the server
// echoes it in the response, and answers requests of one connection in any
// order. method is msgpack-RPC's method field, called the procedure here
// (Request.Procedure, the Proc constants), because "method" in vesta means
// the publish method in an ID's bits (core.Method); it is a string, one of
// the Proc constants. params is an array holding at most one map of named
// arguments; an empty array means no arguments. In a response exactly one
// of error and result is nil. A notification is never answered; since
// every procedure exists for its result, the server reads and drops them.
//
// IDs are unsigned 64-bit integers, never signed ones (a version-1 ID is
// above 2^63): msgpack uint in its shortest form, which is uint 64 for
// every ID issued today, as the time field sits above bit 30. Any integer
// encoding is accepted on input. Integer arguments are
// accepted in any msgpack integer encoding that holds a value of the field;
// negative values, floats, strings, nil, unknown or repeated keys and
// missing required keys are refused.
//
// # Procedures
//
//	Vesta.GenID     []                       -> uint64
//	Vesta.GenIDs    [{count}]                -> [uint64, ...] (count 1 ... max_batch)
//	Vesta.TakeIDs   [{count, singles?}]      -> {ids: [uint64, ...], retry_after_ms: uint64}
//	Vesta.ExpID     [{id}]                   -> Explanation map
//	Vesta.MakeID    [{time, seq, machine?, method?, type?, version?}] -> uint64
//	Vesta.TransTime [{time, type?}]          -> TransTimeResult map
//	Vesta.Info      []                       -> Info map
//	Vesta.NextSeq   [{tag}]                  -> int64 (the next number of a segment sequence)
//	Vesta.NextSeqs  [{tag, count}]           -> [int64, ...] (increasing; count 1 ... max_batch)
//	Vesta.Mask      [{ids, tenant?, kind?}]  -> [str, ...] (the masks of 1 ... max_batch IDs, in order)
//	Vesta.Unmask    [{masks, tenant?, kind?}] -> [uint64, ...] (the IDs of 1 ... max_batch masks, in order)
//	Vesta.Holder    [{id}]                   -> Holder map (the hold that issued the ID, or why none is known)
//
// Sequence numbers are msgpack ints in the codec's encoding of int64
// (fixint, else the shortest signed form); any integer encoding that holds
// an int64 is accepted on input. A tag is a str (or bin) of 1-MaxTagLen
// bytes of UTF-8; the server's issuer checks its characters.
//
// GenID and GenIDs wait at the sequence's ceiling (fairly, within the
// server's budget of waiting IDs, beyond which they fail with unavailable).
// TakeIDs never waits: it returns at once with 0 to count IDs in increasing
// order, and when it gave fewer than count, retry_after_ms (at least 1) says
// in how many milliseconds asking again may give more. Info's take_ids is 1
// on a server that has TakeIDs; an older server sends no such key.
// TakeIDs' singles, 1, says the count IDs are for as many single-ID calls
// a client coalesced into one request (a client's concurrent NextIDs): the
// server takes them in one step and, as single IDs, never paces them at
// the ceiling. Info's singles is 1 on a server that takes the key.
//
// Masking (package mask): ids are IDs as everywhere (an unsigned integer,
// or its decimal text); masks are strings of at most MaxMaskLen bytes,
// tenant at most MaxTenantLen and kind at most MaxKindLen, each UTF-8;
// tenant and kind may be left out or nil (""). A server without a key
// answers not_found; a mask that is none of the tenant and kind's fails
// the call with invalid_argument naming it.
//
// Holder (package api's Holders, which REST's GET /v1/ids/{id}?holder=true
// reads too): the keys of REST's holder object, its booleans 0 or 1, its
// times RFC 3339 UTC strings ("" for none), holds an array of maps and
// skipped an array of strings. Its reader skips unknown keys at both
// levels and grows the arrays with the bytes, never with a header.
//
// # Errors
//
// A response's error is a string that begins with a stable code, a colon
// and a space: "invalid_argument: count 0; want 1-10000". The codes, the
// one mapping from errors to codes and the parsing of parameters given as
// text are package api's, shared with the REST server; this package only
// carries them (AppendResponse writes an *api.Error, DecodeResponse reads
// one back with api.ParseError).
//
// # Hostile input
//
// Split finds where a frame ends without decoding or allocating anything,
// checks that it is well-formed msgpack, and bounds its size and nesting
// depth, so a header that claims four gigabytes costs nothing. Frames are
// decoded only from complete, bounded byte slices, never from a stream:
// the stream decoder of the codec allocates whatever a string header
// claims. Requests are read by a small strict reader of their own, which
// names the offending field in its errors.
//
// # The codec: one path per direction
//
// Every frame is written by hand (encode.go, values.go) and every frame is
// read by hand (Split, DecodeRequest, DecodeResponse, DecodeResult), the
// rare structs (Explanation, TransTimeResult, Info, Holder, the params of ExpID,
// MakeID, TransTime) as well as the hot frames. Why not go-msgpack for the
// rare ones: a second encoder of one format needed its own configuration,
// lint exceptions for its struct tags and a reflection path, while the
// hand-written readers are what bounds allocation on hostile input; the
// rare structs are flat maps of integers and strings, a few lines each.
// A value of a type the package does not know is an encode error, never a
// reflection fallback.
//
// github.com/hashicorp/go-msgpack/v2 (MsgpackHandle{WriteExt: true}: the
// current spec, str 8 and bin) stays as the reference in the tests only:
// they check that every hand-written frame is the codec's, byte for byte
// (struct keys in sorted order, integers in the shortest form of their Go
// type), and that the readers read what it writes. The codec struct tags
// on the types document the keys and keep that comparison possible.
package wire
