package connlimit

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// MaxStreams is every HTTP/2 connection's SETTINGS_MAX_CONCURRENT_STREAMS.
// An ID request is answered in microseconds, so a client needs few at once
// on one connection (Go's client dials another when all are taken); 16
// keeps what one connection can make the server hold (goroutines, answers)
// that of 16 HTTP/1.1 connections, where Go's default of 250 let 8
// connections hold 2,000 requests. Each stream beyond the first takes a
// place under the caps besides (StreamStart).
const MaxStreams = 16

// DefaultIdleTimeout is how long an HTTP connection may wait for its next
// request: HTTPConfig.IdleTimeout's zero.
const DefaultIdleTimeout = 2 * time.Minute

// h2Receive bounds the request body an HTTP/2 connection may send ahead of
// the handlers (its flow-control window, per connection and per stream):
// the smallest the protocol allows. Requests here are small.
const h2Receive = 64 << 10

// HTTPConfig is an HTTP server under a Limiter's policy.
type HTTPConfig struct {
	// Handler serves the requests.
	Handler http.Handler
	// TLS, for ServeTLS (HTTP/2 is offered through it); nil for plain
	// HTTP/1.1.
	TLS *tls.Config
	// RequestTimeout bounds each request's headers (the first request's
	// from accept, after a TLS handshake bounded alike) and body. An
	// answer must be written within twice it of its request; an HTTP/2
	// one within 1.5 times. Past either deadline the connection closes,
	// whatever the protocol (HTTP/2's own per-stream deadlines would end
	// the stream only, and let the connection stall the next). Zero does
	// not validate: HTTPServer panics.
	RequestTimeout time.Duration
	// IdleTimeout closes a connection that waits this long for its next
	// request; zero is DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers (HTTP/1.1:
	// net/http reads 4 KiB past it before answering 431; HTTP/2: the
	// header list's size). Zero does not validate: HTTPServer panics.
	MaxHeaderBytes int
	// ErrorLog receives net/http's errors; nil is the log package's.
	ErrorLog *log.Logger
	// HeaderTooLarge is the JSON body of the 431 for headers past what
	// net/http reads (MaxHeaderBytes and its 4 KiB of slack), which
	// net/http writes itself, in plain text, before any handler runs: on
	// a plain HTTP/1.1 connection it goes instead. Over TLS net/http
	// writes its own (no hook reaches it there). Nil keeps net/http's.
	HeaderTooLarge []byte
}

// HTTPServer returns an http.Server of cfg whose connections follow l's
// policy: serve it on l.Listen's listener (Serve, or ServeTLS with
// cfg.TLS). ConnState tells the limiter which connections are mid-request;
// HTTP/2 streams are counted (StreamStart) and refused with 503 past the
// caps (503, Retry-After: 1); every answer is rendered whole in memory and then written, its
// bytes held (Hold) until the write returns, so that a peer that does not
// read is seen, bounded and, at a cap, shed.
func (l *Limiter) HTTPServer(cfg HTTPConfig) *http.Server {
	if cfg.RequestTimeout <= 0 || cfg.MaxHeaderBytes <= 0 {
		panic(fmt.Sprintf("connlimit: HTTPServer: RequestTimeout %v, MaxHeaderBytes %d; want both above 0", cfg.RequestTimeout, cfg.MaxHeaderBytes))
	}
	idle := cfg.IdleTimeout
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	rt := cfg.RequestTimeout
	if cfg.HeaderTooLarge != nil {
		a := []byte("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\n" +
			"X-Content-Type-Options: nosniff\r\nContent-Length: " + strconv.Itoa(len(cfg.HeaderTooLarge)) +
			"\r\nConnection: close\r\n\r\n")
		a = append(a, cfg.HeaderTooLarge...)
		l.tooLarge.Store(&a)
	}
	return &http.Server{
		Handler:           l.handler(cfg.Handler, rt, rt+rt/2),
		TLSConfig:         cfg.TLS,
		ReadHeaderTimeout: rt,
		ReadTimeout:       rt,
		WriteTimeout:      2 * rt,
		IdleTimeout:       idle,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          MaxStreams,
			MaxReceiveBufferPerConnection: h2Receive,
			MaxReceiveBufferPerStream:     h2Receive,
			// A peer whose socket takes no byte for this long is cut off,
			// as an HTTP/1.1 write deadline would.
			WriteByteTimeout: 2 * rt,
		},
		ConnState:   l.connState,
		ConnContext: connContext,
		ErrorLog:    cfg.ErrorLog,
	}
}

// connKey is the request context's key of the connection's *Conn.
type connKey struct{}

