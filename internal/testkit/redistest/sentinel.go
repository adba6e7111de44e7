package redistest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/proctest"
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

// Replicated is a master, replicas of it and three redis-sentinel
// processes monitoring them under MasterName, stopped when the test ends:
// StartReplicated's on free ports of 127.0.0.1, StartReplicatedWith's
// where its Group says. Replication is asynchronous, as Redis's is:
// PauseReplication and Failover make Sentinel promote a replica that lacks
// the latest acknowledged writes. After Failover, Replica is the master and
// Master is dead.
type Replicated struct {
	t      testing.TB
	Master *Server
	// Replicas in the order of Group.Replicas; Replica is the first.
	Replicas   []*Server
	Replica    *Server
	MasterName string
	sentinels  []sentinel
}

// Group says where the processes of StartReplicatedWith run: each one's
// Bind, Port, Wrap and Dial, as StartWith's Options (on a test host of its
// own, say; Args are added to the command line of a server and ignored for
// a Sentinel). The Sentinels know the master by its Addr.
type Group struct {
	Master Options
	// Replicas: one Options per replica; nil is one replica on 127.0.0.1.
	Replicas []Options
	// Sentinels: nil or exactly three.
	Sentinels []Options
}

// sentinel is one redis-sentinel process.
type sentinel struct {
	*proctest.Proc
	opt Options // Bind and Dial
}

func (s sentinel) addr() string {
	host := s.opt.Bind
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(s.Port()))
}

// command sends one command to the Sentinel.
func (s sentinel) command(args ...string) (string, error) {
	return command(s.opt.Dial, s.addr(), args...)
}

// StartReplicated starts a master, a replica in sync with it and three
// Sentinels that know both and each other, on free ports of 127.0.0.1.
func StartReplicated(t testing.TB) *Replicated {
	t.Helper()
	return StartReplicatedWith(t, Group{})
}

