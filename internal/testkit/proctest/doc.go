// Package proctest runs a real server program (redis-server,
// redis-sentinel, mariadbd, etcd) for tests: it finds the binary (Binary),
// starts it on a free port of 127.0.0.1, trying another when the port is
// taken before the server binds it (Start), or on a port given (StartOn),
// waits until the server answers, and puts the tail of its log into every
// failure message. Servers that need several ports, all known before the
// first starts (the members of an etcd cluster), take them from FreePorts
// and start with TryStartOn, which returns a failed start for their
// harness to retry on other ports. The test owns the process: Stop
// (SIGTERM, then SIGKILL), Kill (SIGKILL, as a crash), Restart on the same
// port, and a Stop in t.Cleanup, so no process outlives its test. Stop and
// Kill are idempotent and wait for the exit; Stop also ends a server
// stalled with SIGSTOP.
//
// It knows no protocol: the harnesses redistest, mariadbtest and etcdtest
// say how to build the command line (Spec.Argv) and when the server is
// ready (Spec.Ready), embed the Proc in their Server (its Stop, Kill,
// Restart and Running are the Proc's) and add what is theirs: DSNs, Redis
// commands, snapshots, replicas, Sentinels, clusters. Failure lets a
// harness's tests check the message a failing start gives.
package proctest