func connContext(ctx context.Context, nc net.Conn) context.Context {
	if c := Of(nc); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// connState is the http.Server's ConnState hook. An HTTP/1.1 connection
// whose first request has arrived is proven; between requests it is idle.
// An HTTP/2 connection is proven by its first stream (StreamStart), not by
// the preface it sends on connecting; it is active while a stream is open.
func (l *Limiter) connState(nc net.Conn, st http.ConnState) {
	h2 := false
	tc, isTLS := nc.(*tls.Conn)
	if isTLS {
		nc = tc.NetConn()
	}
	w, ok := nc.(*NetConn)
	if !ok {
		return
	}
	c := w.c
	switch st {
	case http.StateActive:
		if isTLS {
			h2 = tc.ConnectionState().NegotiatedProtocol == "h2"
		}
		if !h2 && !c.isProven.Load() {
			c.Proven()
		} else {
			c.SetBusy()
		}
	case http.StateIdle:
		c.SetIdle(l.cfg.Now().UnixNano())
	case http.StateHijacked, http.StateClosed:
		c.Release()
	}
}

// handler counts h's HTTP/2 streams, bounds the time their answers take,
// marks the time a request's body keeps it waiting on the peer (waitBody),
// and renders every answer whole before writing it (answer). rt is the
// request timeout: a connection whose peer has kept it waiting that long,
// net of the drain (wait.go), is closed.
func (l *Limiter) handler(h http.Handler, rt, h2Deadline time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*Conn)
		if c == nil { // not a connection of Listen (a test's handler)
			h.ServeHTTP(w, r)
			return
		}
		h2 := r.ProtoMajor == 2
		if h2 {
			if refused := c.StreamStart(); refused != "" {
				busy(w)
				return
			}
			defer c.StreamEnd()
			t := time.AfterFunc(h2Deadline, c.close)
			defer t.Stop()
		}
		a := answers.Get().(*answer)
		a.w, a.c = w, c
		defer a.release()
		var wb *waitBody // nil on the hot path: a GET has no body
		// A request without a body has ContentLength 0 and NoBody; the
		// length is read first, as comparing interfaces costs a call.
		if body := r.Body; r.ContentLength != 0 && body != nil && body != http.NoBody {
			wb = &waitBody{ReadCloser: body, c: c, limit: rt, h2: h2}
			r.Body = wb
		}
		h.ServeHTTP(a, r)
		if wb != nil {
			// net/http's own checks of what the handler left unread see
			// its body again.
			r.Body = wb.ReadCloser
			if !h2 && !wb.eof {
				// net/http reads (or waits for) what the handler left of
				// the body before the connection takes its next request:
				// a wait on the peer, until the connection turns idle
				// (SetIdle) or closes.
				if c.Await(l.cfg.Now().UnixNano(), rt) <= 0 {
					c.close()
				}
			}
		}
		a.finish(h2)
	})
}

// waitBody is a request's body whose reads wait on the peer (Await):
// a body promised and not sent makes its connection stuck, so that at a
// cap it is shed, and past the request timeout of owed time it is
// closed. An HTTP/2 body that does not arrive within the read deadline
// closes its connection, as an HTTP/1.1 one's does (HTTP/2's own deadline
// would end the stream only, and let the connection trickle the next).
type waitBody struct {
	io.ReadCloser
	c     *Conn
	limit time.Duration
	h2    bool
	eof   bool // a read returned io.EOF
}

// errOwed is a body read refused because its peer has kept the
// connection waiting past the request timeout.
var errOwed = errors.New("connlimit: the peer kept the connection waiting mid-request past the request timeout")

func (b *waitBody) Read(p []byte) (int, error) {
	now := b.c.l.cfg.Now
	if b.c.Await(now().UnixNano(), b.limit) <= 0 {
		b.c.Arrived(now().UnixNano())
		b.c.close()
		return 0, errOwed
	}
	n, err := b.ReadCloser.Read(p)
	b.c.Arrived(now().UnixNano())
	if err == io.EOF {
		b.eof = true
	}
	if b.h2 && err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.c.close()
	}
	return n, err
}

// busy answers a stream refused at a cap: 503 with Retry-After, and no
// body, so that the answer needs no flow-control window and holds nothing
// for a peer that does not read.
func busy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusServiceUnavailable)
}

// answer buffers a handler's answer: its status and body, written by
// finish with its Content-Length once the handler has returned. The
// answer is in memory then anyway (an ID list encoded, the metrics
// rendered); written whole, its bytes are held (Hold) for as long as the
// peer takes to read them, and an HTTP/2 answer is flushed within the
// stream's deadline rather than after the handler, out of sight.
type answer struct {
	w      http.ResponseWriter
	c      *Conn
	status int
	buf    []byte
}

var answers = sync.Pool{New: func() any { return new(answer) }}

// keepBuf is the largest buffer an answer keeps for the next.
const keepBuf = 64 << 10

func (a *answer) release() {
	a.w, a.c, a.status = nil, nil, 0
	if cap(a.buf) > keepBuf {
		a.buf = nil
	}
	a.buf = a.buf[:0]
	answers.Put(a)
}

func (a *answer) Header() http.Header { return a.w.Header() }

// WriteHeader records the status; an informational one (100 Continue,
// 103 Early Hints) goes at once.
func (a *answer) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		a.w.WriteHeader(code)
		return
	}
	a.status = cmp.Or(a.status, code)
}

func (a *answer) Write(p []byte) (int, error) {
	a.status = cmp.Or(a.status, http.StatusOK)
	a.buf = append(a.buf, p...)
	return len(p), nil
}

// Flush does nothing: the answer goes whole when the handler returns.
func (a *answer) Flush() {}

// Unwrap gives http.ResponseController the writer below.
func (a *answer) Unwrap() http.ResponseWriter { return a.w }

// smallAnswer is what net/http buffers of an HTTP/1.1 answer before it
// writes any (bufferBeforeChunkingSize): an answer this small is never
// written during the handler, so it cannot wait for the peer there, and
// net/http gives it its Content-Length itself.
const smallAnswer = 2048

// finish writes the answer.
func (a *answer) finish(h2 bool) {
	if a.status == 0 {
		return // nothing written: net/http's empty 200
	}
	n := len(a.buf)
	if !h2 && n <= smallAnswer {
		a.w.WriteHeader(a.status)
		if n > 0 {
			a.w.Write(a.buf)
		}
		return
	}
	h := a.w.Header()
	if h.Get("Content-Length") == "" && h.Get("Transfer-Encoding") == "" && bodyAllowed(a.status) {
		h.Set("Content-Length", strconv.Itoa(n))
	}
	a.w.WriteHeader(a.status)
	a.c.Hold(n)
	if n > 0 {
		a.w.Write(a.buf)
	}
	if f, ok := a.w.(http.Flusher); ok && h2 {
		f.Flush()
	}
	a.c.Unhold(n)
}

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
