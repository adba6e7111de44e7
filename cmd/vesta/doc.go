// Command vesta issues, explains and makes 64-bit IDs, and serves them (and
// segment sequences, with segment.store set) over MessagePack-RPC and HTTP.
//
//	vesta serve   [--config FILE]           central RPC and REST on one generator
//	vesta gen     [-n N] [--machine M] [--servers ADDR,...] [--json] [-v]
//	vesta explain [--layout L] [--json] ID...
//	vesta make    --time T --seq S [--machine M] [--method M] [--type T] [--version V] [--json]
//	vesta seq     create TAG --start N --step S [--desc D] | list [--json]
//	                                        segment sequence tags in segment.store
//	vesta config  check | print [--json]    the effective configuration, judged or listed
//	vesta status  [--url URL] [--json]      a running server's /v1/status
//	vesta health  [--url URL]               the container health check
//	vesta version [--json]
//
// docs/cli.md is the reference. Data goes to stdout (IDs as unsigned
// decimals, one per line, through a buffered writer); errors go to stderr
// with exit status 1, or 2 for a mistake of the caller's: errUsage in how
// the command was called (a flag, an argument; the message ends with the
// usage hint) and errConfig in a configuration value (named by its key and
// where it came from). With no --config the file is VESTA_CONFIG's, else
// the first of conf.SearchPath that exists. Each command is in a file of
// its own; run() is main without the process, so the tests drive the real
// command lines in-process. The load generator is not part of the product:
// it is the command vesta-bench of the module tools/vesta-bench.
package main
