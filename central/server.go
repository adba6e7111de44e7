package central

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/ceilingmetric"
	"github.com/vesta-go/vesta/internal/connlimit"
	"github.com/vesta-go/vesta/internal/peerrate"
)

// Server publishes a core.Generator over MessagePack-RPC.
//
// The wire format (see package wire for the details): over TCP, optionally
// TLS, each side writes MessagePack arrays back to back, with no other
// framing. A client sends requests [0, msgid, method, params] and the server
// answers each with [1, msgid, error, result], where exactly one of error
// and result is nil. Requests of one connection are served concurrently and
// answered in any order, so a client may pipeline as many as it likes and
// match answers by msgid. params is [] or [{name: value, ...}]. error is a
// string that starts with a code: "invalid_argument: count 0; want
// 1-10000". Notifications [2, method, params] are read and dropped.
//
// Procedures: Vesta.GenID -> uint64; Vesta.GenIDs {count} -> [uint64...];
// Vesta.TakeIDs {count} -> {ids, retry_after_ms}; Vesta.ExpID {id} -> map;
// Vesta.MakeID {time, seq, machine?, method?, type?, version?} -> uint64;
// Vesta.TransTime {time, type?} -> map; Vesta.Info -> map; with Config.Sequences,
// Vesta.NextSeq {tag} -> int64 and Vesta.NextSeqs {tag, count} -> [int64...];
// with Config.Masks, Vesta.Mask {ids, tenant?, kind?} -> [str...] and
// Vesta.Unmask {masks, tenant?, kind?} -> [uint64...].
//
// At the sequence's ceiling (about a million IDs a second, about four
// million in the leaf layout, plus the generator's MaxBorrow), TakeIDs answers at once with the IDs it can give
// and when to ask again, while GenID and GenIDs wait. Waiting is fair
// between connections (a core.Share paces batches and serves waiting calls
// round-robin per connection, so single IDs never wait behind a greedy
// connection's batches) and bounded: MaxWaitingIDs and MaxWaitingCalls
// server-wide, MaxInFlight calls and 4 x MaxBatch IDs per connection;
// beyond, calls are answered unavailable at once. Waiting calls hold no
// goroutine: their results grow as IDs are issued, and are written by at
// most one goroutine per connection.
//
// A frame that is not MessagePack, larger than MaxRequestBytes, nested too
// deep, or a request whose msgid cannot be read closes the connection;
// any other bad request is answered with an invalid_argument error.
type Server struct {
	gen  *core.Generator
	cfg  Config
	log  *slog.Logger
	met  *metrics
	ceil *ceilingmetric.Metrics
	// share deals the generator's IDs between connections at the ceiling.
	share *core.Share
	keys  atomic.Uint64   // numbers connections, the keys of share
	ctx   context.Context // ends on Close; calls waiting for the generator end with it
	stop  context.CancelFunc

	mu        sync.Mutex
	shutdown  bool // Shutdown or Close began: accept nothing more
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	addr      net.Addr
	accepting sync.WaitGroup // Serve loops
	serving   sync.WaitGroup // connections
	closeOnce sync.Once

	// limit is the listener policy (package connlimit): the caps and
	// shedding, the descriptor budget, the first-frame deadline and the
	// bound on unread answers.
	limit *connlimit.Limiter

	seqTags sync.Map // tags that issued here: their calls are tried inline (seq.go)

	handshakeLog *peerrate.Limiter // failed TLS handshakes: a line per peer a minute (conn.go)
}

