package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/proctest"
)

// DialFunc connects to a server, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Options of StartWith: where and how the server runs. The zero Options
// are Start's.
type Options struct {
	// Bind is the address to listen on; "" is 127.0.0.1.
	Bind string
	// Port to listen on; zero is a free port of 127.0.0.1. A port given is
	// not retried (in a network namespace of its own every port is free).
	Port int
	// Wrap prefixes the command line, e.g. `ip netns exec NS` to run in a
	// network namespace; it must exec the server (signals reach it).
	Wrap []string
	// Dial reaches the server for PING and Do (from inside its network
	// namespace, say); nil is net.Dialer's.
	Dial DialFunc
	// Args are more redis-server arguments, e.g. "--replicaof", host, port.
	Args []string
}

// StartWith is Start with options.
func StartWith(t testing.TB, opt Options) *Server {
	t.Helper()
	if opt.Bind != "" {
		// Reached from other hosts of a test network: protected mode would
		// refuse them.
		opt.Args = append([]string{"--protected-mode", "no"}, opt.Args...)
	}
	return startWith(t, false, opt)
}

// Do sends one command and returns its reply as a string (an array's
// elements joined by newlines, nil as ""), or the error reply.
func (s *Server) Do(args ...string) (string, error) { return s.command(args...) }

// Pause stops the server with SIGSTOP: it holds its connections but
// answers nothing, as a process stalled by its host would. Resume
// continues it.
func (s *Server) Pause() { s.Signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.Signal(syscall.SIGCONT) }

// Sentinel timing: a master is down after 1s without an answer, and a
// failover that fails is tried again after 2*3s. A replica whose link to
// the master has been down for more than 10 times down-after (plus the time
// since the master went down) is not promoted, so replication may be
// paused for up to about 10s.
const (
	downAfter       = time.Second
	failoverTimeout = 3 * time.Second
	quorum          = 2
)

// Replicated is a master, one replica of it and three redis-sentinel
// processes monitoring them under MasterName, all on free ports of
// 127.0.0.1 in temporary directories, stopped when the test ends.
// Replication is asynchronous, as Redis's is: PauseReplication and Failover
// make Sentinel promote a replica that lacks the latest acknowledged
// writes. After Failover, Replica is the master and Master is dead.
type Replicated struct {
	t               testing.TB
	Master, Replica *Server
	MasterName      string
	sentinels       []sentinel
}

// sentinel is one redis-sentinel process.
type sentinel struct{ *proctest.Proc }

func (s sentinel) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port())) }

// StartReplicated starts a master, a replica in sync with it and three
// Sentinels that know both and each other.
func StartReplicated(t testing.TB) *Replicated {
	t.Helper()
	bin := proctest.Binary(t, "redis-sentinel")
	g := &Replicated{t: t, MasterName: "vesta-test"}
	g.Master = Start(t)
	g.Replica = StartReplica(t, g.Master)
	for range 3 {
		g.sentinels = append(g.sentinels, g.startSentinel(bin))
	}
	g.waitFor("every Sentinel knowing the replica and the other Sentinels", func() error {
		for _, s := range g.sentinels {
			m, err := g.sentinelMaster(s)
			if err != nil {
				return err
			}
			if m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
				return fmt.Errorf("sentinel %s: %d replicas, %s other sentinels", s.addr(), atoi(m["num-slaves"]), m["num-other-sentinels"])
			}
		}
		return nil
	})
	return g
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// startSentinel starts a Sentinel monitoring the master; its config file
// is written afresh for each port tried (Sentinel rewrites it).
func (g *Replicated) startSentinel(bin string) sentinel {
	g.t.Helper()
	dir := g.t.TempDir()
	log := filepath.Join(dir, "sentinel.log")
	conf := filepath.Join(dir, "sentinel.conf")
	return sentinel{proctest.Start(g.t, proctest.Spec{
		Name: "redis-sentinel",
		Argv: func(port int) ([]string, error) {
			text := fmt.Sprintf(`port %d
bind 127.0.0.1
daemonize no
dir %s
logfile %s
sentinel monitor %[4]s 127.0.0.1 %[5]d %[6]d
sentinel down-after-milliseconds %[4]s %[7]d
sentinel failover-timeout %[4]s %[8]d
sentinel parallel-syncs %[4]s 1
`, port, dir, log, g.MasterName, g.Master.Port(), quorum,
				downAfter.Milliseconds(), failoverTimeout.Milliseconds())
			return []string{bin, conf}, os.WriteFile(conf, []byte(text), 0o644)
		},
		Ready:        func(port int) error { return ping(nil, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) },
		Log:          log,
		StartTimeout: startTimeout,
	})}
}

