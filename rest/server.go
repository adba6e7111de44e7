package rest

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/ceilingmetric"
	"github.com/vesta-go/vesta/internal/coalesce"
	"github.com/vesta-go/vesta/internal/connlimit"
)

// Server is the REST server of one generator; IDs issued here carry method
// REST (2). Its wire format, in short (the package comment has the routes,
// /openapi.json the schemas):
//
//   - Vesta-compatible routes (/genid, /expid, /transtime, /makeid) take
//     query parameters and answer as Vesta's Java server did: a bare
//     unsigned decimal, Vesta's Id JSON, or Java's Date text; errors are
//     "code: message" in text/plain.
//   - The JSON API (/v1/...) writes every ID as a decimal string, reads
//     fields as JSON numbers (exactly, never through a float) or strings,
//     refuses unknown fields, and answers errors as
//     {"error":{"code":…,"message":…}} with the parameter named.
//   - Integers in parameters are unsigned decimal digits only; a parameter
//     given twice is an error.
//   - With a token, ID routes need "Authorization: Bearer <token>".
//
// The generator belongs to the caller, who may share it with the central
// server and must close it after the Server.
type Server struct {
	gen   *core.Generator
	share *core.Share // deals IDs fairly at the ceiling
	ceil  *ceilingmetric.Metrics
	codec core.Codec
	cfg   Config
	log   *slog.Logger
	echo  *echo.Echo
	http  *http.Server
	m     *metrics
	vesta map[string]bool // route paths that answer in plain text
	// issuing are the route paths that issue IDs or numbers (origin.go).
	issuing map[string]bool
	hosts   atomic.Pointer[hostPolicy] // the Host check's, set again by Serve

	tokenSum       [sha256.Size]byte
	page           []byte
	leafZone       *time.Location // of /decodeSnowflakeId's dates: the local zone, as Leaf's JVM default
	metricsHandler http.Handler

	gatherer prometheus.Gatherer // what /metrics serves, read by the history
	started  time.Time           // NewServer's return, for /v1/status
	hist     *history            // the last minutes (history.go)
	histStop chan struct{}       // closed to stop the history's sampler
	histDone chan struct{}       // closed when it has stopped
	histOnce sync.Once

	fleet coalesce.Cache[struct{}, FleetView] // GET /v1/fleet's one store read at a time (fleet.go)
	// conflicts counts explains that found an ID inside two holds
	// (vesta_hold_conflicts_total; holder.go).
	conflicts prometheus.Counter
	draining  atomic.Bool        // set by Shutdown: /readyz fails first
	limits    *connlimit.Limiter // the listener policy (limits.go)
	authLim   *authLimits        // failed authentications per peer (peers.go)

	mu      sync.Mutex
	serving bool
	closed  bool
	addr    net.Addr
	done    chan struct{} // closed when Serve returns

	closeOnce sync.Once
}

