package rest

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The page and the OpenAPI document are embedded, so the binary serves
// them with no build step and no file next to it.
//
//go:embed static/index.html openapi.json
var assets embed.FS

var (
	indexHTML   = mustAsset("static/index.html")
	openAPIJSON = mustAsset("openapi.json")
)

func mustAsset(name string) []byte {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // the go:embed line above guarantees the file
	}
	return b
}

// authMarker is the attribute the page reads to show its token field.
var authMarker = []byte(`data-auth="off"`)

// renderPage returns the page, marked as needing a token when one is set.
func renderPage(token bool) []byte {
	if !token {
		return indexHTML
	}
	return bytes.Replace(indexHTML, authMarker, []byte(`data-auth="bearer"`), 1)
}

// pageCSP allows exactly the page's inline script and style (by hash) and
// calls to its own origin: nothing else loads, from anywhere.
// The icon is an empty data: URL, so that the browser asks for no
// /favicon.ico (a 404 the page would count among the 4xx answers).
var pageCSP = "default-src 'none'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"script-src " + inlineHash("script") + "; style-src " + inlineHash("style")

// inlineHash is the CSP hash source of the page's one inline <tag> element.
func inlineHash(tag string) string {
	open, end := []byte("<"+tag+">"), []byte("</"+tag+">")
	i := bytes.Index(indexHTML, open)
	j := bytes.Index(indexHTML, end)
	if i < 0 || j < i {
		return "'none'"
	}
	sum := sha256.Sum256(indexHTML[i+len(open) : j])
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// GET /: the ID explorer.
func (s *Server) index(c echo.Context) error {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set(echo.HeaderCacheControl, "no-cache")
	return c.Blob(http.StatusOK, echo.MIMETextHTMLCharsetUTF8, s.page)
}

// GET /openapi.json
func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPIJSON)
}

// GET /metrics
func (s *Server) metrics(c echo.Context) error {
	s.metricsHandler.ServeHTTP(c.Response(), c.Request())
	return nil
}

// maxRenders is how many /metrics answers are rendered at once. Each
// gathers every metric of the process (a few hundred KiB while it
// renders): unbounded, a flood of scrapes held that times its number. A
// scraper asks every few seconds; the others wait their turn, up to the
// request timeout, then get 503.
const maxRenders = 4

// metricsHandler renders g in Prometheus's formats, maxRenders at a time.
func metricsHandler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError),
	})
	gate := make(chan struct{}, maxRenders)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(DefaultRequestTimeout)
		defer t.Stop()
		select {
		case gate <- struct{}{}:
		case <-t.C:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "unavailable: too many scrapes at once", http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			return
		}
		defer func() { <-gate }()
		h.ServeHTTP(w, r)
	})
}

// MetricsConfig configures MetricsHandler.
type MetricsConfig struct {
	// Token, when set, is required as "Authorization: Bearer <token>", as
	// Config.MetricsAuth makes /metrics require Config.Token; "" leaves
	// the listener open.
	Token string
	// AllowedHosts are the Host names answered besides the defaults, as
	// Config.AllowedHosts (the same list, so that a DNS-rebinding page
	// reads no more from the metrics listener than from REST); entries
	// are checked as Config.Validate checks its own.
	AllowedHosts []string
	// Addr is the listener's address: on loopback the defaults are
	// loopback's (Config.AllowedHosts); nil is the wide defaults.
	Addr net.Addr
	// Logger receives the renderer's errors and the limited peers' lines;
	// nil discards.
	Logger *slog.Logger
}

// MetricsHandler serves g as GET /metrics does, for a listener of its own
// (vesta serve's metrics.listen): the Host check of every REST route but
// the probes' (421 misdirected_request), and with cfg.Token the bearer
// check, compared and limited as REST's, 401 or 429 otherwise: a metrics
// port must not give away what the REST one guards. Its errors are REST's
// JSON error body. It returns ErrConfig for an AllowedHosts entry
// Config.Validate would refuse.
func MetricsHandler(g prometheus.Gatherer, cfg MetricsConfig) (http.Handler, error) {
	for i, h := range cfg.AllowedHosts {
		if err := checkAllowedHost(h); err != nil {
			return nil, fmt.Errorf("%w: AllowedHosts[%d]: %q: %v", ErrConfig, i, clip(h), err)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := metricsHandler(g, log)
	hosts := newHostPolicy(cfg.AllowedHosts, cfg.Addr)
	var sum [sha256.Size]byte
	lim := newAuthLimits()
	if cfg.Token != "" {
		sum = sha256.Sum256([]byte(cfg.Token))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.allows(canonicalHost(r.Host)) {
			writeError(w, misdirected(r.Host, hosts), "")
			return
		}
		if cfg.Token != "" {
			if challenge, err := lim.check(log, peerOf(r.RemoteAddr), r.Header.Get(echo.HeaderAuthorization), &sum); err != nil {
				writeError(w, err, challenge)
				return
			}
		}
		h.ServeHTTP(w, r)
	}), nil
}

// writeError writes ae as the JSON error body, outside echo; challenge,
// when set, is a 401's WWW-Authenticate.
func writeError(w http.ResponseWriter, ae *apiError, challenge string) {
	body, _ := json.Marshal(errorBody{Error: errorDetail{Code: ae.code, Message: ae.message}})
	hdr := w.Header()
	if challenge != "" {
		hdr.Set(echo.HeaderWWWAuthenticate, challenge)
	}
	if ae.retryAfter > 0 {
		hdr.Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	hdr.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(ae.status)
	w.Write(append(body, '\n'))
}

type statusBody struct {
	Status  string `json:"status"`
	Segment string `json:"segment,omitempty"` // /readyz: the segment store, see segmentStatus
}

// GET /healthz: the process answers.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, statusBody{Status: "ok"})
}

// GET /readyz: 200 only while the generator can issue (not fenced, not
// closed, time guard durable, clock inside the layout) and Config.Ready
// passes; 503 with the reason otherwise, and from the start of Shutdown.
// With a segment store, the "segment" field tells whether sequence numbers
// can be issued ("ok" or "unavailable: why"); it does not decide readiness, as every
// server shares the store and IDs are still issued while it is down.
func (s *Server) readyz(c echo.Context) error {
	if ae := s.readiness(); ae != nil { // status.go
		return ae
	}
	return c.JSON(http.StatusOK, statusBody{Status: "ready", Segment: s.segmentStatus()})
}

// notReady is a 503 with the reason; core's errors keep their codes.
func notReady(err error) *apiError {
	ae := fromCore(err)
	if ae.status == http.StatusServiceUnavailable {
		return ae
	}
	return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, message: "not ready: " + err.Error()}
}
