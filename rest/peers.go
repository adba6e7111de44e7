package rest

import (
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/vesta-go/vesta/internal/connlimit"
	"github.com/vesta-go/vesta/internal/peerrate"
)

// Failed authentications are limited per peer address: authBurst at once,
// then one every authEvery. A wrong token from a peer past them is
// answered 429 with Retry-After (an answer at once rather than a delay,
// which would hold a connection per guess), and its log line is one a
// minute. The right token always passes, and spends nothing: behind a
// proxy, a NAT or an ingress every request is one peer's, and one client
// misconfigured there must not lock out the others. So the limit does not
// slow a guesser, whose right guess would pass anyway; the token's length
// does (MinTokenBytes: 2^64 guesses even in hex). Only failing peers have
// an entry, at most authPeers of them (package peerrate).
const (
	authBurst = 10
	authEvery = time.Second
	authPeers = 4096
)

// authLimits are the limiter of failed authentications and its log lines.
type authLimits struct {
	fails *peerrate.Limiter
	log   *peerrate.Limiter // one line per limited peer a minute
}

func newAuthLimits() *authLimits {
	return &authLimits{fails: peerrate.New(authBurst, authEvery, authPeers), log: peerrate.NewLog()}
}

// limited is the answer to a peer that failed too often, or nil.
func (a *authLimits) limited(lg *slog.Logger, peer string) *apiError {
	wait := a.fails.Wait(peer, time.Now())
	if wait <= 0 {
		return nil
	}
	a.log.Warn(lg, peer, "rest: too many failed authentications; answering 429", "peer", peer)
	return &apiError{status: http.StatusTooManyRequests, code: codeTooManyRequests,
		message: "too many failed authentications from this address", retryAfter: retrySeconds(wait)}
}

// failed counts a failed authentication of peer.
func (a *authLimits) failed(peer string) { a.fails.Spend(peer, time.Now()) }

// check is the bearer check of a request from peer with Authorization
// header h (checkBearer), limited: the right token passes; a wrong one
// counts against its peer, which past its burst gets the 429 (a missing
// one is no guess and does not count).
func (a *authLimits) check(lg *slog.Logger, peer, h string, sum *[32]byte) (challenge string, _ *apiError) {
	challenge, err := checkBearer(h, sum)
	if err == nil || h == "" {
		return challenge, err
	}
	if ae := a.limited(lg, peer); ae != nil {
		return "", ae
	}
	a.failed(peer)
	return challenge, err
}

// handshakePrefix starts net/http's line for a failed TLS handshake,
// which it logs for every connection: "http: TLS handshake error from
// ADDR: REASON".
const handshakePrefix = "http: TLS handshake error from "

// ErrorLog is an http.Server's ErrorLog: its lines at Warn on lg, except
// that a peer's failed TLS handshakes (a plaintext client on the TLS port
// fails on every connection) make one line a minute, as the central
// server's do, "NAME: TLS handshake failed": REST's, and the metrics
// listener's of vesta serve.
func ErrorLog(lg *slog.Logger, name string) *log.Logger {
	return log.New(&errorLogWriter{log: lg, name: name, handshakes: peerrate.NewLog()}, "", 0)
}

type errorLogWriter struct {
	log        *slog.Logger
	name       string
	handshakes *peerrate.Limiter
}

func (w *errorLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	if rest, ok := strings.CutPrefix(msg, handshakePrefix); ok {
		addr, reason, _ := strings.Cut(rest, ": ")
		w.handshakes.Warn(w.log, peerOf(addr), w.name+": TLS handshake failed", "remote", addr, "err", reason)
		return len(p), nil
	}
	w.log.Warn(msg)
	return len(p), nil
}

// peerOf is the peer key of a request's RemoteAddr, as the listener
// policy counts connections: an IPv4 address, an IPv6 address's /64 (one
// host's customary share: rotating addresses inside it buys a guesser
// nothing).
func peerOf(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return connlimit.PeerKey(net.TCPAddrFromAddrPort(ap), 64)
}
