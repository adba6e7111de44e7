package etcdtest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/internal/testkit/proctest"
	"github.com/vesta-go/vesta/internal/testkit/tlstest"
)

// The members' raft timings (doc.go says why these).
const (
	heartbeat = 100 * time.Millisecond
	election  = time.Second
)

// Bounds of a member process's start (until its peer port answers) and
// of the waits for a leader or a member serving clients, and of one
// member's answer to Status (a paused or cut-off member never answers).
// They bound hangs; they time nothing.
const (
	startTimeout   = 20 * time.Second
	waitTimeout    = 30 * time.Second
	requestTimeout = time.Second
	pollEvery      = 50 * time.Millisecond
)

// Options of StartCluster: where and how each member runs. The zero
// Options are Start's: every member on free ports of 127.0.0.1.
type Options struct {
	// Members holds one MemberOptions per member, in order; nil is the
	// zero MemberOptions for every member.
	Members []MemberOptions
	// TLS, when set, makes the members serve clients over TLS with
	// ServerCert and ServerKey and require a client certificate signed by
	// CA (mutual TLS); Config's clients present ClientCert. Peers speak
	// plain HTTP among themselves.
	TLS *tlstest.Files
}

// MemberOptions say where one member runs.
type MemberOptions struct {
	// Bind is the address the member listens on and advertises; "" is
	// 127.0.0.1.
	Bind string
	// ClientPort and PeerPort, both or neither; zero is free ports of
	// 127.0.0.1. Ports given are not retried (in a network namespace of
	// its own every port is free).
	ClientPort, PeerPort int
	// Wrap prefixes the command line, e.g. `ip netns exec NS` to run in a
	// network namespace; it must exec etcd (signals reach it).
	Wrap []string
	// Dial reaches the member from the test (from inside its network
	// namespace, say), for the harness's checks and the clients of
	// Config; nil is net.Dialer's.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Cluster is the etcd members of a test, forming one cluster. Its methods
// and its members' are safe for concurrent use; they fail the test when
// the cluster cannot be controlled, naming the member and putting the
// members' log tails into the message.
type Cluster struct {
	t       testing.TB
	members []*Member
	tls     *tlstest.Files   // Options.TLS
	cli     *clientv3.Client // the harness's own, for Status

	mu    sync.Mutex
	token string // --initial-cluster-token; a new one after Wipe
}

// Member is one etcd process of a cluster. Stop, Kill, Restart, Running
// and LogTail are proctest's; Restart comes back on the same ports from
// the member's data directory, and returns once the process answers its
// peers: it serves clients once it has rejoined a quorum (WaitServing).
type Member struct {
	*proctest.Proc
	c                    *Cluster
	name                 string // m0, m1, ...
	dir                  string // holds data/ and etcd.log
	opt                  MemberOptions
	clientPort, peerPort int
	http                 *http.Client // for the peer port's /version
	// existing: the member was added to a running cluster (Replace), so
	// an empty data directory joins it instead of bootstrapping; c.mu.
	existing bool
}

// Start starts a cluster of one member; see StartCluster.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return StartCluster(t, 1, Options{})
}

