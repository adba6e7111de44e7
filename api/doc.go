// Package api is the protocol-neutral half of vesta's calls: the error
// codes every protocol answers with, the one table from the errors a call
// can end with to those codes, and the parsing of parameters given as
// text. The central server (MessagePack-RPC; its frames are package
// central/wire's), the REST server and the Go client all use it, so one
// error reads the same over every protocol and a fix to a message or a
// code lands once.
//
// # Errors
//
// An error is a string that begins with a stable code, a colon and a space:
// "invalid_argument: count 0; want 1-10000". The codes are the Code
// constants; ParseError splits such a string back into code and message.
// CodeOf is the one mapping from errors (the generator's and the segment
// issuer's sentinels, a caller's context) to codes: the central server
// answers with ErrorOf, the REST server turns the same codes into HTTP
// statuses, and Leaf's routes into Leaf's result codes. A new kind of error
// gets its row in that mapping, not in a server.
//
// # Parameters
//
// ParseUint and ParseField hold the rules for parameter values given as
// text (a query parameter, a JSON or MessagePack string), one set for both
// servers: see params.go.
//
// # The holder of an ID
//
// Holders answers which hold of a machine ID issued an ID, for REST's GET
// /v1/ids/{id}?holder=true and the central server's Vesta.Holder alike
// (holder.go): one cache of the hold histories for both servers of a
// process, so that questions over either protocol are at most one store
// read per machine ID a second.
package api
