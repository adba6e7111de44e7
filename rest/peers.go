package rest

import (
	"log"
	"log/slog"
	"net"
	"strings"

	"github.com/vesta-go/vesta/internal/peerrate"
)

// handshakePrefix starts net/http's line for a failed TLS handshake,
// which it logs for every connection: "http: TLS handshake error from
// ADDR: REASON".
const handshakePrefix = "http: TLS handshake error from "

// errorLog is the http.Server's ErrorLog: its lines at Warn, except that
// a peer's failed TLS handshakes (a plaintext client on the TLS port
// fails on every connection) make one line a minute, as the central
// server's do.
func errorLog(lg *slog.Logger) *log.Logger {
	return log.New(&errorLogWriter{log: lg, handshakes: peerrate.NewLog()}, "", 0)
}

type errorLogWriter struct {
	log        *slog.Logger
	handshakes *peerrate.Limiter
}

func (w *errorLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	if rest, ok := strings.CutPrefix(msg, handshakePrefix); ok {
		addr, reason, _ := strings.Cut(rest, ": ")
		w.handshakes.Warn(w.log, peerOf(addr), "rest: TLS handshake failed", "remote", addr, "err", reason)
		return len(p), nil
	}
	w.log.Warn(msg)
	return len(p), nil
}

// peerOf is the peer key of a request's RemoteAddr: the IP address
// without the port, as connlimit counts connections.
func peerOf(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}