// StartCluster starts n members forming a new cluster of their own (a
// unique --initial-cluster-token), each with its data directory in
// t.TempDir(), and waits until every member serves clients and follows
// one leader. They are stopped in t.Cleanup.
func StartCluster(t testing.TB, n int, opt Options) *Cluster {
	t.Helper()
	bin := proctest.Binary(t, "etcd")
	if n < 1 || len(opt.Members) != 0 && len(opt.Members) != n {
		t.Fatalf("etcdtest: a cluster of %d members with %d MemberOptions", n, len(opt.Members))
	}
	c := &Cluster{t: t, token: newToken(), tls: opt.TLS}
	free := 0 // how many ports to find
	for i := range n {
		m := &Member{c: c, name: "m" + strconv.Itoa(i), dir: t.TempDir()}
		if opt.Members != nil {
			m.opt = opt.Members[i]
		}
		if (m.opt.ClientPort == 0) != (m.opt.PeerPort == 0) {
			t.Fatalf("etcdtest: member %s: ClientPort %d and PeerPort %d: give both or neither", m.name, m.opt.ClientPort, m.opt.PeerPort)
		}
		if m.opt.ClientPort == 0 {
			free += 2
		}
		m.clientPort, m.peerPort = m.opt.ClientPort, m.opt.PeerPort
		m.http = &http.Client{Timeout: requestTimeout, Transport: &http.Transport{DialContext: m.dial, DisableKeepAlives: true}}
		c.members = append(c.members, m)
	}
	tries := 1
	if free > 0 {
		tries = proctest.FreePortTries
	}
	var err error
	for range tries {
		if free > 0 {
			ports, perr := proctest.FreePorts(free)
			if perr != nil {
				t.Fatalf("etcdtest: finding free ports: %v", perr)
			}
			for _, m := range c.members {
				if m.opt.ClientPort == 0 {
					m.clientPort, m.peerPort, ports = ports[0], ports[1], ports[2:]
				}
			}
		}
		if err = c.startAll(bin); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	cli, err := clientv3.New(c.Config())
	if err != nil {
		t.Fatalf("etcdtest: a client of %v: %v", c.Endpoints(), err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	c.cli = cli
	c.waitServing(c.members...)
	return c
}

// startAll starts every member's process. When one fails to start (a port
// found free was taken meanwhile), the members started before it, which
// wait for it under the ports of this try, are killed, and their data
// directories and its own emptied, so that the next try starts a new
// cluster afresh.
func (c *Cluster) startAll(bin string) error {
	c.t.Helper()
	for i, m := range c.members {
		p, err := proctest.TryStartOn(c.t, m.spec(bin), m.clientPort)
		if err == nil {
			m.Proc = p
			continue
		}
		for _, s := range c.members[:i+1] {
			if s.Proc != nil {
				s.Kill()
				s.Proc = nil
			}
			if rerr := os.RemoveAll(s.dataDir()); rerr != nil {
				c.t.Fatalf("etcdtest: emptying the data dir of member %s: %v", s.name, rerr)
			}
		}
		return err
	}
	return nil
}

func (m *Member) spec(bin string) proctest.Spec {
	return proctest.Spec{
		Name:         "etcd member " + m.name,
		Argv:         func(int) ([]string, error) { return m.argv(bin), nil },
		Ready:        func(int) error { return m.answersPeers() },
		Log:          m.logFile(),
		StartTimeout: startTimeout,
	}
}

// argv is the command line of every start. A member whose data directory
// holds a member already (a restart) takes its name, cluster and peers
// from there and ignores the --initial-cluster flags, so one command line
// serves the first start and every restart.
func (m *Member) argv(bin string) []string {
	m.c.mu.Lock()
	token, state := m.c.token, "new"
	if m.existing {
		state = "existing"
	}
	m.c.mu.Unlock()
	var initial []string
	for _, p := range m.c.members {
		initial = append(initial, p.name+"="+p.PeerURL())
	}
	args := []string{bin, "--name", m.name, "--data-dir", m.dataDir(),
		"--listen-client-urls", m.ClientURL(), "--advertise-client-urls", m.ClientURL(),
		"--listen-peer-urls", m.PeerURL(), "--initial-advertise-peer-urls", m.PeerURL(),
		"--initial-cluster", strings.Join(initial, ","),
		"--initial-cluster-state", state, "--initial-cluster-token", token,
		"--heartbeat-interval", strconv.FormatInt(heartbeat.Milliseconds(), 10),
		"--election-timeout", strconv.FormatInt(election.Milliseconds(), 10),
		"--pre-vote",
		"--logger", "zap", "--log-outputs", m.logFile()}
	if f := m.c.tls; f != nil {
		args = append(args, "--cert-file", f.ServerCert, "--key-file", f.ServerKey,
			"--trusted-ca-file", f.CA, "--client-cert-auth")
	}
	return append(slices.Clone(m.opt.Wrap), args...)
}

// answersPeers is nil once the member's peer port answers /version. etcd
// serves its peers at once, but its clients only once the member has
// joined a quorum, so the first members of a new cluster could never be
// ready one after another on the client port.
func (m *Member) answersPeers() error {
	code, b, err := nettest.Get(m.http, m.PeerURL()+"/version")
	if err != nil {
		return err
	}
	if code != http.StatusOK || !strings.Contains(string(b), `"etcdserver"`) {
		return fmt.Errorf("GET /version on the peer port: %d %q", code, b)
	}
	return nil
}

// newToken is a cluster token no other cluster has: a member of another
// test's cluster that reached this one's ports would be refused.
func newToken() string { return "etcdtest-" + rand.Text() }

// Members are the cluster's members, in order.
func (c *Cluster) Members() []*Member { return slices.Clone(c.members) }

// Member is the i-th member.
func (c *Cluster) Member(i int) *Member { return c.members[i] }

// Others are the members but the i-th, in order: the side of a cut that
// keeps a quorum when the i-th is cut off or killed.
func (c *Cluster) Others(i int) []*Member {
	return slices.Delete(slices.Clone(c.members), i, i+1)
}

// Endpoints are the members' client host:port, in order.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.Endpoint())
	}
	return eps
}

// Config is a client configuration for every member: its endpoints, a
// dialer that reaches each member through its MemberOptions.Dial (and any
// other address with net.Dialer), and no log (its retries' warnings would
// flood the output whenever a member is down, which is what these tests
// make). Change Endpoints to talk to some members only.
func (c *Cluster) Config() clientv3.Config {
	cfg := clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(c.dial)},
		Logger:      zap.NewNop(),
	}
	if c.tls != nil {
		cfg.TLS = c.ClientTLS()
	}
	return cfg
}