// NewServer validates cfg and builds the server of gen. It serves nothing
// until Serve; Handler gives the handler for tests or another server.
func NewServer(gen *core.Generator, cfg Config) (*Server, error) {
	if gen == nil {
		return nil, fmt.Errorf("%w: generator is nil", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{gen: gen, codec: gen.Codec(), cfg: cfg, log: cfg.Logger, vesta: map[string]bool{}, issuing: map[string]bool{}, authLim: newAuthLimits(), leafZone: time.Local}
	s.fleet.Fresh = fleetFresh
	s.hosts.Store(newHostPolicy(cfg.AllowedHosts, nil))
	if cfg.Token != "" {
		s.tokenSum = sha256.Sum256([]byte(cfg.Token))
	}
	s.page = renderPage(cfg.Token != "")

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	s.echo = e
	s.routes()

	reg, gatherer := cfg.Registerer, cfg.Gatherer
	if reg == nil {
		own := prometheus.NewRegistry()
		reg = own
		if gatherer == nil {
			gatherer = own
		} else {
			gatherer = prometheus.Gatherers{gatherer, own}
		}
	} else if gatherer == nil {
		gatherer = reg.(prometheus.Gatherer) // Validate checked
	}
	var paths []string
	for _, r := range e.Routes() {
		paths = append(paths, r.Path)
	}
	m, err := newMetrics(reg, paths)
	if err != nil {
		return nil, err
	}
	s.m = m
	if s.conflicts, err = newConflicts(reg); err != nil {
		return nil, err
	}
	if s.limits, err = newLimiter(reg, cfg); err != nil {
		return nil, err
	}
	if s.ceil, err = ceilingmetric.New(reg, ceilingmetric.REST); err != nil {
		return nil, fmt.Errorf("rest: metrics: %w", err)
	}
	if s.share, err = core.NewShare(gen, core.ShareConfig{MaxWaitingIDs: cfg.MaxWaitingIDs, MaxWaitingCalls: cfg.MaxWaitingCalls}); err != nil {
		return nil, err
	}
	s.metricsHandler = metricsHandler(gatherer, s.log)
	s.gatherer = gatherer
	e.Pre(s.pre) // http.go
	e.Use(s.middleware)

	s.http = s.limits.HTTPServer(connlimit.HTTPConfig{
		Handler:        e,
		TLS:            cfg.TLS,
		RequestTimeout: cfg.RequestTimeout,
		MaxHeaderBytes: MaxHeaderBytes,
		HeaderTooLarge: HeaderTooLarge(),
		ErrorLog:       ErrorLog(s.log, "rest"), // a peer's failed handshakes once a minute (peers.go)
	})
	s.startHistory() // history.go; stopped by Shutdown and Close
	return s, nil
}

// routes registers every route.
func (s *Server) routes() {
	e := s.echo
	for _, r := range []struct {
		path  string
		h     echo.HandlerFunc
		issue bool
	}{
		{"/genid", s.vestaGenID, true}, {"/expid", s.vestaExpID, false},
		{"/transtime", s.vestaTransTime, false}, {"/makeid", s.vestaMakeID, false},
	} {
		rt := e.GET(r.path, r.h, s.auth)
		s.vesta[r.path] = true
		if r.issue {
			s.markIssuing(rt)
		}
	}
	s.markIssuing(e.GET("/v1/id", s.apiID, s.auth))
	s.markIssuing(e.GET("/v1/ids", s.apiIDs, s.auth))
	e.GET("/v1/ids/:id", s.apiExplain, s.auth)
	e.POST("/v1/make", s.apiMake, s.auth)
	e.GET("/v1/transtime", s.apiTransTime, s.auth)
	e.GET("/v1/info", s.apiInfo, s.auth)
	e.GET("/v1/status", s.apiStatus, s.auth)
	e.GET("/v1/fleet", s.apiFleet, s.auth)
	e.GET("/v1/capacity", s.apiCapacity, s.auth) // capacity.go
	s.seqRoutes()                                // seq.go: /v1/seq/{tag} and Leaf's HTTP API
	s.maskRoutes()                               // mask.go: /v1/mask, /v1/unmask

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.metrics, s.metricsMiddleware()...)
	e.GET("/openapi.json", s.openAPI)
	e.GET("/", s.index)
}

// Handler returns the server's HTTP handler (the echo instance), with every
// middleware but the connection timeouts of Serve.
func (s *Server) Handler() http.Handler { return s.echo }

// Addr returns the address Serve listens on, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Serve answers requests on ln (with TLS when configured) until Shutdown
// or Close, and then returns nil; any other return is the listener's
// error. It returns ErrServing if already serving and ErrClosed after
// Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return ErrClosed
	case s.serving:
		s.mu.Unlock()
		return ErrServing
	}
	s.serving, s.addr, s.done = true, ln.Addr(), make(chan struct{})
	s.hosts.Store(newHostPolicy(s.cfg.AllowedHosts, ln.Addr()))
	done := s.done
	s.mu.Unlock()
	defer close(done)

	s.log.Debug("rest: serving", "addr", ln.Addr().String(), "tls", s.cfg.TLS != nil, "auth", s.cfg.Token != "")
	var err error
	ln = s.limits.Listen(ln)
	if s.cfg.TLS != nil {
		err = s.http.ServeTLS(ln, "", "")
	} else {
		err = s.http.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server gracefully: /readyz fails at once, the
// listener closes, and in-flight requests finish until ctx ends, when the
// remaining connections are closed and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	done := s.stop()
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.http.Close())
	}
	if done != nil {
		<-done
	}
	s.share.Close()
	s.stopHistory()
	return err
}

// Close stops the server at once, closing every connection, and waits for
// Serve to return. It is idempotent.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.draining.Store(true)
		done := s.stop()
		err = s.http.Close()
		if done != nil {
			<-done
		}
		s.share.Close()
		s.stopHistory()
	})
	return err
}

