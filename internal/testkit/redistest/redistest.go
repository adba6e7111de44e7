package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/proctest"
	"github.com/vesta-go/vesta/machineid/redislease"
)

// startTimeout bounds how long a start waits for the first PONG, and a
// replica for its link to the master.
const startTimeout = 20 * time.Second

// Server is one redis-server process. Its methods are safe for concurrent
// use; they fail the test (t.Fatal) when the server cannot be controlled.
// Stop, Kill, Restart and Running are proctest's: Restart comes back on the
// same port and, without persistence, empty, as a Redis that lost its data
// would.
type Server struct {
	*proctest.Proc
	t       testing.TB
	dir     string
	cluster bool
	opt     Options // of StartWith
}

// Start starts redis-server on a free port in t.TempDir() and waits until
// it answers PING. It is stopped in t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	return startWith(t, false, Options{})
}

// StartCluster is Start for a Redis Cluster of one node holding every hash
// slot, so that clients meet Cluster's rules (a script's keys must share a
// slot) without a fleet of processes. Restart keeps the slots.
func StartCluster(t testing.TB) *Server {
	t.Helper()
	return startWith(t, true, Options{})
}

func startWith(t testing.TB, cluster bool, opt Options) *Server {
	t.Helper()
	bin := proctest.Binary(t, "redis-server")
	s := &Server{t: t, dir: t.TempDir(), cluster: cluster, opt: opt}
	spec := proctest.Spec{
		Name:         "redis-server",
		Argv:         func(port int) ([]string, error) { return s.argv(bin, port), nil },
		Ready:        s.ready,
		Log:          filepath.Join(s.dir, "redis.log"),
		StartTimeout: startTimeout,
	}
	if opt.Port != 0 {
		s.Proc = proctest.StartOn(t, spec, opt.Port)
	} else {
		s.Proc = proctest.Start(t, spec)
	}
	return s
}

// argv is the command line of a start on port.
func (s *Server) argv(bin string, port int) []string {
	args := []string{"--port", strconv.Itoa(port), "--bind", s.host(),
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis.log"), "--daemonize", "no",
		// A replica's first full sync starts at once: Redis 7 waits 5 s by
		// default for more replicas to share a diskless transfer, which
		// every test with a replica would pay.
		"--repl-diskless-sync-delay", "0",
		// A stop ends at once: on SIGTERM Redis 7 waits up to 10 s for
		// lagging replicas to catch up, which one cut off or paused never
		// does.
		"--shutdown-timeout", "0"}
	if s.cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	}
	args = append(args, s.opt.Args...)
	return append(append(slices.Clone(s.opt.Wrap), bin), args...)
}

// ready reports whether the server on port answers PING (and, for a
// cluster, whether the cluster is up).
func (s *Server) ready(port int) error {
	addr := s.addr(port)
	err := ping(s.opt.Dial, addr)
	if err == nil && s.cluster {
		err = s.clusterUp(addr)
	}
	return err
}

// StartReplica starts a replica of master (REPLICAOF), like Start, and
// waits until its link to the master is up and the master counts it: a
// write on the master, then WAIT for every replica, is acknowledged.
func StartReplica(t testing.TB, master *Server) *Server {
	t.Helper()
	return StartReplicaWith(t, master, Options{})
}

// StartReplicaWith is StartReplica with options, as StartWith's (a replica
// on a test host of its own, say).
func StartReplicaWith(t testing.TB, master *Server, opt Options) *Server {
	t.Helper()
	host, port, _ := net.SplitHostPort(master.Addr())
	opt.Args = append(slices.Clone(opt.Args), "--replicaof", host, port)
	s := StartWith(t, opt)
	deadline := time.Now().Add(startTimeout)
	for {
		info, err := s.command("INFO", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: replica %s of %s: link not up within %s (%v): %s", s.Addr(), master.Addr(), startTimeout, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The link being up on the replica's side is not enough: the master
	// counts a replica in WAIT only once its first ACK came (replicas ack
	// once a second), and answers WAIT with 0 until then. A write (PUBLISH:
	// replicated, and it touches no key) and WAIT for every replica, on one
	// connection, show that the master counts them all.
	for {
		err := master.replicasAck()
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: replica %s of %s: not acknowledging writes within %s: %v", s.Addr(), master.Addr(), startTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// replicasAck is nil when every replica of s acknowledges a write within a
// second (WAIT).
func (s *Server) replicasAck() error {
	info, err := s.command("INFO", "replication")
	if err != nil {
		return err
	}
	var n string
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n = v
		}
	}
	if n == "" || n == "0" {
		return fmt.Errorf("INFO replication shows no replica: %s", info)
	}
	r, err := commands(s.opt.Dial, s.Addr(), []string{"PUBLISH", "redistest:replica-sync", "x"}, []string{"WAIT", n, "1000"})
	if err != nil {
		return err
	}
	if r[1] != n {
		return fmt.Errorf("WAIT %s: %s replicas acknowledged a write", n, r[1])
	}
	return nil
}

// Command sends one command and returns its reply as text (a simple or
// bulk string; an integer as its digits); an error reply is an error.
func (s *Server) Command(args ...string) (string, error) { return s.command(args...) }

// FlushAll deletes every key (FLUSHALL), as an operator's mistake would,
// failing the test if the server does not answer.
func (s *Server) FlushAll() {
	s.t.Helper()
	if reply, err := s.command("FLUSHALL"); err != nil || reply != "OK" {
		s.t.Fatalf("redistest: FLUSHALL on %s: %q, %v", s.Addr(), reply, err)
	}
}

// Snapshot saves the data set (SAVE) and returns the RDB file's bytes, for
// RestoreSnapshot.
func (s *Server) Snapshot() []byte {
	s.t.Helper()
	if reply, err := s.command("SAVE"); err != nil || reply != "OK" {
		s.t.Fatalf("redistest: SAVE on %s: %q, %v", s.Addr(), reply, err)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "dump.rdb"))
	if err != nil {
		s.t.Fatalf("redistest: reading the snapshot: %v", err)
	}
	return b
}

// KillAndRestart kills the server (SIGKILL) and starts it again on the same
// port from rdb: nil is an EMPTY data dir (every RDB and AOF file
// deleted), a Redis that lost everything; a Snapshot is a Redis rolled
// back to it (a restore from backup, or asynchronous persistence that lost
// the latest writes). Either way its run_id is new.
func (s *Server) KillAndRestart(rdb []byte) {
	s.t.Helper()
	s.Kill()
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".rdb") || strings.HasPrefix(n, "appendonly") {
			if err := os.RemoveAll(filepath.Join(s.dir, n)); err != nil {
				s.t.Fatalf("redistest: emptying the data dir: %v", err)
			}
		}
	}
	if rdb != nil {
		if err := os.WriteFile(filepath.Join(s.dir, "dump.rdb"), rdb, 0o644); err != nil {
			s.t.Fatalf("redistest: restoring the snapshot: %v", err)
		}
	}
	s.Restart()
}