// ClientTLS is the TLS configuration of a client of Options.TLS's members:
// their CA and the client certificate; nil without TLS.
func (c *Cluster) ClientTLS() *tls.Config {
	if c.tls == nil {
		return nil
	}
	pem, err := os.ReadFile(c.tls.CA)
	if err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	pair, err := tls.LoadX509KeyPair(c.tls.ClientCert, c.tls.ClientKey)
	if err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

// Client is a client of every member (Config), closed when the test ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return c.ClientOf(t, c.members...)
}

// ClientOf is a client of the members ms only, closed when the test ends:
// one that keeps to one side of a cut, or to one member.
func (c *Cluster) ClientOf(t testing.TB, ms ...*Member) *clientv3.Client {
	t.Helper()
	cfg := c.Config()
	cfg.Endpoints = nil
	for _, m := range ms {
		cfg.Endpoints = append(cfg.Endpoints, m.Endpoint())
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcdtest: a client of %v: %v", cfg.Endpoints, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// dial reaches addr through the Dial of the member there.
func (c *Cluster) dial(ctx context.Context, addr string) (net.Conn, error) {
	for _, m := range c.members {
		if m.Endpoint() == addr {
			return m.dial(ctx, "tcp", addr)
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// Leader is the index of the member that says it leads and that a quorum
// of the members (itself included) names as leader: a leader cut off from
// the others, which goes on believing it leads until its election timeout
// passes, is not the leader while the others follow a new one. Every
// running member is asked at once, each for up to a second.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	type answer struct {
		id, leader uint64
		err        error
	}
	answers := make([]answer, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		if !m.Running() {
			answers[i].err = errors.New("not running")
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, requestTimeout)
			defer cancel()
			st, err := m.Status(ctx)
			if err != nil {
				answers[i].err = err
				return
			}
			answers[i] = answer{id: st.Header.MemberId, leader: st.Leader}
		})
	}
	wg.Wait()
	named := map[uint64]int{}
	for _, a := range answers {
		if a.err == nil && a.leader != 0 {
			named[a.leader]++
		}
	}
	var says []string
	for i, a := range answers {
		if a.err == nil && a.leader == a.id && named[a.id] > len(c.members)/2 {
			return i, nil
		}
		switch {
		case a.err != nil:
			says = append(says, fmt.Sprintf("%s: %v", c.members[i].name, a.err))
		case a.leader == 0:
			says = append(says, c.members[i].name+": no leader")
		default:
			says = append(says, fmt.Sprintf("%s (%x): leader %x", c.members[i].name, a.id, a.leader))
		}
	}
	return -1, fmt.Errorf("no leader that a quorum of %d follows (%s)", len(c.members)/2+1, strings.Join(says, "; "))
}

// WaitLeader waits until a quorum follows a leader (Leader) that is none
// of the members except (the one just killed, paused or cut off, whose
// followers may still name it for an election timeout), and returns its
// index.
func (c *Cluster) WaitLeader(except ...int) int {
	c.t.Helper()
	what := "a leader"
	for _, i := range except {
		what += " other than " + c.members[i].name
	}
	leader := -1
	c.waitFor(what, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
		defer cancel()
		i, err := c.Leader(ctx)
		if err == nil && slices.Contains(except, i) {
			err = fmt.Errorf("member %s leads", c.members[i].name)
		}
		leader = i
		return err
	})
	return leader
}