// StartReplicatedWith starts the group g describes: the master, its
// replicas in sync with it, then the three Sentinels, and waits until every
// Sentinel knows every replica and the other Sentinels.
func StartReplicatedWith(t testing.TB, grp Group) *Replicated {
	t.Helper()
	if grp.Replicas == nil {
		grp.Replicas = []Options{{}}
	}
	if grp.Sentinels == nil {
		grp.Sentinels = make([]Options, 3)
	}
	if len(grp.Replicas) == 0 || len(grp.Sentinels) != 3 {
		t.Fatalf("redistest: a group of %d replicas and %d Sentinels; want at least one replica and three Sentinels", len(grp.Replicas), len(grp.Sentinels))
	}
	bin := proctest.Binary(t, "redis-sentinel")
	g := &Replicated{t: t, MasterName: "vesta-test"}
	g.Master = StartWith(t, grp.Master)
	for _, opt := range grp.Replicas {
		g.Replicas = append(g.Replicas, StartReplicaWith(t, g.Master, opt))
	}
	g.Replica = g.Replicas[0]
	for _, opt := range grp.Sentinels {
		g.sentinels = append(g.sentinels, g.startSentinel(bin, opt))
	}
	want := strconv.Itoa(len(g.Replicas))
	g.waitFor("every Sentinel knowing the replicas and the other Sentinels", func() error {
		for _, s := range g.sentinels {
			m, err := g.sentinelMaster(s)
			if err != nil {
				return err
			}
			if m["num-slaves"] != want || m["num-other-sentinels"] != "2" {
				return fmt.Errorf("sentinel %s: %d replicas, %s other sentinels", s.addr(), atoi(m["num-slaves"]), m["num-other-sentinels"])
			}
		}
		return nil
	})
	return g
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// startSentinel starts a Sentinel monitoring the master, where opt says;
// its config file is written afresh for each port tried (Sentinel rewrites
// it).
func (g *Replicated) startSentinel(bin string, opt Options) sentinel {
	g.t.Helper()
	dir := g.t.TempDir()
	log := filepath.Join(dir, "sentinel.log")
	conf := filepath.Join(dir, "sentinel.conf")
	s := sentinel{opt: opt}
	if s.opt.Bind == "" {
		s.opt.Bind = "127.0.0.1"
	}
	mhost, mport, _ := net.SplitHostPort(g.Master.Addr())
	spec := proctest.Spec{
		Name: "redis-sentinel",
		Argv: func(port int) ([]string, error) {
			// protected-mode no: the other Sentinels, on other hosts,
			// reach it.
			text := fmt.Sprintf(`port %d
bind %s
protected-mode no
daemonize no
dir %s
logfile %s
sentinel monitor %[5]s %[6]s %[7]s %[8]d
sentinel down-after-milliseconds %[5]s %[9]d
sentinel failover-timeout %[5]s %[10]d
sentinel parallel-syncs %[5]s 1
`, port, s.opt.Bind, dir, log, g.MasterName, mhost, mport, quorum,
				downAfter.Milliseconds(), failoverTimeout.Milliseconds())
			return append(slices.Clone(opt.Wrap), bin, conf), os.WriteFile(conf, []byte(text), 0o644)
		},
		Ready: func(port int) error {
			return ping(s.opt.Dial, net.JoinHostPort(s.opt.Bind, strconv.Itoa(port)))
		},
		Log:          log,
		StartTimeout: startTimeout,
	}
	if opt.Port != 0 {
		s.Proc = proctest.StartOn(g.t, spec, opt.Port)
	} else {
		s.Proc = proctest.Start(g.t, spec)
	}
	return s
}

// sentinelMaster is SENTINEL MASTER as a map.
func (g *Replicated) sentinelMaster(s sentinel) (map[string]string, error) {
	reply, err := s.command("SENTINEL", "MASTER", g.MasterName)
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

// Sentinel is the i-th redis-sentinel process, to stop or kill it. (A
// restart would write its config file afresh, forgetting the epoch and
// master it learnt.)
func (g *Replicated) Sentinel(i int) *proctest.Proc { return g.sentinels[i].Proc }

// SentinelDo sends one command to Sentinel i, as Do does to a server.
func (g *Replicated) SentinelDo(i int, args ...string) (string, error) {
	return g.sentinels[i].command(args...)
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
	v := g.view(g.sentinels[0])
	return v.Master, v.Err
}

// ConfigEpoch is the config epoch of the master as the first Sentinel has
// it (SENTINEL MASTER's config-epoch): each failover raises it.
func (g *Replicated) ConfigEpoch() (int64, error) {
	v := g.view(g.sentinels[0])
	return v.Epoch, v.Err
}

// View is what one Sentinel says of the master.
type View struct {
	Sentinel string // the Sentinel's host:port
	Master   string // host:port of the master it names
	Epoch    int64  // its config-epoch
	Err      error  // the Sentinel did not answer
}

func (v View) String() string {
	if v.Err != nil {
		return fmt.Sprintf("sentinel %s: %v", v.Sentinel, v.Err)
	}
	return fmt.Sprintf("sentinel %s names %s at config epoch %d", v.Sentinel, v.Master, v.Epoch)
}

// Views asks every Sentinel for the master, for a report.
func (g *Replicated) Views() []View {
	out := make([]View, len(g.sentinels))
	for i, s := range g.sentinels {
		out[i] = g.view(s)
	}
	return out
}

func (g *Replicated) view(s sentinel) View {
	v := View{Sentinel: s.addr()}
	m, err := g.sentinelMaster(s)
	if err != nil {
		v.Err = err
		return v
	}
	v.Master = net.JoinHostPort(m["ip"], m["port"])
	v.Epoch, v.Err = strconv.ParseInt(m["config-epoch"], 10, 64)
	return v
}

// WaitPromoted waits until a majority of the Sentinels names s as the
// master, at one config epoch, and s acts as one (INFO role:master), as a
// failover the rest of the Sentinels cannot see (cut off) ends. It returns
// how long that took.
func (g *Replicated) WaitPromoted(s *Server) time.Duration {
	g.t.Helper()
	start := time.Now()
	g.waitNamed(s, len(g.sentinels)/2+1)
	return time.Since(start)
}

// waitNamed waits until n Sentinels name s as the master at one config
// epoch and s acts as one.
func (g *Replicated) waitNamed(s *Server, n int) {
	g.t.Helper()
	want := s.Addr()
	g.waitFor(fmt.Sprintf("%d Sentinels to name %s as the master", n, want), func() error {
		views := g.Views()
		naming := map[int64]int{} // config epoch -> Sentinels naming s at it
		for _, v := range views {
			if v.Err == nil && v.Master == want {
				naming[v.Epoch]++
			}
		}
		if slices.Max(append(slices.Collect(maps.Values(naming)), 0)) < n {
			return fmt.Errorf("%v", views)
		}
		info, err := s.Do("INFO", "replication")
		if err == nil && !strings.Contains(info, "role:master") {
			err = fmt.Errorf("%s is not a master yet", want)
		}
		return err
	})
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
	g.waitNamed(g.Replica, len(g.sentinels))
	return time.Since(start)
}

// Logs returns the last lines of every Sentinel's and server's log, for a
// failure report.
func (g *Replicated) Logs() string {
	var b strings.Builder
	for _, s := range g.sentinels {
		fmt.Fprintf(&b, "sentinel %s:\n%s\n", s.addr(), s.LogTail())
	}
	fmt.Fprintf(&b, "master %s:\n%s\n", g.Master.Addr(), g.Master.LogTail())
	for _, r := range g.Replicas {
		fmt.Fprintf(&b, "replica %s:\n%s\n", r.Addr(), r.LogTail())
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