// sentinelMaster is SENTINEL MASTER as a map.
func (g *Replicated) sentinelMaster(s sentinel) (map[string]string, error) {
	reply, err := command(nil, s.addr(), "SENTINEL", "MASTER", g.MasterName)
	if err != nil {
		return nil, err
	}
	f := strings.Split(reply, "\n")
	m := map[string]string{}
	for i := 0; i+1 < len(f); i += 2 {
		m[f[i]] = f[i+1]
	}
	return m, nil
}

// SentinelAddrs are the Sentinels' host:port, for a client's
// configuration.
func (g *Replicated) SentinelAddrs() []string {
	var out []string
	for _, s := range g.sentinels {
		out = append(out, s.addr())
	}
	return out
}

// MasterAddr is the master's host:port as the first Sentinel names it.
func (g *Replicated) MasterAddr() (string, error) {
	reply, err := command(nil, g.sentinels[0].addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.MasterName)
	if err != nil {
		return "", err
	}
	hp := strings.Split(reply, "\n")
	if len(hp) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME answered %q", reply)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// PauseReplication stops the replica (SIGSTOP) and has the master drop its
// link: from now on the master acknowledges writes that never reach the
// replica, which cannot reconnect while stopped. (Stopped alone, it would
// read what the kernel buffered for it on waking.)
func (g *Replicated) PauseReplication() {
	g.t.Helper()
	g.Replica.Pause()
	if _, err := g.Master.Do("CLIENT", "KILL", "TYPE", "replica"); err != nil {
		g.t.Fatalf("redistest: CLIENT KILL TYPE replica: %v", err)
	}
}

// Failover kills the master (SIGKILL), continues the replica and waits
// until every Sentinel names the replica as the master and it acts as one.
// It returns how long that took.
func (g *Replicated) Failover() time.Duration {
	g.t.Helper()
	start := time.Now()
	g.Master.Kill()
	g.Replica.Resume()
	want := g.Replica.Addr()
	g.waitFor("the Sentinels to promote the replica", func() error {
		for _, s := range g.sentinels {
			reply, err := command(nil, s.addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.MasterName)
			if err != nil {
				return err
			}
			if got := strings.ReplaceAll(reply, "\n", ":"); got != want {
				return fmt.Errorf("sentinel %s names %s", s.addr(), got)
			}
		}
		info, err := g.Replica.Do("INFO", "replication")
		if err == nil && !strings.Contains(info, "role:master") {
			err = errors.New("the replica is not a master yet")
		}
		return err
	})
	return time.Since(start)
}

// Logs returns the last lines of every Sentinel's log, for a failure
// report.
func (g *Replicated) Logs() string {
	var b strings.Builder
	for _, s := range g.sentinels {
		fmt.Fprintf(&b, "sentinel %s:\n%s\n", s.addr(), s.LogTail())
	}
	return b.String()
}

// waitFor polls cond until it returns nil, failing the test after 60s
// (a bound on a hang, not a timing).
func (g *Replicated) waitFor(what string, cond func() error) {
	g.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("redistest: waiting for %s: %v\n%s", what, err, g.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