// waitServing waits until every member of ms serves clients.
func (c *Cluster) waitServing(ms ...*Member) {
	c.t.Helper()
	for _, m := range ms {
		c.waitFor("member "+m.name+" ("+m.Endpoint()+") to serve clients", m.serving)
	}
}

// Wipe makes the cluster lose all its data, as a cluster rebuilt after
// losing every member's disk would: every member is killed, its data
// directory emptied and started again on the same ports as a new cluster
// (a new token: a new cluster ID, revision 1, no keys, no leases). It
// returns once every member serves clients. (One member of a larger
// cluster cannot come back empty alone: etcd refuses to start a member
// the others know as bootstrapped already; it would have to be removed
// from the cluster and added again.)
func (c *Cluster) Wipe() {
	c.t.Helper()
	for _, m := range c.members {
		m.Kill()
	}
	for _, m := range c.members {
		if err := os.RemoveAll(m.dataDir()); err != nil {
			c.t.Fatalf("etcdtest: emptying the data dir of member %s: %v", m.name, err)
		}
	}
	c.mu.Lock()
	c.token = newToken()
	for _, m := range c.members {
		m.existing = false // a new cluster bootstraps afresh
	}
	c.mu.Unlock()
	for _, m := range c.members {
		m.Restart()
	}
	c.waitServing(c.members...)
}

// Replace makes the i-th member lose its data and join again, as an
// operator replaces a member whose disk died: it is killed, removed from
// the cluster (MemberRemove), its data directory emptied, added again on
// the same peer URL (MemberAdd: a new member ID) and started to join the
// running cluster, which sends it a snapshot. It returns once the member
// serves clients. The other members must keep a quorum throughout: with
// three, both others must be up.
func (c *Cluster) Replace(i int) {
	c.t.Helper()
	m := c.members[i]
	m.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var id uint64
	c.waitFor("member "+m.name+" to be removed", func() error {
		if id == 0 {
			list, err := c.cli.MemberList(ctx)
			if err != nil {
				return err
			}
			for _, x := range list.Members {
				if x.Name == m.name || slices.Contains(x.PeerURLs, m.PeerURL()) {
					id = x.ID
				}
			}
			if id == 0 {
				return nil // gone already
			}
		}
		rctx, rcancel := context.WithTimeout(ctx, 2*requestTimeout)
		defer rcancel()
		_, err := c.cli.MemberRemove(rctx, id)
		if errors.Is(err, rpctypes.ErrMemberNotFound) {
			return nil // an earlier try's answer was lost
		}
		return err
	})
	if err := os.RemoveAll(m.dataDir()); err != nil {
		c.t.Fatalf("etcdtest: emptying the data dir of member %s: %v", m.name, err)
	}
	c.waitFor("member "+m.name+" to be added again", func() error {
		actx, acancel := context.WithTimeout(ctx, 2*requestTimeout)
		defer acancel()
		_, err := c.cli.MemberAdd(actx, []string{m.PeerURL()})
		if errors.Is(err, rpctypes.ErrPeerURLExist) {
			return nil // an earlier try's answer was lost
		}
		return err
	})
	c.mu.Lock()
	m.existing = true
	c.mu.Unlock()
	m.Restart()
	c.waitServing(m)
}