// NewServer returns a server of gen, which it uses but does not own: close
// gen after the server is shut down. It copies cfg, filling in defaults.
func NewServer(gen *core.Generator, cfg Config) (*Server, error) {
	if gen == nil {
		return nil, fmt.Errorf("%w: nil generator", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	ceil, err := ceilingmetric.New(cfg.Registerer, ceilingmetric.Central)
	if err != nil {
		return nil, fmt.Errorf("central: metrics: %w", err)
	}
	share, err := core.NewShare(gen, core.ShareConfig{MaxWaitingIDs: cfg.MaxWaitingIDs, MaxWaitingCalls: cfg.MaxWaitingCalls})
	if err != nil {
		return nil, err
	}
	waitingIDs := func() float64 { ids, _ := share.Waiting(); return float64(ids) }
	if err := ceilingmetric.RegisterWaitingIDs(cfg.Registerer, waitingIDs); err != nil {
		return nil, fmt.Errorf("central: metrics: %w", err)
	}
	connMetrics, err := connlimit.NewMetrics(cfg.Registerer, connlimit.Names{
		Rejected: "vesta_rpc_connections_rejected_total", Shed: "vesta_rpc_connections_shed_total",
		Unsent: "vesta_rpc_unsent_bytes", Protocol: "MessagePack-RPC",
	})
	if err != nil {
		return nil, fmt.Errorf("central: metrics: %w", err)
	}
	limit := connlimit.NewLimiter(connlimit.Config{
		MaxConns: cfg.MaxConns, MaxConnsPerPeer: cfg.MaxConnsPerPeer, PeerPrefixV6: cfg.PeerPrefixV6,
		MaxUnsentBytes: int64(cfg.MaxUnsentBytes), FirstRequest: cfg.FirstFrameTimeout, Budget: cfg.Budget,
		Metrics: connMetrics, Logger: cfg.Logger, Name: "central",
	})
	ctx, stop := context.WithCancel(context.Background())
	return &Server{
		gen:       gen,
		cfg:       cfg,
		log:       cfg.Logger,
		met:       met,
		ceil:      ceil,
		share:     share,
		ctx:       ctx,
		stop:      stop,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		limit:     limit,

		handshakeLog: peerrate.NewLog(),
	}, nil
}

// Serve accepts connections on ln and serves them until Shutdown or Close,
// when it returns ErrServerClosed; it closes ln. It may be called for more
// than one listener. Connections are accepted under the listener policy
// (package connlimit): errors that pass with time, such as running out of
// file descriptors, are retried with a backoff, never returned.
func (s *Server) Serve(ln net.Listener) error {
	ln = s.limit.Listen(ln)
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	if s.addr == nil {
		s.addr = ln.Addr()
	}
	s.accepting.Add(1)
	s.mu.Unlock()
	defer s.accepting.Done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	s.log.Debug("central: serving", "addr", ln.Addr().String(), "tls", s.cfg.TLS != nil)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing() {
				return ErrServerClosed
			}
			return fmt.Errorf("central: accept: %w", err)
		}
		s.admit(nc)
	}
}

// admit starts serving nc, which the listener policy admitted.
func (s *Server) admit(nc net.Conn) {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		nc.Close()
		return
	}
	lc := connlimit.Of(nc)
	if s.cfg.TLS != nil {
		nc = tls.Server(nc, s.cfg.TLS)
	}
	c := newConn(s, nc)
	c.limit = lc
	s.conns[c] = struct{}{}
	s.serving.Add(1)
	s.mu.Unlock()
	if s.met != nil {
		s.met.conns.Inc()
	}
	go c.serve()
}

// done is called by a connection when it has closed.
func (s *Server) done(c *conn) {
	c.limit.Release()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	if s.met != nil {
		s.met.conns.Dec()
	}
	s.serving.Done()
}

func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown
}

// Addr returns the address of the first listener served, or nil until
// Serve has begun.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// beginShutdown stops accepting and returns the open connections.
func (s *Server) beginShutdown() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdown = true
	for ln := range s.listeners {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// Shutdown stops accepting connections, and reading requests once what
// peers sent before it has arrived (a grace of 100ms, so calls already in
// flight or in the socket's buffer are not dropped); it answers every
// request read (waiting for calls that wait for the generator),
// flushes the answers and closes the connections. It returns when all are
// closed, or when ctx ends: then it closes everything at once, like Close,
// and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, c := range s.beginShutdown() {
		c.drain()
	}
	finished := make(chan struct{})
	go func() {
		s.accepting.Wait()
		s.serving.Wait()
		close(finished)
	}()
	select {
	case <-finished:
		s.Close()
		return nil
	case <-ctx.Done():
		s.Close()
		<-finished
		return ctx.Err()
	}
}

// Close closes the listeners and every connection at once; calls waiting
// for the generator end unanswered. It waits until every goroutine of the
// server has returned. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		for _, c := range s.beginShutdown() {
			c.nc.Close()
		}
		s.stop() // after closing: the calls it ends are not answered
		s.accepting.Wait()
		s.serving.Wait()
		s.share.Close()
	})
	// A second caller waits too: closeOnce blocks until the first is done.
	return nil
}
