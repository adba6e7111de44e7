// Package central is the central ID server: it publishes one
// core.Generator over MessagePack-RPC on TCP (optionally TLS or mutual
// TLS), for Go services that call it through package client and for any
// spec-compliant MessagePack-RPC client in another language. IDs it issues
// carry method 1 (central) and the server's machine ID, from the server
// range.
//
// The frames, procedures, parameter and result shapes and error codes live in
// package wire, which the client shares; the Server type's comment sums up
// the wire format.
//
// A program runs it as
//
//	srv, err := central.NewServer(gen, cfg)
//	go srv.Serve(ln)
//	...
//	srv.Shutdown(ctx) // answers every request read, then closes
//	gen.Close()       // the caller owns the generator
//
// With Config.Sequences (a *segment.Sequencer) the server also issues segment
// sequence numbers (Vesta.NextSeq, Vesta.NextSeqs): inline when the tag's
// buffers hold them, on a goroutine of their own when the store must
// answer.
//
// Each connection has one goroutine that reads requests and answers, at
// once, every call that need not wait. At the sequence's ceiling,
// Vesta.TakeIDs answers at once with what it can and when to retry, while
// GenID and GenIDs wait in the server's core.Share: batches paced at the
// ceiling's rate, waiting calls served round-robin per connection, within
// server-wide and per-connection bounds (past them: unavailable at once).
// A waiting call holds no goroutine; its answer is written by the one
// goroutine its connection starts for such answers, so a peer that does not
// read stalls nobody else. Answers are written when no further request is
// buffered, so a client that pipelines many calls gets their answers in
// few writes.
package central