// Logs is the last lines of every member's log, for a failure report.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, m := range c.members {
		fmt.Fprintf(&b, "member %s (%s):\n%s\n", m.name, m.Endpoint(), m.LogTail())
	}
	return b.String()
}

// waitFor polls cond until it returns nil, failing the test after
// waitTimeout with cond's last error and the members' logs.
func (c *Cluster) waitFor(what string, cond func() error) {
	c.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("etcdtest: waiting %s for %s: %v\n%s", waitTimeout, what, err, c.Logs())
		}
		time.Sleep(pollEvery)
	}
}

// Name is the member's etcd name: m0, m1, ...
func (m *Member) Name() string { return m.name }

// Endpoint is the member's client host:port, the same across restarts.
func (m *Member) Endpoint() string { return net.JoinHostPort(m.host(), strconv.Itoa(m.clientPort)) }

// ClientURL is the member's client URL: http://Endpoint, or https:// with
// Options.TLS.
func (m *Member) ClientURL() string {
	if m.c.tls != nil {
		return "https://" + m.Endpoint()
	}
	return "http://" + m.Endpoint()
}

// PeerURL is the URL the member's peers reach it on.
func (m *Member) PeerURL() string {
	return "http://" + net.JoinHostPort(m.host(), strconv.Itoa(m.peerPort))
}

func (m *Member) host() string {
	if m.opt.Bind != "" {
		return m.opt.Bind
	}
	return "127.0.0.1"
}

// DataDir is the member's data directory (its log is etcd.log beside it).
func (m *Member) DataDir() string { return m.dataDir() }

func (m *Member) dataDir() string { return filepath.Join(m.dir, "data") }
func (m *Member) logFile() string { return filepath.Join(m.dir, "etcd.log") }

// Pause stops the member with SIGSTOP: it holds its connections but
// answers nothing, neither clients nor peers, as a process stalled by its
// host would; a leader paused for longer than an election timeout is
// deposed. Resume continues it.
func (m *Member) Pause() { m.Signal(syscall.SIGSTOP) }

// Resume continues a paused member (SIGCONT).
func (m *Member) Resume() { m.Signal(syscall.SIGCONT) }

// Status is the member's answer to the client's Status: its member ID
// (Header.MemberId), the leader it follows (Leader, 0 for none), its raft
// term and index.
func (m *Member) Status(ctx context.Context) (*clientv3.StatusResponse, error) {
	return m.c.cli.Status(ctx, m.Endpoint())
}

// WaitServing waits until the member serves clients and follows a leader:
// a restarted member, once it has rejoined a quorum and applied what the
// cluster committed meanwhile.
func (m *Member) WaitServing() {
	m.c.t.Helper()
	m.c.waitServing(m)
}

// serving is nil when the member answers Status naming a leader. etcd
// answers clients only after the member has published itself through
// the raft log, so everything committed before is applied too.
func (m *Member) serving() error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	if st.Leader == 0 {
		return errors.New("no leader")
	}
	return nil
}

func (m *Member) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if m.opt.Dial != nil {
		return m.opt.Dial(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
