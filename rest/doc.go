// Package rest publishes a core.Generator over HTTP (method REST, 2), for
// callers in any language. It is one of the three ways vesta publishes
// its generator, beside package embed (in-process) and package central
// (MessagePack-RPC); `vesta serve` runs it next to the central server on
// the same generator.
//
// A Server is an echo v4 instance behind a net/http server. Its routes
// (the full wire format, with schemas, is served at /openapi.json):
//
// Vesta-compatible, plain text, answering as Vesta's Java REST server does
// for the vesta layout:
//
//	GET /genid                  the ID as an unsigned decimal
//	GET /expid?id=              {"genMethod":..,"machine":..,"seq":..,"time":..,"type":..,"version":..}
//	GET /transtime?time=        the instant as Java's Date.toString prints it, in UTC
//	GET /makeid?time=&seq=[&machine=&method=&type=&version=]
//	                            the made ID; genMethod is an alias of method
//
// JSON API; IDs are always strings in JSON output (they exceed 2^53,
// JavaScript's safe integers) and fields are accepted as strings or numbers:
//
//	GET  /v1/id                 {"id":"…"}
//	GET  /v1/ids?count=N        {"ids":["…",…]}, 1 <= N <= MaxBatch
//	GET  /v1/ids/{id}           the ID explained (core.Explanation's JSON)
//	GET  /v1/ids/{id}?holder=true  and its "holder": the hold that issued it, from the
//	                            lease store's hold history (Config.Holders; holder.go)
//	POST /v1/make               {"time":..,"seq":..[,"machine","method","type","version"]} → {"id":"…"}
//	GET  /v1/transtime?time=    {"time":..,"type":..,"unix_ms":..,"timestamp":"…"}
//	GET  /v1/info               layout, epoch, type, machine, method, version, max_batch, build
//	GET  /v1/seq/{tag}[?count=N] {"tag":"…","id":"…"} or {"tag":"…","ids":[…]}: numbers of a
//	                            segment sequence (Config.Sequences); unknown tag 404, store
//	                            down with the buffers empty 503
//	GET  /v1/fleet              the servers sharing the lease store (Config.Fleet; fleet.go),
//	                            {"store","prefix","members":[…],"skipped","error"}
//	GET  /v1/capacity           how far each limit is: years left in the time field, the
//	                            machine-ID pools, the sequence's ceiling, segment tags
//	                            (Config.Capacity; capacity.go)
//	GET|POST /v1/mask           ?id=N[&id=N…][&tenant=T][&kind=K] or {"ids":[…],…} →
//	                            {"masks":["ord_…",…]}: IDs masked into texts that hide them
//	                            (Config.Masks; mask.go); /v1/id and /v1/ids take masked=true
//	GET|POST /v1/unmask         ?mask=M[&mask=M…][&tenant=T][&kind=K] or {"masks":[…],…} →
//	                            {"ids":["…",…]}; a text that is no mask of the tenant and
//	                            kind is a 400 naming it and why; no key: 404
//
// Leaf's HTTP API, answering as Meituan's leaf-server does (see leaf.go and
// leafops.go): any method but OPTIONS and TRACE, a trailing slash or not.
//
//	/api/segment/get/{key}           the next number of tag key, plain text
//	                                 (application/json when Accept prefers it)
//	/api/snowflake/get/{key}         a fresh ID, likewise; key ignored
//	/decodeSnowflakeId?snowflakeId=  Leaf's decoding (its fixed bits), Leaf's JSON
//	/cache, /db                      the segment buffers and the store's rows:
//	                                 HTML, or JSON when Accept prefers it
//
// Operations, open without the token: GET /healthz, GET /readyz (200 only
// while the generator can issue and Config.Ready passes; with a segment
// store, a "segment" field says whether sequence numbers can be issued),
// GET /metrics (Prometheus; with Config.MetricsAuth it needs the token
// too), GET /openapi.json, and GET / (the operator's
// page: the state of GET /v1/status[?history=seconds], with the last 15
// minutes the server kept (history.go), and the fleet; it explains a
// pasted ID, or an ?id= link's, or issues a fresh one).
//
// With Config.Token set, the ID routes (the Vesta-compatible ones, all of
// Leaf's and /v1/...) need "Authorization: Bearer <token>" and answer 401 with
// "WWW-Authenticate: Bearer" otherwise. A wrong token from a peer address
// that sent 10, then more than one a second, is answered 429 with
// Retry-After, until it is back under that rate; the right token always
// passes (behind a proxy or NAT one misconfigured client must not lock out
// the others).
//
// Browsers: every route but /healthz and /readyz answers only the Host
// names of Config.AllowedHosts and the defaults (421 otherwise), so that a
// DNS-rebinding page reaches nothing; the issuing routes (/genid, /v1/id,
// /v1/ids, /v1/seq/{tag}, Leaf's two) of a server without a token refuse
// (403) a browser's request for another site's page: Sec-Fetch-Site other
// than same-origin or none, an Origin not the server's own, or a browser's
// User-Agent without Sec-Fetch-Site nor the header ClientHeader (origin.go).
// Their answers, errors too, carry Cache-Control: no-store.
//
// Errors on the JSON API and on every other non-Vesta route have one shape,
//
//	{"error":{"code":"invalid_argument","message":"count: 0 out of range 1-10000"}}
//
// whose message names the parameter at fault, with these codes (the
// central server's, from the one mapping of errors to codes both servers
// use, api.CodeOf, plus the HTTP-only ones):
//
//	400 invalid_argument    a parameter or body the server cannot use (413, 415 for size and type)
//	401 unauthenticated     missing or wrong bearer token
//	403 permission_denied   a cross-site browser request for an issuing route
//	404 not_found           no such route
//	405 method_not_allowed  the route exists for other methods (see Allow)
//	421 misdirected_request a Host that is not one of the server's names
//	429 too_many_requests   too many wrong tokens from this address (see Retry-After)
//	503 unavailable         the generator cannot issue now (closed, time guard, timeout)
//	503 lease_lost          the generator is fenced: its machine-ID lease is lost
//	503 clock               the clock is before the epoch or past the last unit
//	500 internal            a bug; details are logged, never sent
//
// The Vesta-compatible routes answer errors with the same status and
// "code: message" as plain text. A caller's mistake is never a 500.
//
// At the ID sequence's ceiling (about a million IDs a second; about four
// million in the leaf layout), /v1/id,
// /v1/ids and /genid wait within the request timeout, fairly between
// client addresses and within MaxWaitingIDs and MaxWaitingCalls; a request
// that would wait past its deadline, or past those bounds, is answered at
// once 503 unavailable with Retry-After (seconds, rounded up), and so is
// one whose deadline passes while it waits.
package rest
