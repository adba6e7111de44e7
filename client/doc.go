// Package client is the Go client of the central server (package central):
// it issues IDs by calling one of several servers over MessagePack-RPC and
// keeps issuing from an embedded generator when none of them answers.
// *Client implements vesta.Issuer, as embed.Issuer does, so an application
// moves between the embedded and central publish methods by configuration
// alone.
//
// # Calls
//
// Each server gets Config.ConnsPerServer TCP (optionally TLS or mutual TLS)
// connections, dialled on first use. Calls are pipelined on them: each
// carries its own msgid, a writer goroutine sends every call queued since
// its last write in one write (after yielding once, so that callers about
// to queue join the same write), and a reader goroutine hands each reply to
// its caller, so a few connections carry any number of concurrent callers.
// The first call on every connection is Vesta.Info, which tells the client
// the server's layout, epoch, type, version, machine and max_batch, and
// whether it has Vesta.TakeIDs (take_ids).
//
// IDs come from Vesta.TakeIDs when the server has it (NextID, NextIDs and
// prefetch refills alike), else from Vesta.GenID and Vesta.GenIDs (older
// servers). A call asks one server for at most its max_batch; larger counts
// are split into pieces, each asked from the next server in turn.
//
// # At the ceiling: busy is not dead
//
// A server's machine ID issues at most its sequence ceiling (1,048,576
// IDs/s for max-peak) plus max_borrow of credit. Vesta.TakeIDs never waits
// for it: it answers at once with the IDs it can issue now, and when they
// are fewer than asked, with retry_after_ms, when its sequence has room
// again. Such a busy answer is a success for the breaker, keeps the
// connection and never sends the call to the fallback. The client marks
// the server busy until then (every call of the client skips it
// meanwhile) and asks the next server for the rest at once, so that n
// servers give about n ceilings. Only when every server was busy (or down)
// in one turn does the call wait: until the earliest busy mark passes
// (retry_after_ms is capped at 2s), bounded by the caller's context and by
// Close, never by Config.Timeout, and then walks the servers again. So
// callers that want more than the ceilings get every ID they asked for,
// later. A dead or silent server is still detected by the per-attempt
// Timeout, and failed over, while a busy one is waited for; the fallback
// serves only when no server answered at all.
//
// Every attempt is bounded by Config.Timeout (or the caller's deadline, if
// earlier). An attempt that fails for a reason of that one server — the
// connection refused or broken, no answer in time, or the error codes
// unavailable:, lease_lost: and clock: (see api.Code.Retryable) — is
// retried on a different server, up to Config.Retries times, each call
// starting at the next server in turn. invalid_argument: (the call cannot
// succeed anywhere) and internal: (a bug, best seen at once) are returned
// as they are: test them with errors.Is(err, &api.Error{Code: ...}). A
// reply that comes after its caller gave up is dropped: the ID it carried
// is never used, which costs a number but cannot duplicate one. A
// connection that stays silent past a timeout is closed and dialled again.
//
// # Failover
//
// Each server has a circuit breaker (sony/gobreaker): Config.BreakerFailures
// consecutive failed attempts open it, and the client stops calling that
// server; after Config.BreakerTimeout one trial call goes through
// (half-open), and its success closes the breaker again.
//
// When every breaker is open, or every attempt of a call failed, and the
// fallback is on (the default; Config.NoFallback turns it off), the call is
// served by an embedded generator
// (package embed) that New opened with Config.FallbackConfig. Its IDs
// carry method 0 (embedded) and the fallback's machine ID from the embedded
// range, while the servers' IDs carry method 1 (central) and machine IDs
// from the server range, so the two can never collide. The fallback's time
// guard (FallbackConfig.DataDir, required) keeps a restarted application
// from re-issuing its own fallback IDs. Its machine ID must be unique to
// this application instance, like any embedded issuer's, and there is no
// default: New refuses (machineid.ErrNoMachineID) until FallbackConfig
// chooses one (a static ID, a Redis lease, the Kubernetes ordinal or the
// IP table), or NoFallback is set.
//
// The fallback gets its machine ID when the client starts, not when an
// outage begins (when Redis may be unreachable too): New acquires it (a
// Redis lease is then renewed until Close) and fails if no ID can be had.
// New does not wait for the rest: a fresh Redis lease issues only after its
// takeover quarantine (machineid.MaxRedisReach less max_borrow, 19 s at the
// defaults), and the generator then starts, in the background. A call that
// needs the fallback before it is ready waits for it within its own
// context; when that ends first, the call fails with the servers' error
// joined with ErrFallbackNotReady. If the opening fails (a lease lost
// during its quarantine, a clock behind the time guard's mark past
// MaxStartupWait), that is logged, and every call needing the fallback
// fails with that error; it is not retried. FallbackState shows the
// machine ID, its provider, the lease and whether the fallback is ready
// (and why not); the start-up log line names them too, and one line says
// when the fallback became ready, and after how long.
//
// Every call still tries the servers first (open breakers reject at no
// cost), so the first half-open trial that succeeds returns the client to
// the central method. The fallback stays open until Close, ready for the
// next outage. The vesta_client_method gauge and InFallback tell the method.
//
// # Layout and epoch
//
// Explain, Make and TransTime run locally, with the layout, epoch, type and
// version the first server reported in Vesta.Info. Until a server has been
// reached they use the fallback's (FallbackConfig's). Make fills missing
// fields with the first server's version, type and machine and the central
// method.
//
// IDs of two layouts can be equal 64-bit values (369367187461245959 is an
// embedded ID of machine 5 in the sorted layout and of machine 7 in the
// vesta layout), and IDs of two epochs, types or versions decode
// differently, so the client takes IDs of one shape only: the first
// server's. A server that reports another shape is refused (ErrServerShape):
// calls that reach it move on to the other servers at once, without
// counting against its breaker, and are counted as
// vesta_client_calls_total{result="shape"}; each of its connections logs an
// error. Its sequences (NextSeq) are still used: they are not IDs. The
// fallback, opened before any server is reached, keeps its own configured
// layout, epoch, type and version: configure it like the servers (package
// conf does, from one configuration). If the first server reached differs,
// the fallback refuses to issue: every call that would use it fails with
// an error wrapping ErrFallbackShape, naming both shapes, logged once and
// shown by FallbackState().ShapeMismatch. IDs it issued before any server
// was reached stay issued.
//
// # Prefetch
//
// With Config.Prefetch > 0 the client keeps up to that many central IDs
// ready: when fewer than half remain, one background goroutine fetches the
// rest (Leaf's double buffer), in pieces of at most max_batch, each from the
// next server in turn and put in the buffer as it comes, so most NextID
// calls make no round trip and a refill spreads over every server. Each
// buffered ID is handed out once; callers that find the buffer empty queue
// and are handed IDs by the refills, first come, first served. At the
// ceiling the refill waits for the servers as any call does, and the
// callers wait with it (each bounded by its own context); when a refill
// fails (no server answered), they call a server themselves, or the
// fallback.
// NextIDs(n) takes n from the buffer when it holds that many: the pieces
// are kept in order, so a batch is copied out (or, for NextIDs, handed out
// as its part of the piece, without a copy) with no work per ID.
// Fallback IDs never enter the buffer. Prefetched IDs are issued at fetch
// time, so with a large buffer and a slow consumer they are older than
// their hand-out time (their time field says when the server issued them).
//
// # Segment sequences
//
// NextSeq and NextSeqs issue numbers of a tag's segment sequence (Leaf's
// segment mode) through Vesta.NextSeq and Vesta.NextSeqs, with the same
// timeouts, retries on other servers and breakers as IDs, but no
// fallback: the numbers come from the store the servers share. With
// Config.SeqPrefetch each tag a server has issued gets a buffer of that
// many numbers, refilled in the background when half is used; at most
// Config.SeqMaxTags tags have one (the least recently used is dropped, its
// numbers skipped). Numbers are unique across every server and client of
// a store; they increase within one server only, so a client spreading
// calls over several servers sees them unordered (NextSeqs sorts its
// batch).
//
// # Masking
//
// Mask and Unmask turn IDs into public texts that hide their time,
// machine and count, per tenant and kind, and back (package mask), through
// Vesta.Mask and Vesta.Unmask: the servers hold the key, so applications
// need none. They are retried on other servers as sequence calls are, and
// have no fallback (without a server there is no key). A text that is no
// mask of the tenant and kind fails Unmask with invalid_argument naming
// it; a server without a key answers not_found.
//
// # The holder of an ID
//
// Holder asks a server which hold issued an ID (Vesta.Holder): the
// process, lease and span of the hold of its machine ID whose span holds
// its instant, from the lease store's hold history, or why none is known;
// a conflict (two holds) is a broken promise the server counts. Retried
// on other servers as sequence calls are; no fallback (the history is the
// servers' store's).
//
// # Metrics
//
// Stats returns what the client measured: its calls per server by result,
// each breaker's state, the method of the IDs handed out last, the
// prefetched IDs, the waits at the servers' ceiling, the fallback's state
// and the IDs it issued; FallbackLease's Stats, the fallback's lease. The
// client imports no metrics library: package prommetrics (RegisterClient)
// exports them to Prometheus as
//
//	vesta_client_calls_total{server,result}  calls by result: ok, busy (fewer IDs than
//	                                         asked: the server's ceiling), invalid_argument,
//	                                         unavailable, lease_lost, clock, internal,
//	                                         timeout, network, protocol, rejected, canceled,
//	                                         shape (refused: ErrServerShape)
//	vesta_client_breaker_state{server}       0 closed, 1 half-open, 2 open
//	vesta_client_method                      the last IDs' publish method: 1 central, 0 embedded (fallback)
//	vesta_client_prefetch_buffered           prefetched IDs ready
//	vesta_client_fallback_machine_id         the fallback's machine ID (unless NoFallback)
//	vesta_client_fallback_ready              1 once the fallback may issue, 0 before (unless NoFallback)
//	vesta_ids_issued_total{method="embedded"} IDs issued by the fallback (unless NoFallback)
//	vesta_ceiling_waits_total{method="central"} calls that waited because every server was busy
//	vesta_ceiling_wait_seconds{method="central"} how long they waited (histogram)
//
// and, unless NoFallback, the fallback's machine-ID lease metrics
// (vesta_machine_*{range="embedded"}). The issued and ceiling metrics share
// their names with the servers' and the embedded issuer's, and keep their
// counts after Close.
package client
