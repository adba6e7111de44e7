// Command vesta issues, explains and makes 64-bit IDs, and serves them (and
// segment sequences, with segment.store set) over MessagePack-RPC and HTTP.
//
//	vesta serve   [--config FILE]           central RPC and REST on one generator
//	vesta gen     [-n N] [--machine M] [--servers ADDR,...]
//	vesta explain [--layout L] [--json] ID...
//	vesta make    --time T --seq S [--machine M] [--method M] [--type T] [--version V]
//	vesta seq     create TAG --start N --step S [--desc D] | list [--json]
//	                                        segment sequence tags in segment.store
//	vesta version
//
// Output is unsigned decimal IDs, one per line, through a buffered writer;
// errors go to stderr with exit status 1, or 2 for a mistake in how the
// command was called (a bad flag, argument or configuration value, named in
// the message). Each command is in a file of its own; run() is main without
// the process, so the tests drive the real command lines in-process. The
// load generator is not part of the product: it is the command vesta-bench
// of the module tools/vesta-bench.
package main