// stop marks the server closed and returns Serve's done channel, if serving.
func (s *Server) stop() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.serving {
		return s.done
	}
	return nil
}

// auth requires the bearer token on the ID routes when one is configured.
// The token is compared through its SHA-256 in constant time, so neither
// its bytes nor its length leak through timing. A peer that failed too
// often is answered 429 without a comparison (peers.go).
func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	if s.cfg.Token == "" {
		return next
	}
	return func(c echo.Context) error {
		if challenge, err := s.authLim.check(s.log, peerOf(c.Request().RemoteAddr), c.Request().Header.Get(echo.HeaderAuthorization), &s.tokenSum); err != nil {
			if challenge != "" { // a 401; a 429 asks for no token
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, challenge)
			}
			return err
		}
		return next(c)
	}
}

// checkBearer checks an Authorization header h against the SHA-256 of
// the token: nil when it carries the token, else the 401 to answer and
// its WWW-Authenticate challenge.
func checkBearer(h string, sum *[sha256.Size]byte) (challenge string, _ *apiError) {
	scheme, tok, found := strings.Cut(h, " ")
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if found && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(got[:], sum[:]) == 1 {
		return "", nil
	}
	challenge = `Bearer realm="vesta"`
	msg := "missing bearer token (Authorization: Bearer <token>)"
	if h != "" {
		challenge += `, error="invalid_token"`
		msg = "invalid bearer token"
	}
	return challenge, &apiError{status: http.StatusUnauthorized, code: codeUnauthenticated, message: msg}
}

// middleware wraps every request (one middleware, as echo allocates a
// closure per middleware and request): it bounds the body, turns a panic
// into a logged 500 that shows the client nothing of it, resolves errors
// into answers, and records the metrics and access log. The request
// timeout bounds the handlers that can wait, through issueCtx, and the
// connection's reads and writes, through the http.Server.
func (s *Server) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		if req.Body != nil && req.Body != http.NoBody {
			req.Body = http.MaxBytesReader(c.Response(), req.Body, s.cfg.BodyLimit)
		}
		allowHead(c)             // http.go
		issuing := s.noStore(c)  // origin.go
		err := s.checkRequest(c) // http.go
		if err == nil {
			err = s.screen(c, issuing) // origin.go
		}
		if err == nil {
			err = s.call(next, c)
		}
		if err != nil {
			s.handleError(err, c)
		}
		d := time.Since(start)
		res := c.Response()
		rm := s.m.route(c.Path())
		rm.observe(res.Status, d.Seconds())
		// One record per request at Debug: an ID service answers tens of
		// thousands a second, too many for an Info log; failures at Warn.
		lvl := slog.LevelDebug
		if res.Status >= http.StatusInternalServerError {
			lvl = slog.LevelWarn
		}
		if ctx := req.Context(); s.log.Enabled(ctx, lvl) {
			s.log.LogAttrs(ctx, lvl, "http request",
				slog.String("method", req.Method), slog.String("path", clip(req.URL.Path)),
				slog.String("route", rm.route), slog.Int("status", res.Status),
				slog.Duration("duration", d), slog.Int64("bytes", res.Size),
				slog.String("remote", req.RemoteAddr))
		}
		return nil
	}
}

// call runs h, recovering a panic into errInternal after logging it with
// its stack.
func (s *Server) call(h echo.HandlerFunc, c echo.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.Error("rest: panic serving a request", "method", c.Request().Method, "route", c.Path(),
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = errInternal
		}
	}()
	return h(c)
}

// handleError writes the answer of err: plain "code: message" on the
// Vesta-compatible routes, the JSON error shape everywhere else.
// Internal errors are logged with their cause; the client sees none of it.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := classify(err, c)
	if ae.retryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	if ae.code == codeInternal { // the others are in the access log
		s.log.Error("rest: request failed", "method", c.Request().Method, "route", c.Path(),
			"status", ae.status, "code", ae.code, "error", err)
	}
	if s.vesta[c.Path()] {
		_ = c.Blob(ae.status, echo.MIMETextPlainCharsetUTF8, []byte(ae.code+": "+ae.message+"\n"))
		return
	}
	_ = c.JSON(ae.status, errorBody{Error: errorDetail{Code: ae.code, Message: ae.message}})
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
