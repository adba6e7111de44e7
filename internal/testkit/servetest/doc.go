// Package servetest runs `vesta serve` processes for the integration
// tests and the nemesis: one Run is one process, started with the
// caller's VESTA_* variables on top of an environment cleared of every
// other VESTA_* variable (an unknown one would stop start-up) and with
// JSON logs, optionally under a command prefix that execs the binary
// (`ip netns exec NS`, to run it on a test host). Every line the process
// writes on stderr goes to the caller (Config.Line) in order, and Exited
// closes only once the last of them has, and the process has been reaped:
// a caller that waits for a log record cannot miss one written just
// before the exit.
//
// It keeps no lines and knows no record: the integration tests keep every
// line and wait for records, the nemesis parses events into the history
// of each run; both build on Run. It imports the standard library only.
package servetest
