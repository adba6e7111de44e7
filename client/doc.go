// Package client is the Go client of the central server (package central):
// it issues IDs by calling one of several servers over MessagePack-RPC and
// keeps issuing from an embedded generator when none of them answers.
// *Client implements vesta.Issuer, as embed.Issuer does, so an application
// moves between embedded and central mode by configuration alone.
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
// the server's layout, epoch, type, version, machine and max_batch.
//
// Every attempt is bounded by Config.Timeout (or the caller's deadline, if
// earlier). An attempt that fails for a reason of that one server — the
// connection refused or broken, no answer in time, or the error codes
// unavailable:, lease_lost: and clock: (see wire.Code.Retryable) — is
// retried on a different server, up to Config.Retries times, each call
// starting at the next server in turn. invalid_argument: (the call cannot
// succeed anywhere) and internal: (a bug, best seen at once) are returned
// as they are: test them with errors.Is(err, &wire.Error{Code: ...}). A
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
// When every breaker is open, or every attempt of a call failed, and
// Config.Fallback is set, the call is served by an embedded generator
// (package embed) that New opened with Config.FallbackConfig. Its IDs
// carry method 0 (embedded) and the fallback's machine ID from the embedded
// range, while the servers' IDs carry method 1 (central) and machine IDs
// from the server range, so the two can never collide. The fallback's time
// guard (FallbackConfig.DataDir, required) keeps a restarted application
// from re-issuing its own fallback IDs. Its machine ID must be unique to
// this application instance, like any embedded issuer's, and there is no
// default: New refuses (machineid.ErrNoMachineID) until FallbackConfig
// chooses one (a static ID, a Redis lease, the Kubernetes ordinal or the
// IP table), or Fallback is false.
//
// The fallback gets its machine ID when the client starts, not when an
// outage begins (when Redis may be unreachable too): New opens it, a Redis
// lease is then renewed until Close, and New fails if no ID can be had.
// FallbackState shows the machine ID, its provider and the lease;
// the start-up log line names them too.
//
// Every call still tries the servers first (open breakers reject at no
// cost), so the first half-open trial that succeeds returns the client to
// central mode. The fallback stays open until Close, ready for the next
// outage. The vesta_client_mode gauge and InFallback tell the mode.
//
// # Layout and epoch
//
// Explain, Make and TransTime run locally, with the layout, epoch, type and
// version the first server reported in Vesta.Info. Until a server has been
// reached they use the fallback's (FallbackConfig's). The fallback opens
// at New, before any server is reached, so it keeps its own configured
// layout, epoch, type and version: configure it like the servers (package
// conf does, from one configuration). If the first server reached differs,
// the client logs an error once and FallbackState().ShapeMismatch says so
// (ErrFallbackShape): fallback IDs would then decode differently from the
// servers'. Make fills missing fields with the first server's version, type
// and machine and the central method.
//
// # Prefetch
//
// With Config.Prefetch > 0 the client keeps up to that many central IDs
// ready: when fewer than half remain, one background goroutine fetches the
// rest with Vesta.GenIDs (Leaf's double buffer), so most NextID calls make
// no round trip. Each buffered ID is handed out once; callers that find the
// buffer empty wait for one refill and otherwise call a server themselves.
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
// # Metrics
//
// With Config.Registerer the client exports:
//
//	vesta_client_calls_total{server,result}  calls by result: ok, invalid_argument,
//	                                         unavailable, lease_lost, clock, internal,
//	                                         timeout, network, protocol, rejected, canceled
//	vesta_client_breaker_state{server}       0 closed, 1 half-open, 2 open
//	vesta_client_fallback_ids_total          IDs issued by the fallback
//	vesta_client_mode                        1 central, 0 fallback
//	vesta_client_prefetch_buffered           prefetched IDs ready
//	vesta_client_fallback_machine_id         the fallback's machine ID (with Fallback)
//
// and, with Fallback, the fallback's machine-ID lease metrics
// (vesta_machine_*{mode="embedded"}, see package machineid).
package client