// Established makes the server look, to machine-ID leases under prefix,
// like a Redis their claims have known for an hour: the record of when
// claims first saw this instance (machineid.StoreKey) is written with its
// identity and a since_ms an hour back. A claim of a never-used ID then
// starts at once, as on a Redis in service, instead of waiting out the
// quarantine that a new Redis costs (machineid.MaxRedisReach): for tests
// whose subject is not a data loss. A restart or FLUSHALL makes it new
// again, as it would in production.
func (s *Server) Established(prefix string) {
	s.t.Helper()
	srv, err1 := s.command("INFO", "server")
	rep, err2 := s.command("INFO", "replication")
	if err := errors.Join(err1, err2); err != nil {
		s.t.Fatalf("redistest: INFO on %s: %v", s.Addr(), err)
	}
	field := func(info, name string) string {
		_, after, _ := strings.Cut(info, name+":")
		v, _, _ := strings.Cut(after, "\r\n")
		return v
	}
	since := time.Now().Add(-time.Hour).UnixMilli()
	if _, err := s.command("HSET", redislease.StoreKey(prefix), "run_id", field(srv, "run_id"),
		"replid", field(rep, "master_replid"), "since_ms", strconv.FormatInt(since, 10)); err != nil {
		s.t.Fatalf("redistest: writing %s on %s: %v", redislease.StoreKey(prefix), s.Addr(), err)
	}
}

// Addr is host:port of the server, the same across restarts.
func (s *Server) Addr() string { return s.addr(s.Port()) }

func (s *Server) addr(port int) string { return net.JoinHostPort(s.host(), strconv.Itoa(port)) }

func (s *Server) host() string {
	if s.opt.Bind != "" {
		return s.opt.Bind
	}
	return "127.0.0.1"
}

// Dir is the server's working directory (its log is redis.log there).
func (s *Server) Dir() string { return s.dir }

// clusterUp gives a fresh node at addr every slot and reports whether the
// cluster is ready.
func (s *Server) clusterUp(addr string) error {
	info, err := command(s.opt.Dial, addr, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	if strings.Contains(info, "cluster_state:ok") {
		return nil
	}
	if strings.Contains(info, "cluster_slots_assigned:0") {
		if reply, err := command(s.opt.Dial, addr, "CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil || reply != "OK" {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE: %q, %v", reply, err)
		}
	}
	return fmt.Errorf("cluster not ready yet")
}

// ping sends PING to addr and expects PONG.
func ping(dial DialFunc, addr string) error {
	reply, err := command(dial, addr, "PING")
	if err == nil && reply != "PONG" {
		err = fmt.Errorf("PING answered %q", reply)
	}
	return err
}

// command sends one command to the server.
func (s *Server) command(args ...string) (string, error) {
	return command(s.opt.Dial, s.Addr(), args...)
}

// command sends one command and returns its reply: a simple or bulk
// string or an integer, or an error reply as an error. dial nil is
// net.Dialer's.
func command(dial DialFunc, addr string, args ...string) (string, error) {
	r, err := commands(dial, addr, args)
	if err != nil {
		return "", err
	}
	return r[0], nil
}

// commands sends commands on one connection, as command does one, and
// returns their replies; the first error reply ends it.
func commands(dial DialFunc, addr string, cmds ...[]string) ([]string, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	for _, args := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	rd := bufio.NewReader(c)
	out := make([]string, len(cmds))
	for i := range cmds {
		if out[i], err = reply(rd); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// reply reads one reply; an array's elements are joined by newlines, a nil
// reply is "".
func reply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "+"), strings.HasPrefix(line, ":"):
		return line[1:], nil
	case strings.HasPrefix(line, "-"):
		return "", errors.New(line[1:])
	case strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad bulk reply %q", line)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case strings.HasPrefix(line, "*"):
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad array reply %q", line)
		}
		var out []string
		for range max(n, 0) {
			e, err := reply(r)
			if err != nil {
				return "", err
			}
			out = append(out, e)
		}
		return strings.Join(out, "\n"), nil
	}
	return line, nil
}
